"""`quarry demo` (the second half of `make run`): ingest what this machine has, then query it."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console

from quarry.cli import render
from quarry.cli.lines import RichLines
from quarry.client.client import QuarryClient
from quarry.core.config import ClusterInfo
from quarry.core.errors import QuarryError
from quarry.ingest.discover import iter_source_files, standard_locations

VECTOR_WAIT_S = 120.0
PROSE_EXAMPLE = "why does the connection pool time out"  # read as prose: hybrid where vectors exist
# the query language: exactly what they say
LANGUAGE_EXAMPLES = ('"database is locked"', 'repo:ledger "connection pool" -flaky', "timeout OR retry")
UNIT_EXAMPLE = "messages where role:assistant AND text:timeout"


def sample_archive(home: Path) -> Path:
    """The sample archive (a week of Claude Code and Codex sessions, `quarry.cli.sample_archive`), written once
    under the home: its days are the six before the first run, and later runs ingest the same files."""
    from quarry.cli.sample_archive import write_sample_archive

    folder = home / "sample-sessions"
    if not folder.exists() or not any(folder.iterdir()):
        folder.mkdir(parents=True, exist_ok=True)
        write_sample_archive(folder, datetime.now(UTC).date())
    return folder


def run_demo(client: QuarryClient, home: Path, fmt: str, console: Console) -> None:
    sources = standard_locations()
    if any(True for _ in iter_source_files(sources)):
        console.rule(f"ingesting the agent logs of this machine: {', '.join(map(str, sources))}")
        paths: list[Path] = sources
    else:
        folder = sample_archive(home)
        console.rule(
            f"no agent logs in the standard locations: ingesting a sample archive of made-up sessions ({folder})"
        )
        paths = [folder]
    report = None
    for event in client.ingest_paths(paths):
        if event.HasField("report"):
            report = event.report
    if report is not None:
        render.ingest_report(report, fmt, console)

    _wait_for_vectors(client, console)
    for query in (PROSE_EXAMPLE, *LANGUAGE_EXAMPLES):
        console.rule(f"quarry search {query!r}")
        try:
            render.search_envelope(client.search(query, limit=5), fmt, RichLines(console))
        except QuarryError as error:  # said as the service says it
            console.print(f"[yellow]{error}[/yellow]")
    console.rule(f"quarry {UNIT_EXAMPLE!r}")
    render.unit_envelope(client.query_units(UNIT_EXAMPLE, limit=5), fmt, RichLines(console))
    render.status(client.status(), fmt, console)
    info = ClusterInfo.load(home)
    if info is not None and info.http:  # `make run` starts the cluster with the web reader
        console.rule("the web reader")
        console.print(f"open {info.http} to search, read and export these sessions in a browser (docs/web.md)")


def _wait_for_vectors(client: QuarryClient, console: Console) -> bool:
    """Embedding runs in the background after the lexical acknowledgement; wait for it, bounded, so that
    the prose example ranks by meaning too."""
    deadline = time.monotonic() + VECTOR_WAIT_S
    with console.status("waiting for background embedding…") as spinner:
        while time.monotonic() < deadline:
            vector = next((n for n in client.status().nodes if n.role == "vector"), None)
            if vector is None or not vector.up or "no embedder" in vector.detail:
                console.print("the semantic lane is unavailable on this cluster (no embedder)")
                return False
            if vector.vectors_pending == 0:
                return True
            spinner.update(f"waiting for background embedding: {vector.vectors_pending} texts pending")
            time.sleep(1.0)
    console.print(
        "embedding is still catching up (`quarry status` shows the backlog): the searches use what is embedded"
    )
    return True
