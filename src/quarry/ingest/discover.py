"""Expand the paths a user gives (files and folders) into the files to parse.

A file named explicitly is always a candidate: if it is not a session log, parsing says so. Inside
a folder, names prove nothing either (formats are recognized from content), so a regular file is a
candidate when its first non-blank byte opens a JSON value, when it is a SQLite database, or when its
start is a Markdown transcript of a tool Quarry reads; other binaries, lock files and notes are
passed over without a read beyond their first bytes. Hidden entries below a folder are skipped, except
the ones agents keep their sessions in (`locations.PROJECT_ENTRIES`: a project's `.specstory/`, Aider's
`.aider.chat.history.md`, …), and symlinked folders are not followed (no cycles); special files (pipes,
devices, sockets) are never opened, and `read_regular` refuses one named explicitly. Everything passed
over is told, with why, so a report can name it. Files come out sorted, so runs are reproducible.
"""

from __future__ import annotations

import codecs
import errno
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISBLK, S_ISCHR, S_ISDIR, S_ISFIFO, S_ISREG, S_ISSOCK
from typing import BinaryIO

from quarry.ingest.detect import UNKNOWN, text_format
from quarry.ingest.locations import PROJECT_ENTRIES, look
from quarry.ingest.sources.sqlite_snapshot import is_sqlite

SNIFF_BYTES = 4096
_JSON_OPENERS = frozenset(b"{[")
_BLANK = frozenset(b" \t\r\n")
_BOM = b"\xef\xbb\xbf"
DATABASE, LOG = "database", "log"  # source_kind's answers
# SkippedFile codes (ingest.proto): why a file a folder holds was passed over
HIDDEN, SYMLINKED_FOLDER, EMPTY, BINARY = "hidden", "symlinked_folder", "empty", "binary"
NOT_A_SESSION_LOG, NOT_REGULAR = "not_a_session_log", "not_regular"


def standard_locations() -> list[Path]:
    """The places agents write their logs that exist on this machine, each once: every tool's folders
    and databases for this platform in `locations.TOOLS`, moved by each tool's environment overrides
    (CLAUDE_CONFIG_DIR, CODEX_HOME, XDG_DATA_HOME, GOOSE_PATH_ROOT, %APPDATA%, …) as the tool moves them."""
    return list(dict.fromkeys(path for place in look() for path in place.found))


def project_locations(project: Path) -> list[Path]:
    """The session files tools keep inside a project folder that exist in `project`: SpecStory's history
    (Cursor), Aider's chat history, Crush's and OpenCode (Go)'s databases (`locations.TOOLS`)."""
    places = look(project=project)
    return list(dict.fromkeys(path for place in places if place.in_project for path in place.found))


Skip = Callable[[Path, str, str], None]  # (path, SkippedFile code, reason): a file passed over on purpose


def iter_source_files(paths: Iterable[Path], skipped: Skip | None = None) -> Iterator[Path]:
    """Files to parse under `paths`, each once, folders expanded recursively and in sorted order. What a
    folder holds that is passed over (hidden entries, symlinked folders, special files, files that are
    no session log) is told to `skipped` with why, each once."""
    seen: set[Path] = set()
    tell = skipped or (lambda path, code, reason: None)
    for root in paths:
        root = Path(root)
        files = _walk(root, tell) if root.is_dir() else iter([root])
        for path in files:
            if path not in seen:
                seen.add(path)
                yield path


def _walk(root: Path, tell: Skip) -> Iterator[Path]:
    for folder, dirs, files in os.walk(root):
        kept = []
        for name in sorted(dirs):
            path = Path(folder, name)
            if name.startswith(".") and name not in PROJECT_ENTRIES:
                tell(path, HIDDEN, f"a hidden folder: skipped on purpose; name it to include it ({path})")
            elif path.is_symlink():
                tell(path, SYMLINKED_FOLDER, "a symlinked folder is not followed: name it to include it")
            else:
                kept.append(name)
        dirs[:] = kept
        for name in sorted(files):
            path = Path(folder, name)
            if name.startswith(".") and name not in PROJECT_ENTRIES:
                tell(path, HIDDEN, f"a hidden file: skipped on purpose; name it to include it ({path})")
                continue
            try:
                info = os.stat(path)
            except OSError as error:
                tell(path, NOT_REGULAR, f"cannot be looked at: {error.strerror or error}")
                continue
            if not S_ISREG(info.st_mode):
                tell(path, NOT_REGULAR, f"{special_kind(info.st_mode)}, not a regular file: never read")
                continue
            found = sniff(path)
            if found.kind:
                yield path
            else:
                tell(path, found.code, found.reason)


class NotRegularFile(OSError):
    """A path that names a pipe, a device, a socket or a folder where a file was expected."""


@contextmanager
def open_regular(path: Path) -> Iterator[BinaryIO]:
    """The file opened for reading without blocking and checked before a byte is read: a named pipe would
    hang the read and a device would never end it, so either raises NotRegularFile (other OSErrors as
    raised)."""
    with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), "rb") as handle:
        mode = os.fstat(handle.fileno()).st_mode
        if not S_ISREG(mode):
            raise NotRegularFile(errno.EINVAL, f"{special_kind(mode)}, not a regular file: never read", str(path))
        yield handle


def read_regular(path: Path) -> bytes:
    """The whole of a regular file (`open_regular`)."""
    with open_regular(path) as handle:
        return handle.read()


@dataclass(frozen=True, slots=True)
class Sniffed:
    """What a file's start says it is: `kind` DATABASE or LOG, else "" with why (a SkippedFile code)."""

    kind: str
    code: str = ""
    reason: str = ""


def source_kind(path: Path) -> str:
    """DATABASE (SQLite), LOG (a JSON object or array, a known Markdown transcript, or a file that cannot
    be read: parsing reports why), or "" (no session log)."""
    return sniff(path).kind


def sniff(path: Path) -> Sniffed:
    """The verdict of a regular file's first bytes (read without blocking on a special file)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError:
        return Sniffed(LOG)
    if is_sqlite(head):
        return Sniffed(DATABASE)
    head = head.removeprefix(_BOM)
    first = next((byte for byte in head if byte not in _BLANK), None)
    if first is None:
        return Sniffed("", EMPTY, "empty" if not head else "only whitespace")
    if first in _JSON_OPENERS or text_format(head.decode("utf-8", errors="ignore")) != UNKNOWN:
        return Sniffed(LOG)
    if _binary(head):
        return Sniffed("", BINARY, "binary, not text: no session log Quarry reads")
    return Sniffed(
        "", NOT_A_SESSION_LOG, "text that is no session log Quarry reads (not JSON, nor a transcript it knows)"
    )


def _binary(head: bytes) -> bool:
    """A NUL byte, or bytes that are no UTF-8 (a character cut at the end of the sniffed bytes excepted)."""
    if b"\0" in head:
        return True
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return True
    return False


def special_kind(mode: int) -> str:
    """What a file that is not a regular file is, in words."""
    for test, name in ((S_ISFIFO, "a named pipe (FIFO)"), (S_ISSOCK, "a socket"), (S_ISCHR, "a character device"),
                       (S_ISBLK, "a block device"), (S_ISDIR, "a folder")):  # fmt: skip
        if test(mode):
            return name
    return "a special file"
