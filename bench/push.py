"""`quarry push` beside `quarry ingest` on the same corpus, in one run; then the cost of re-pushing an
unchanged tree.

Throughput: a synthetic archive of Claude Code session files (src/quarry/cli/synthetic/, the one
bench/run.py uses) goes into a fresh 2-partition embedded cluster, once with `quarry ingest` (the ingest
node reads and parses the files: IngestPaths) and once with `quarry push` (the CLI parses them and
streams the sessions: IngestSessions), each run through the CLI as a user runs it, to the same
acknowledgement (durably committed, searchable). Rounds alternate which goes first, on a shared 2-core
machine; the ratio is push ÷ ingest messages/s of the medians (target ≥ 0.8). CPU seconds of the CLI and of
the cluster's nodes are shown beside, since push moves the parsing from the ingest node to the laptop.

Re-push: a tree of TREE_FILES small session files, pushed once, then pushed again unchanged: the wall
time of that second `quarry push` (CLI start included; target ≤ 2 s), which must send nothing.

    .venv/bin/python bench/push.py --messages 100000 --rounds 2 --tree-files 10000
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.run import log, process_cpu_s  # noqa: E402
from quarry.cli.local import LocalCluster  # noqa: E402
from quarry.cli.synthetic import generate_sessions, write_claude_code_archive  # noqa: E402
from tests.cluster.corpus import write_session  # noqa: E402

TARGETS = {"push_ingest_ratio_min": 0.8, "repush_unchanged_s_max": 2.0}


def cli(home: Path, state: Path, *args: str) -> tuple[dict[str, object], float, float]:
    """Run `quarry --home HOME --format json ARGS` to its end: (its JSON answer, wall s, its CPU s)."""
    env = {**os.environ, "XDG_STATE_HOME": str(state)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "quarry.cli", "--home", str(home), "--format", "json", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=3600,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"quarry {' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return orjson.loads(done.stdout), wall, cpu


def one_run(mode: str, archive: Path, messages: int, workdir: Path, label: str) -> dict[str, object]:
    """Load the archive into a fresh cluster with `quarry ingest` or `quarry push`."""
    home = workdir / f"cluster-{label}"
    cluster = LocalCluster(home, partitions=2, embedder="none", ingest_roots=[workdir])
    cluster.start()
    try:
        nodes_before = {name: process_cpu_s(pid) for name, pid in cluster.pids.items()}
        report, wall, client_cpu = cli(home, workdir / f"state-{label}", mode, str(archive))
        nodes_cpu = sum(process_cpu_s(pid) - nodes_before[name] for name, pid in cluster.pids.items())
    finally:
        cluster.stop()
    written = int(report.get("messages_written", 0))
    if written != messages:
        raise RuntimeError(f"{mode} wrote {written} messages of {messages}: {report}")
    return {
        "mode": mode,
        "wall_s": round(wall, 3),
        "messages_per_s": round(messages / wall, 1),
        "client_cpu_s": round(client_cpu, 2),
        "nodes_cpu_s": round(nodes_cpu, 2),
        "sessions_written": report.get("sessions_written", 0),
    }


def write_tree(folder: Path, files: int) -> None:
    """`files` small session files in folders of 100, as an agent's projects folder looks."""
    for n in range(files):
        project = folder / f"project-{n // 100:03d}"
        project.mkdir(parents=True, exist_ok=True)
        write_session(project, f"tree/{n}", "tree", [("user", f"question {n}"), ("assistant", f"answer {n}")])


def repush(workdir: Path, files: int, repeats: int) -> dict[str, object]:
    tree = workdir / "tree"
    write_tree(tree, files)
    home = workdir / "cluster-tree"
    cluster = LocalCluster(home, partitions=2, embedder="none", ingest_roots=[])
    cluster.start()
    try:
        state = workdir / "state-tree"
        first, first_wall, _ = cli(home, state, "push", str(tree))
        log(f"tree: first push of {files} files in {first_wall:.1f} s ({first.get('sessionsWritten')} sessions)")
        walls = []
        for _ in range(repeats):
            again, wall, _ = cli(home, state, "push", str(tree))
            if again.get("sessionsReceived", 0) or again.get("filesUnchanged") != files:
                raise RuntimeError(f"the unchanged re-push sent something: {again}")
            walls.append(wall)
    finally:
        cluster.stop()
    return {
        "files": files,
        "first_push_s": round(first_wall, 2),
        "repush_s": [round(w, 3) for w in walls],
        "repush_median_s": round(statistics.median(walls), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tree-files", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="quarry-push-bench-") as tmp:
        workdir = Path(tmp)
        archive = workdir / "archive"
        log(f"writing {args.messages} messages as Claude Code session files")
        write_claude_code_archive(generate_sessions(args.messages, seed=args.seed), archive)
        runs: list[dict[str, object]] = []
        for round_ in range(args.rounds):
            order = ("ingest", "push") if round_ % 2 == 0 else ("push", "ingest")
            for mode in order:
                result = one_run(mode, archive, args.messages, workdir, f"{mode}-{round_}")
                log(f"round {round_ + 1}: {mode}: {result['messages_per_s']} messages/s ({result['wall_s']} s)")
                runs.append(result)
        tree = repush(workdir, args.tree_files, args.repeats)
    rate = {
        mode: statistics.median(float(str(r["messages_per_s"])) for r in runs if r["mode"] == mode)
        for mode in ("ingest", "push")
    }
    ratio = rate["push"] / rate["ingest"]
    result = {
        "messages": args.messages,
        "runs": runs,
        "median_messages_per_s": rate,
        "push_ingest_ratio": round(ratio, 3),
        "tree": tree,
        "targets": TARGETS,
        "met": {
            "push_ingest_ratio": ratio >= TARGETS["push_ingest_ratio_min"],
            "repush_unchanged": float(str(tree["repush_median_s"])) <= TARGETS["repush_unchanged_s_max"],
        },
    }
    print(f"| | messages/s (median of {args.rounds}) | client CPU s | nodes CPU s |")
    print("| --- | ---: | ---: | ---: |")
    for mode in ("ingest", "push"):
        mine = [r for r in runs if r["mode"] == mode]
        client = statistics.median(float(str(r["client_cpu_s"])) for r in mine)
        nodes = statistics.median(float(str(r["nodes_cpu_s"])) for r in mine)
        print(f"| quarry {mode} | {rate[mode]:,.0f} | {client:.1f} | {nodes:.1f} |")
    print(f"push ÷ ingest: {ratio:.2f}x (target ≥ {TARGETS['push_ingest_ratio_min']})")
    print(
        f"re-push of an unchanged tree of {tree['files']} files: {tree['repush_median_s']} s "
        f"(target ≤ {TARGETS['repush_unchanged_s_max']} s; runs {tree['repush_s']})"
    )
    out = args.out or REPO / "bench" / "results" / f"push-{args.messages}.json"
    out.write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2))
    log(f"wrote {out}")


if __name__ == "__main__":
    main()
