"""A session of any size end to end: a 30 MB Claude Code log ingested until it is searchable, in both modes.

    python bench/large_sessions.py [--mb 30] [--runs 2] [--modes nats,direct] [--out FILE]

Writes synthetic Claude Code JSON Lines logs of one session each (`LargeLog`: tool calls with long
outputs of random words, worst case for compression, and a closing line naming a word no other session
holds), starts a local cluster per mode and, `--runs` times with a new session each, times IngestPaths
of the file with ack `applied` (parse, then in nats mode the payload into the object store and the record
into the log, then every replica's apply; in direct mode the push to the partition's node), then a
search for the session's word through the query node. Then it times some of those steps alone: parsing
the log, making its record (serialize, zstd) and, on the log, storing the held payload in the object
store and reading it back verified (what each replica does before applying it). Modes:
- `direct`: the embedded default, 2 index nodes, no embedder;
- `nats`: 3 NATS servers (the log and the payload bucket on all three, `sync_interval: always`), 2 index
  nodes holding 4 partitions twice each, no embedder.
Prints a table (tab-separated) and writes every figure to `--out` (default
bench/results/large-sessions.json).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from quarry.cli.local import LocalCluster  # noqa: E402
from quarry.client.client import QuarryClient  # noqa: E402
from quarry.cluster.log_records import Outgoing, decode, session_record  # noqa: E402
from quarry.cluster.loop import connect  # noqa: E402
from quarry.cluster.nats_permissions import INGEST  # noqa: E402
from quarry.cluster.payloads import remove_unreferenced, resolve, store  # noqa: E402
from quarry.core.routing import partition_for  # noqa: E402
from quarry.ingest.parse import parse_file  # noqa: E402

MB = 1024 * 1024
PARTITIONS = 4
OUTPUT_LINES = 200  # lines of one tool output (about 14 KB)
WORDS_PER_LINE = 12
VOCABULARY = 20_000
# Letters of the vocabulary; a marker word uses others, so no generated word can be one.
_CONSONANTS, _VOWELS = "bdfgklmnprstv", "aeiou"
_BASE_MS = 1_767_225_600_000  # 2026-01-01, the first record's time


class LargeLog:
    """A Claude Code session log of one session, grown in steps: each step appends tool calls whose outputs
    are long runs of random words, then an assistant line naming a marker word. Every line is one event of
    the session, and a grown log continues the previous one exactly (a longer copy of the same session)."""

    def __init__(self, path: Path, native_id: str, seed: int = 7) -> None:
        self.path = path
        self.native_id = native_id
        self.lines = 0
        self._rng = random.Random(seed)
        self._words = [self._word() for _ in range(VOCABULARY)]
        self._parent: str | None = None
        self._turn = 0
        path.write_bytes(b"")

    @property
    def session_id(self) -> str:
        return f"claude-code-session:{self.native_id}"

    def grow(self, add_bytes: int, marker: str) -> None:
        """Append about `add_bytes` of tool calls and outputs, then a line whose text holds `marker`."""
        with self.path.open("a", encoding="utf-8") as out:
            if self.lines == 0:
                out.write(self._line("user", {"role": "user", "content": "Run every test suite and show the output"}))
            written = 0
            while written < add_bytes:
                self._turn += 1
                tool = f"toolu_{self.native_id}_{self._turn}"
                call = {
                    "type": "tool_use",
                    "id": tool,
                    "name": "Bash",
                    "input": {"command": f"pytest -q suite{self._turn}"},
                }
                output = "\n".join(
                    " ".join(self._rng.choice(self._words) for _ in range(WORDS_PER_LINE)) for _ in range(OUTPUT_LINES)
                )
                result = {"type": "tool_result", "tool_use_id": tool, "content": output}
                lines = self._line("assistant", self._assistant([call])) + self._line(
                    "user", {"role": "user", "content": [result]}
                )
                out.write(lines)
                written += len(lines)
            text = {"type": "text", "text": f"Every suite ran; the summary is under {marker}."}
            out.write(self._line("assistant", self._assistant([text])))

    def _assistant(self, content: list[dict[str, object]]) -> dict[str, object]:
        return {
            "model": "claude-opus-4-5",
            "id": f"msg_{self.native_id}_{self.lines}",
            "type": "message",
            "role": "assistant",
            "content": content,
            "usage": {"input_tokens": 8, "output_tokens": 20},
        }

    def _line(self, kind: str, message: dict[str, object]) -> str:
        uid = f"{self.native_id}-{self.lines}"
        record = {
            "parentUuid": self._parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/home/dev/large",
            "sessionId": self.native_id,
            "version": "2.0.76",
            "gitBranch": "main",
            "type": kind,
            "message": message,
            "uuid": uid,
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime((_BASE_MS + self.lines * 1000) / 1000)),
        }
        self._parent = uid
        self.lines += 1
        return json.dumps(record) + "\n"

    def _word(self) -> str:
        return "".join(
            self._rng.choice(_CONSONANTS) + self._rng.choice(_VOWELS) for _ in range(self._rng.randint(2, 4))
        )


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def start(mode: str, home: Path, logs: Path) -> LocalCluster:
    if mode == "direct":
        cluster = LocalCluster(home, partitions=2, embedder="none", ingest_roots=[logs])
    else:
        cluster = LocalCluster(
            home,
            embedder="none",
            log="nats",
            index_nodes=2,
            replicas=2,
            partitions=PARTITIONS,
            nats_servers=3,
            ingest_roots=[logs],
        )
    cluster.start()
    return cluster


def measure(mode: str, mb: int, runs: int, workdir: Path) -> list[dict[str, object]]:
    cluster = start(mode, workdir / f"home-{mode}", workdir)
    figures = []
    try:
        info = cluster.info()
        with QuarryClient(info.query, info.ingest) as client:
            for run in range(runs):
                marker = f"xyzzy{'qwjhc'[run % 5]}marker{'xq' * (run + 1)}"
                large = LargeLog(workdir / f"{mode}-{run}.jsonl", f"large-{run}", seed=run)
                large.grow(mb * MB, marker)
                source = large.path.stat().st_size
                started = time.perf_counter()
                report = list(client.ingest_paths([large.path]))[-1].report
                ingested = time.perf_counter() - started
                hits = [h.session.id for h in client.search(marker).hits]
                searchable = time.perf_counter() - started
                assert report.sessions_written == 1 and report.searchable, report
                assert hits == [large.session_id], hits
                figure: dict[str, object] = {
                    "mode": mode,
                    "run": run,
                    "source_bytes": source,
                    "events": large.lines,
                    "ingest_s": round(ingested, 2),
                    "searchable_s": round(searchable, 2),
                    "source_mb_per_s": round(source / MB / searchable, 2),
                    **steps(cluster, large, mode),
                }
                figures.append(figure)
                log(f"{mode} run {run}: searchable after {searchable:.1f} s ({source / MB / searchable:.2f} MB/s)")
    finally:
        cluster.stop()
    return figures


def steps(cluster: LocalCluster, large: LargeLog, mode: str) -> dict[str, object]:
    """Some of the ingest's steps again, one by one, on this machine: parsing the log, making its record
    (serialize, compress) and, on the log, storing the held payload and reading it back verified (what
    the ingest node and each replica do with it)."""
    started = time.perf_counter()
    session = parse_file(large.path).sessions[0]
    parsed = time.perf_counter()
    record = session_record(partition_for(session.id, PARTITIONS), session)
    made = time.perf_counter()
    figures: dict[str, object] = {
        "session_bytes": session.ByteSize(),
        "record_payload_bytes": record.size,
        "parse_s": round(parsed - started, 2),
        "record_s": round(made - parsed, 2),
    }
    if mode == "nats":
        stored, read = asyncio.run(_held_path(cluster, record))
        figures.update(store_payload_s=round(stored, 2), read_payload_s=round(read, 2))
    return figures


async def _held_path(cluster: LocalCluster, record: Outgoing) -> tuple[float, float]:
    """Seconds to store the record's held payload and to read it back, verified and decompressed. No record
    names this object (the node's version has its scope), so it is removed after, as the sweep would."""
    nc = await connect(list(cluster.nats_urls), "quarry-bench", cluster.nats_access(INGEST))
    try:
        js = nc.jetstream()
        started = time.perf_counter()
        await store(js, record)
        stored = time.perf_counter()
        resolved = await resolve(js, decode(record.subject, 0, record.headers, record.payload))
        read = time.perf_counter()
        assert resolved.payload and resolved.held is None
        assert record.held is not None and await remove_unreferenced(js, [record.held.name]) == [record.held.name]
        return stored - started, read - stored
    finally:
        await nc.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=30)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--modes", default="nats,direct")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "large-sessions.json")
    args = parser.parse_args()
    figures = []
    with tempfile.TemporaryDirectory(prefix="quarry-large-") as tmp:
        for mode in args.modes.split(","):
            figures += measure(mode, args.mb, args.runs, Path(tmp))
    keys = list(dict.fromkeys(k for f in figures for k in f))
    print("\t".join(keys))
    for figure in figures:
        print("\t".join(str(figure.get(k, "")) for k in keys))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"command": " ".join(sys.argv), "machine": platform.platform(), "runs": figures}, indent=2) + "\n"
    )


if __name__ == "__main__":
    main()
