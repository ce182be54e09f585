"""`quarry read REF`: one archive object by its public ref (docs/search-api.md#public-refs), read
through the query node's ResolveRef, never searched for.

    quarry read session:codex-session:abc123
    quarry --format json read message:codex-session:abc123:m1
    quarry read delegation:claude-code-session:parent:delegation:1 --max-chars 500

A ref that names nothing, or is not a ref, prints its caveats (json: no `resolved`, false being the
default proto3 JSON leaves out).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

import typer

from quarry.cli.lazy import escape, lazy_module, stdout
from quarry.cli.state import open_client, settings

if TYPE_CHECKING:
    from google.protobuf.message import Message as ProtoMessage
    from rich.console import Console

render = lazy_module("quarry.cli.render")
refs_pb2 = lazy_module("quarry.v1.refs_pb2")


TRUNCATED = "…(truncated)"
# Fields printed as paragraphs under the card's header lines rather than as `name: value`.
_LONG_FIELDS = frozenset(("text", "preview", "body", "instruction", "tool_input_json"))
_WINDOWS = (
    ("dispatch result", "dispatch_result"),
    ("child excerpt", "child_excerpt"),
    ("parent context", "parent_context"),
    ("parent follow-up", "parent_follow_up"),
)


def read(
    ref: Annotated[
        str,
        typer.Argument(
            help="session:… | message:… | block:… | assertion:… | delegation:… | run:… | observed-event:… | "
            "context-snapshot:…"
        ),
    ],
    max_chars: Annotated[
        int, typer.Option("--max-chars", min=0, help="Bound on each text window of a delegation (0: 2000).")
    ] = 0,
) -> None:
    """Read one archive object by its public ref."""
    with open_client() as client:
        resolved = client.resolve_ref(ref, max_chars=max_chars)
    if not render.emit_message(resolved, settings.format, "a resolved ref"):
        print_resolved(resolved, stdout())


def print_resolved(resolved: refs_pb2.ResolvedRef, console: Console) -> None:
    """A readable card: the object's fields, its texts in full (a delegation's windows bounded, with a
    truncation marker), then the caveats."""
    state = "" if resolved.resolved else " · [red]unresolved[/red]"
    console.print(f"[cyan]{escape(resolved.ref)}[/cyan]  [dim]{escape(resolved.kind or 'not a ref')}[/dim]{state}")
    kind = resolved.WhichOneof("object")
    if kind == "delegation":
        _delegation(resolved.delegation, console)
    elif kind == "message":
        _fields(resolved.message, console, skip=("blocks",))
        for block in resolved.message.blocks:
            console.print(f"[bold]block {block.index}[/bold] [dim]{escape(block.id)}[/dim]")
            _fields(block, console, skip=("id", "index"), indent="  ")
    elif kind is not None:
        _fields(getattr(resolved, kind), console)
    for caveat in resolved.caveats:
        console.print(f"[yellow]caveat:[/yellow] {escape(caveat)}", soft_wrap=True)


def _delegation(card: refs_pb2.DelegationCard, console: Console) -> None:
    _fields(card.delegation, console, skip=("instruction",))
    console.print("[bold]instruction[/bold]")
    _paragraph(card.delegation.instruction, console)
    for title, name in _WINDOWS:
        text = getattr(card, name)
        console.print(f"[bold]{title}[/bold]")
        if not text:
            console.print("  [dim](none)[/dim]")
            continue
        _paragraph(text + (TRUNCATED if getattr(card, f"{name}_truncated") else ""), console)


def _fields(message: ProtoMessage, console: Console, skip: tuple[str, ...] = (), indent: str = "") -> None:
    """Every set field as `name: value` (times as UTC dates), then the long texts as paragraphs."""
    long_texts = []
    for field in message.DESCRIPTOR.fields:
        name = field.name
        value = getattr(message, name)
        if name in skip or value in ("", 0, False) or (field.is_repeated and not value):
            continue
        if name in _LONG_FIELDS:
            long_texts.append((name, value))
            continue
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            shown = ", ".join(f"{k} {v}" for k, v in sorted(value.items()))
        elif field.message_type is not None:
            shown = " · ".join(f"{f.name} {v}" for f, v in value.ListFields())
        elif field.is_repeated:
            shown = ", ".join(str(v) for v in value)
        elif name.endswith("_ms") and name != "duration_ms" and isinstance(value, int):
            shown = datetime.fromtimestamp(value / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        else:
            shown = str(value)
        console.print(f"{indent}[dim]{name}:[/dim] {escape(shown)}", soft_wrap=True)
    for name, text in long_texts:
        console.print(f"{indent}[dim]{name}:[/dim]")
        _paragraph(text, console, indent + "  ")


def _paragraph(text: str, console: Console, indent: str = "  ") -> None:
    for line in text.splitlines() or [""]:
        console.print(f"{indent}{escape(line)}", soft_wrap=True, highlight=False)
