"""How long the `quarry` command takes to start and answer (issue 13): `quarry search sqlite` against a
warm local cluster and `quarry --help`, each run as a subprocess (wall clock, the interpreter's start
and every import included), after an untimed warm-up run; the median and p90 against the targets. Each
round times every command, the floor of any Python client of the same search and a bare interpreter,
in a rotating order, so that what the CLI adds to the floor is read round by round, at one speed of a
machine whose speed swings.

    python bench/cli_start.py [--runs 10] [--imports] [--baseline DIR] [--out FILE]

Starts its own cluster (`quarry up --detach --embedder none`, 2 index partitions) under a temporary home,
ingests the small archive of tests/cluster/corpus.py, and stops the cluster at the end. With --imports
it also reports the slowest top-level imports of each command (`python -X importtime`).

--baseline DIR times a second source tree too, the same commands against the same cluster, the two
alternating run by run so that both see the same machine (made with `git worktree add --detach DIR
<commit>`; its packages are put first on PYTHONPATH through a tree of links that follows
pyproject.toml's package-dir), and --baseline-packages DIR the dependency versions it had, before the
environment's (`pip install --no-deps --target DIR typer==0.29.2`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # `python bench/cli_start.py` puts bench/ on the path, not the repository root

from tests.cluster.corpus import write_corpus  # noqa: E402

TARGETS_S = {"search": 0.25, "help": 0.2}
# The floor of any Python client of the same search: the interpreter, grpc and the generated stubs,
# one channel and one Search call, nothing printed (no argument parsing, configuration or rendering).
FLOOR_CLIENT = (
    "import sys, grpc\n"
    "from quarry.v1 import query_pb2, query_pb2_grpc\n"
    "with grpc.insecure_channel(sys.argv[1]) as channel:\n"
    "    query_pb2_grpc.QueryServiceStub(channel).Search(query_pb2.SearchRequest(query='sqlite'), timeout=10)\n"
)


def cli_env() -> dict[str, str]:
    """The environment the timed commands run in: this one without Quarry's settings, and with Python
    free to write bytecode. A user's `quarry` runs from bytecode (pip compiles it at install, an
    editable install writes it on the first import); an environment that forbids writing it
    (PYTHONDONTWRITEBYTECODE, set on some CI and sandbox machines) would time a recompile of every
    module changed since bytecode was last written, on every run."""
    return {k: v for k, v in os.environ.items() if not k.startswith("QUARRY_") and k != "PYTHONDONTWRITEBYTECODE"}


def timed_run(argv: list[str], env: dict[str, str], cpu: list[float] | None = None) -> float:
    """The wall time of one run; its CPU time (user + system, the process and its children) goes to
    `cpu`: on a loaded machine the wall time waits for a core, the CPU time much less."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    if cpu is not None:
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return elapsed


def _baseline_path(tree: Path, links: Path) -> str:
    """A directory holding `quarry/<package>` links into `tree`, per pyproject.toml's package-dir."""
    mapping = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    for package, folder in mapping.items():
        link = links.joinpath(*package.split("."))
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(tree / folder)
    return str(links)


def _summary(walls: list[float], cpu: list[float], target: float) -> dict[str, object]:
    median = statistics.median(walls)
    return {
        "runs_s": [round(w, 4) for w in walls],
        "cpu_median_s": round(statistics.median(cpu), 4),
        "median_s": round(median, 4),
        "p90_s": round(_percentile(walls, 0.9), 4),
        "min_s": round(min(walls), 4),
        "target_s": target,
        "median_over_target": round(median / target, 2),
    }


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))]


