"""Which files under the followed paths changed since the last look (`IngestPaths(follow=True)`).

Polling, not inotify: a stat of every candidate file each round works on every filesystem the
ingest node may read (bind mounts, network shares, a container's view of the host) and needs no
watch limits. A file is due when its size or mtime differs from the previous round; what changed
inside it is `tracking.examine`'s question. The candidates are the files `discover` would list,
with the same rules, but a file's first bytes are sniffed once (again only when a file that did not
look like a session log changed size), so a round costs one stat per file (two for a database: its
commits land in its write-ahead log first). The interval stretches so the
scan never takes more than a fifth of a core.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from stat import S_ISREG

from quarry.ingest.discover import DATABASE, source_kind
from quarry.ingest.tracking import changed_ns

POLL_S = 0.3
SCAN_SHARE = 0.2  # the largest share of one core the scan may take


class Watcher:
    def __init__(self, roots: list[Path]) -> None:
        self.roots = roots
        self.interval = POLL_S
        self._seen: dict[Path, tuple[int, int]] = {}
        self._sniffed: dict[Path, tuple[int, str]] = {}  # size when sniffed, discover.source_kind

    def due(self) -> list[Path]:
        """Files that appeared or whose size or mtime moved since the last call (all, the first time)."""
        started = time.perf_counter()
        current = self._scan()
        due = [path for path, key in current.items() if self._seen.get(path) != key]
        self._seen = current
        self.interval = max(POLL_S, (time.perf_counter() - started) / SCAN_SHARE)
        return due

    def _scan(self) -> dict[Path, tuple[int, int]]:
        found: dict[Path, tuple[int, int]] = {}
        sniffed, self._sniffed = self._sniffed, {}  # keeps the verdicts of files that still exist
        for root in self.roots:
            if root.is_dir():
                self._walk(root, found, sniffed)
            elif (info := _stat(root)) is not None:
                found.setdefault(root, (info.st_size, changed_ns(root, info)))  # named explicitly: always a candidate
        return found

    def _walk(self, root: Path, found: dict[Path, tuple[int, int]], sniffed: dict[Path, tuple[int, str]]) -> None:
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(name for name in dirs if not name.startswith("."))
            for name in sorted(files):
                path = Path(folder, name)
                if name.startswith(".") or path in found:
                    continue
                info = _stat(path)
                if info is None or not S_ISREG(info.st_mode):
                    continue
                kind = self._kind(path, info, sniffed)
                if kind:
                    found[path] = (info.st_size, changed_ns(path, info) if kind == DATABASE else info.st_mtime_ns)

    def _kind(self, path: Path, info: os.stat_result, sniffed: dict[Path, tuple[int, str]]) -> str:
        verdict = sniffed.get(path)
        if verdict is None or (not verdict[1] and verdict[0] != info.st_size):
            verdict = (info.st_size, source_kind(path))
        self._sniffed[path] = verdict
        return verdict[1]


def _stat(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None
