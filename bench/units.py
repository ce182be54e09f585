"""Unit queries through the query node (2 partitions) next to the same question as SQL over ONE SQLite
database holding the same rows (the partition's own schema, every session in one store).

    python bench/units.py --messages 100000 [--repeat 20]

Representative queries (issue 4): filtered rows sorted by time, `exists`, `seq`, and `group by |
count`; and past the peer's language (issue 14): `agg` functions per group, a projection (each session hit with its
first rows of a unit) and literal text (`contains:`). Each is timed through `QueryService` (QueryUnits
for rows and groups, Search for session selectors) and as the hand-written SQL a single database would
run, in the same run; both sides return the same answer (checked). `contains:` has no SQL twin (the
text is stored packed), so it is timed alone: with inner words the index narrows the messages checked,
with two words or fewer every message is. Latency p50 / p95 over `--repeat` runs after a warm-up.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from quarry.cli.local import LocalCluster  # noqa: E402
from quarry.cli.synthetic import generate_sessions  # noqa: E402
from quarry.client.client import QuarryClient  # noqa: E402
from quarry.index.lexical.partition import LexicalPartition  # noqa: E402

BATCH = 500
REPO_NAME = "billing-api"

# (name, Quarry query, kind, SQL over one store, how to compare the answers)
QUERIES = [
    (
        "rows: assistant messages, >= 200 output tokens, newest 50",
        "messages where role:assistant AND output_tokens >= 200 | sort by time desc | limit 50",
        "units",
        "SELECT id FROM messages WHERE role = 'assistant' AND output_tokens >= 200 ORDER BY time_ms DESC, id LIMIT 50",
    ),
    (
        f"exists: {REPO_NAME} sessions that ran pytest",
        f"sessions where repo:{REPO_NAME} AND exists action(tool:bash AND text:pytest)",
        "sessions",
        f"SELECT s.id FROM sessions s WHERE s.repo = '{REPO_NAME}' AND EXISTS (SELECT 1 FROM actions a "
        "WHERE a.session_ord = s.ord AND a.tool = 'bash' AND (instr(lower(a.command), 'pytest') > 0 "
        "OR instr(lower(a.output), 'pytest') > 0 OR instr(lower(a.input_json), 'pytest') > 0))",
    ),
    (
        f"seq: {REPO_NAME} sessions with an edit, later a shell command",
        f"sessions where repo:{REPO_NAME} AND seq(action:file_edit -> action:shell)",
        "sessions",
        f"SELECT s.id FROM sessions s WHERE s.repo = '{REPO_NAME}' AND EXISTS (SELECT 1 FROM actions e "
        "JOIN actions r ON r.session_ord = e.session_ord AND r.seq > e.seq "
        "WHERE e.session_ord = s.ord AND e.category = 'file_edit' AND r.category = 'shell')",
    ),
    (
        "group by: actions per tool",
        "actions where action:shell OR action:file_edit OR action:file_read | group by tool | count",
        "groups",
        "SELECT tool, COUNT(*) FROM actions WHERE category IN ('shell', 'file_edit', 'file_read') "
        "GROUP BY tool ORDER BY COUNT(*) DESC, tool",
    ),
    (
        "agg: assistant messages per repo, count/sum/avg/max",
        "messages where role:assistant | group by session.repo | agg count, sum:output_tokens, avg:output_tokens, "
        "max:duration_ms",
        "agg",
        "SELECT lower(s.repo), COUNT(*), SUM(m.output_tokens), AVG(m.output_tokens), MAX(m.duration_ms) "
        "FROM messages m JOIN sessions s ON s.ord = m.session_ord WHERE m.role = 'assistant' "
        "GROUP BY 1 ORDER BY 2 DESC, 1",
    ),
    (
        f"projection: {REPO_NAME}'s 20 newest, first 5 actions each",
        f"repo:{REPO_NAME} with actions(tool, failed)[first:5]",
        "projection",
        "WITH newest AS (SELECT ord, id, updated_ms FROM sessions WHERE repo = '"
        + REPO_NAME
        + "' ORDER BY updated_ms DESC, id LIMIT 20), ranked AS (SELECT n.id AS sid, a.tool, a.failed, "
        "ROW_NUMBER() OVER (PARTITION BY a.session_ord ORDER BY a.time_ms, a.id) AS k "
        "FROM newest n JOIN actions a ON a.session_ord = n.ord) "
        "SELECT sid, tool, failed FROM ranked WHERE k <= 5 ORDER BY sid, k",
    ),
    ("contains: two words (every message checked)", 'contains:"read replica"', "sessions", None),
    ("contains: four words (the index narrows)", 'contains:"[errno 104] connection reset"', "sessions", None),
]


def timed(run: Callable[[], object], repeat: int) -> tuple[object, list[float]]:
    answer = run()
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        samples.append((time.perf_counter() - started) * 1000)
    return answer, samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    sessions = list(generate_sessions(args.messages, seed=args.seed))
    with tempfile.TemporaryDirectory(prefix="quarry-units-") as tmp:
        single = LexicalPartition(Path(tmp) / "single", 0)
        for start in range(0, len(sessions), BATCH):
            single.upsert(sessions[start : start + BATCH])
        single.close()
        db = sqlite3.connect(Path(tmp) / "single" / "store.sqlite3")
        cluster = LocalCluster(Path(tmp) / "home", partitions=2, embedder="none")
        cluster.start()
        try:
            with QuarryClient.for_home(Path(tmp) / "home") as client:
                client.ingest_sessions(sessions)
                print(f"{args.messages:,} messages in {len(sessions):,} sessions; {args.repeat} runs each, ms")
                print(f"{'query':<58} {'Quarry p50 / p95':>18} {'SQL p50 / p95':>16} {'rows':>6}")
                for name, query, kind, sql in QUERIES:
                    if kind == "units":
                        quarry, q_ms = timed(
                            lambda q=query: [r.ref.split(":", 1)[1] for r in client.query_units(q, limit=1000).rows],
                            args.repeat,
                        )
                    elif kind == "groups":
                        quarry, q_ms = timed(
                            lambda q=query: [(g.key, g.count) for g in client.query_units(q).groups], args.repeat
                        )
                    elif kind == "agg":
                        quarry, q_ms = timed(lambda q=query: _aggregates(client.query_units(q)), args.repeat)
                    elif kind == "projection":
                        quarry, q_ms = timed(lambda q=query: _projected(client.search(q, limit=20)), args.repeat)
                    else:
                        quarry, q_ms = timed(
                            lambda q=query: sorted(h.session.id for h in client.search(q, limit=1000).hits), args.repeat
                        )
                    quarry_cell = f"{np.percentile(q_ms, 50):7.2f} / {np.percentile(q_ms, 95):7.2f}"
                    if sql is None:
                        print(f"{name:<58} {quarry_cell} {'(none)':>16} {len(quarry):>6}")  # type: ignore[arg-type]
                        continue
                    direct, s_ms = timed(lambda s=sql: db.execute(s).fetchall(), args.repeat)
                    expected = _expected(kind, direct)
                    same = "same" if quarry == expected else "DIFFERENT"
                    print(
                        f"{name:<58} {quarry_cell} "
                        f"{np.percentile(s_ms, 50):7.2f} / {np.percentile(s_ms, 95):7.2f} {len(expected):>6} {same}"
                    )
        finally:
            cluster.stop()
            db.close()
    return 0


def _aggregates(envelope: object) -> list[tuple[object, ...]]:
    """(key, count, sum, avg, max) per group, numbers rounded for the comparison with SQL."""
    return [
        (g.key, g.count, *(round(v.value, 6) for v in g.values[1:]))  # type: ignore[attr-defined]
        for g in envelope.groups  # type: ignore[attr-defined]
    ]


def _projected(envelope: object) -> list[tuple[object, ...]]:
    """(session id, tool, failed) of every projected row, by session then row order."""
    rows = []
    for hit in sorted(envelope.hits, key=lambda h: h.session.id):  # type: ignore[attr-defined]
        for row in hit.projections[0].rows:
            rows.append((hit.session.id, row["tool"], int(row["failed"])))
    return rows


def _expected(kind: str, direct: list[tuple[object, ...]]) -> list[object]:
    if kind == "agg":
        return [(r[0], r[1], *(round(float(v), 6) for v in r[2:])) for r in direct]
    if kind == "projection":
        return [(sid, tool, int(failed)) for sid, tool, failed in direct]
    if kind == "groups":
        return [tuple(r) for r in direct]
    answer = [r[0] for r in direct]
    return sorted(answer) if kind == "sessions" else answer


if __name__ == "__main__":
    raise SystemExit(main())