def _import_profile(python: str, args: list[str], env: dict[str, str], top: int = 12) -> dict[str, object]:
    """The total import time of one run and its slowest top-level imports (cumulative, ms)."""
    done = subprocess.run(
        [python, "-X", "importtime", "-m", "quarry.cli", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    rows = []
    for line in done.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if m:
            rows.append((int(m.group(2)), len(m.group(3)), m.group(4)))
    top_level = [(cumulative, name) for cumulative, depth, name in rows if depth == 1]
    slowest = sorted(top_level, reverse=True)[:top]
    return {
        "total_ms": round(sum(c for c, _ in top_level) / 1000, 1),
        "modules": len(rows),
        "slowest_ms": {name: round(c / 1000, 1) for c, name in slowest},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--quarry", default=str(REPO / ".venv" / "bin" / "quarry"), help="the quarry command to time")
    parser.add_argument("--label", default="", help="a name for this run, kept in the JSON (e.g. before, after)")
    parser.add_argument("--imports", action="store_true", help="also profile each command's imports")
    parser.add_argument("--baseline", type=Path, help="a checkout of another commit to time alongside")
    parser.add_argument(
        "--baseline-packages",
        type=Path,
        help="a directory of packages the baseline imports first (`pip install --target DIR` of the "
        "dependency versions it pinned, e.g. an older Typer)",
    )
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "cli-start.json")
    args = parser.parse_args(argv)

    quarry = args.quarry
    python = str(Path(quarry).parent / "python")
    home = Path(tempfile.mkdtemp(prefix="quarry-cli-start-"))
    env = cli_env()
    env["QUARRY_HOME"] = str(home / "home")
    commands = {"search": [quarry, "search", "sqlite"], "help": [quarry, "--help"]}
    results: dict[str, object] = {}
    try:
        up = [quarry, "up", "--detach", "--embedder", "none"]
        subprocess.run(up, env=env, check=True, stdout=subprocess.DEVNULL)
        write_corpus(home / "corpus")
        subprocess.run([quarry, "ingest", str(home / "corpus")], env=env, check=True, stdout=subprocess.DEVNULL)
        hits = subprocess.run([quarry, "-f", "json", "search", "sqlite"], env=env, check=True, capture_output=True)
        if b'"hits"' not in hits.stdout or b"session:" not in hits.stdout:
            raise SystemExit(f"`quarry search sqlite` found nothing:\n{hits.stdout[:2000]!r}")
        variants = {"current": env}
        if args.baseline:
            base_env = dict(env)
            pythonpath = _baseline_path(args.baseline.resolve(), home / "baseline")
            packages = str(args.baseline_packages.resolve()) if args.baseline_packages else None
            base_env["PYTHONPATH"] = os.pathsep.join(p for p in (pythonpath, packages, env.get("PYTHONPATH")) if p)
            variants["baseline"] = base_env
        query_address = json.loads((home / "home" / "cluster.json").read_text())["query"]
        # Every command, the floor and a bare interpreter run in each round, in a rotating order: the
        # machine's speed swings from one minute to the next, and a round sees them all at one speed.
        timed = {
            **{
                (name, variant): (command, variants[variant])
                for name, command in commands.items()
                for variant in variants
            },
            ("floor", "current"): ([python, "-c", FLOOR_CLIENT, query_address], env),
            ("bare", "current"): ([python, "-c", "pass"], env),
        }
        walls: dict[tuple[str, str], list[float]] = {key: [] for key in timed}
        cpu: dict[tuple[str, str], list[float]] = {key: [] for key in timed}
        for argv, variant_env in timed.values():
            timed_run(argv, variant_env)  # warm-up: the OS file cache, bytecode, the cluster's own caches
        keys = list(timed)
        for i in range(args.runs):
            for key in keys[i % len(keys) :] + keys[: i % len(keys)]:
                walls[key].append(timed_run(*timed[key], cpu[key]))
        for name, command in commands.items():
            results[name] = {
                "command": " ".join(["quarry", *command[1:]]),
                **_summary(walls[(name, "current")], cpu[(name, "current")], TARGETS_S[name]),
            }
            if args.baseline:
                results[name]["baseline"] = _summary(
                    walls[(name, "baseline")], cpu[(name, "baseline")], TARGETS_S[name]
                )
                results[name]["current_over_baseline"] = round(
                    results[name]["median_s"] / results[name]["baseline"]["median_s"], 2
                )
            if args.imports:
                results[name]["imports"] = _import_profile(python, command[1:], env)
                if args.baseline:
                    results[name]["baseline"]["imports"] = _import_profile(python, command[1:], variants["baseline"])
        results["load_average_after"] = os.getloadavg()
        results["bare_python_median_s"] = round(statistics.median(walls[("bare", "current")]), 4)
        results["grpc_client_floor_median_s"] = round(statistics.median(walls[("floor", "current")]), 4)
        # what `quarry search` adds to the floor, round by round (the same machine speed)
        added = [q - f for q, f in zip(walls[("search", "current")], walls[("floor", "current")], strict=True)]
        results["search_over_floor_median_s"] = round(statistics.median(added), 4)
    finally:
        subprocess.run([quarry, "down"], env=env, stdout=subprocess.DEVNULL, check=False)
        shutil.rmtree(home, ignore_errors=True)

    header = f"{'command':<22} {'tree':<9} {'median':>8} {'p90':>8} {'min':>8} {'cpu':>8} {'target':>7}"
    print(f"{header} {'median/target':>14}")
    for name in commands:
        for tree in ("baseline", "current"):
            r = results[name] if tree == "current" else results[name].get("baseline")
            if r is None:
                continue
            print(
                f"{results[name]['command']:<22} {tree:<9} {r['median_s']:>7.3f}s {r['p90_s']:>7.3f}s "
                f"{r['min_s']:>7.3f}s {r['cpu_median_s']:>7.3f}s {r['target_s']:>6.2f}s "
                f"{r['median_over_target']:>14.2f}"
            )
            if args.imports:
                imports = r["imports"]
                print(f"  imports: {imports['total_ms']} ms, {imports['modules']} modules; slowest top-level:")
                for module, ms in imports["slowest_ms"].items():
                    print(f"    {ms:>7.1f} ms  {module}")
        if "current_over_baseline" in results[name]:
            print(f"  current / baseline (medians): {results[name]['current_over_baseline']:.2f}")
    print(f"bare `python -c pass`: {results['bare_python_median_s']:.3f}s")
    floor = results["grpc_client_floor_median_s"]
    print(
        f"floor, a bare Python gRPC client of the same search: {floor:.3f}s "
        f"({floor / TARGETS_S['search']:.2f} of the search target; `quarry search` adds "
        f"{results['search_over_floor_median_s']:.3f}s to it, the median of each round's difference)"
    )
    document = {
        "label": args.label,
        "baseline": str(args.baseline) if args.baseline else None,
        "runs": args.runs,
        "results": results,
        "python": platform.python_version(),
        "load_average": os.getloadavg(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": " ".join([sys.executable, *sys.argv]),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
