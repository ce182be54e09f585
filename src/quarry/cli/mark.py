"""`quarry mark …`: write assertions, and judge the candidates automated writers leave (the unit:
docs/query-language.md#unit-queries; its calls: docs/search-api.md#calls). Every call goes to the
query node, which routes it to the partition holding the target's session.

    quarry mark add session:codex-session:abc --kind decision --body "retry twice, then fail"
    quarry --format json mark candidates list --target-ref session:codex-session:abc
    quarry mark candidates review
    quarry mark candidates accept assertion:ID --reason "confirmed by transcript"
    quarry mark candidates supersede assertion:ID --kind summary --body "replacement claim"
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from quarry.cli.lazy import escape, lazy_module, stdout
from quarry.cli.state import open_client, settings

if TYPE_CHECKING:
    from rich.console import Console

render = lazy_module("quarry.cli.render")
units_pb2 = lazy_module("quarry.v1.units_pb2")


mark_app = typer.Typer(help="Assertions (decisions, caveats, summaries, tags, notes, todos) about archive objects.")
candidates_app = typer.Typer(help="Candidates automated writers left, and their judgment.")
mark_app.add_typer(candidates_app, name="candidates")


# ---- commands --------------------------------------------------------------------------------------


TargetOption = Annotated[str, typer.Option("--target-ref", help="Only this target (session:…, message:…, …).")]
LimitOption = Annotated[int, typer.Option(min=1, max=1000)]
ReasonOption = Annotated[str, typer.Option("--reason", help="Why: kept with the judgment.")]
IdArgument = Annotated[str, typer.Argument(help="The candidate: assertion:<id> or <id>.")]


@mark_app.command("add")
def add(
    target_ref: Annotated[str, typer.Argument(help="What it is about: session:…, message:…, block:…, …")],
    kind: Annotated[str, typer.Option("--kind", help="decision | caveat | summary | tag | note | todo")],
    body: Annotated[str, typer.Option("--body", help="The claim.")],
    evidence: Annotated[list[str] | None, typer.Option("--evidence", help="A ref it rests on (repeatable).")] = None,
) -> None:
    """Write an assertion as the user (it is active at once)."""
    assertion = units_pb2.Assertion(
        kind=kind, target_ref=target_ref, body=body, author="user", evidence_refs=evidence or []
    )
    with open_client() as client:
        stored = client.write_assertion(assertion)
    if settings.format in ("json", "ndjson"):
        _emit(settings.format, render.to_dict(stored))
        return
    _print_assertion(stored, stdout())


@candidates_app.command("list")
def list_(target_ref: TargetOption = "", limit: LimitOption = 50) -> None:
    """Candidates awaiting judgment, oldest first."""
    _show_candidates(target_ref, review=False, limit=limit)


@candidates_app.command("review")
def review(target_ref: TargetOption = "", limit: LimitOption = 50) -> None:
    """Candidates awaiting judgment, then the judged ones with why they can no longer be acted on."""
    _show_candidates(target_ref, review=True, limit=limit)


@candidates_app.command("accept")
def accept(candidate_id: IdArgument, reason: ReasonOption) -> None:
    """Accept: the claim becomes an active assertion citing the candidate."""
    _judge(candidate_id, "accept", reason)


@candidates_app.command("reject")
def reject(candidate_id: IdArgument, reason: ReasonOption) -> None:
    """Reject: the candidate is closed; the reason is kept as a judgment record."""
    _judge(candidate_id, "reject", reason)


@candidates_app.command("defer")
def defer(candidate_id: IdArgument, reason: ReasonOption) -> None:
    """Defer: the candidate is set aside; the reason is kept as a judgment record."""
    _judge(candidate_id, "defer", reason)


@candidates_app.command("supersede")
def supersede(
    candidate_id: IdArgument,
    kind: Annotated[str, typer.Option("--kind", help="The replacement's kind.")],
    body: Annotated[str, typer.Option("--body", help="The replacement claim.")],
    reason: Annotated[str, typer.Option("--reason", help="Why: kept with the judgment.")] = "",
) -> None:
    """Supersede: a replacement claim becomes an active assertion citing the candidate."""
    _judge(candidate_id, "supersede", reason, kind=kind, body=body)


def _show_candidates(target_ref: str, review: bool, limit: int) -> None:
    with open_client() as client:
        result = client.list_candidates(target_ref=target_ref, review=review, limit=limit)
    fmt, console = settings.format, stdout()
    if fmt == "json":
        render.emit_json(render.to_dict(result))
        return
    if fmt == "ndjson":
        render.emit_ndjson([render.to_dict(entry) for entry in result.entries])
        return
    pending = sum(1 for entry in result.entries if not entry.disabled_reason)
    scope = f" · {escape(target_ref)}" if target_ref else ""
    judged = f", {len(result.entries) - pending} judged" if review else ""
    console.print(f"[bold]{pending} candidates awaiting judgment{judged}[/bold]{scope}")
    for entry in result.entries:
        _print_assertion(entry.assertion, console)
        if entry.disabled_reason:
            console.print(f"     [dim]{escape(entry.disabled_reason)}[/dim]")
        else:
            console.print(f"     [dim]{' | '.join(entry.actions)}[/dim]")


def _judge(candidate_id: str, judgment: str, reason: str, kind: str = "", body: str = "") -> None:
    with open_client() as client:
        response = client.judge_candidate(candidate_id, judgment, reason=reason, kind=kind, body=body)
    if settings.format in ("json", "ndjson"):
        _emit(settings.format, render.to_dict(response))
        return
    console = stdout()
    console.print(f"[bold]{response.candidate.status}[/bold] assertion:{escape(response.candidate.id)}")
    console.print("created:")
    _print_assertion(response.created, console)


def _emit(fmt: str, data: dict[str, object]) -> None:
    render.emit_json(data) if fmt == "json" else render.emit_ndjson([data])


def _print_assertion(assertion: units_pb2.Assertion, console: Console) -> None:
    what = f"{assertion.kind} · {assertion.status} · by {assertion.author} · {assertion.target_ref}"
    console.print(f"[cyan]assertion:{escape(assertion.id)}[/cyan]  [dim]{escape(what)}[/dim]", soft_wrap=True)
    console.print(f"     {escape(' '.join(assertion.body.split())[:300])}", soft_wrap=True)
    if assertion.reason and assertion.reason != assertion.body:
        console.print(f"     [dim]reason: {escape(assertion.reason)}[/dim]", soft_wrap=True)
