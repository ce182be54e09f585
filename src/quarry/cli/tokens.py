"""`quarry token …`: bearer tokens of a cluster, in its token file (quarry.core.tokens).

The file is read by the query and ingest nodes at every call, so a token works, and a revoked one stops
working, on a running cluster. The token itself is shown once, at creation; the file keeps its hash.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from quarry.cli.lazy import lazy_module, stderr, stdout
from quarry.cli.state import settings

if TYPE_CHECKING:
    from quarry.core.tokens import TokenRecord, TokenStore

render = lazy_module("quarry.cli.render")

# quarry.core.tokens.GRANTS, spelt out for the help: that module imports gRPC, which `--help` should not
# (tests/client/test_cli_imports.py checks the two agree).
GRANTS = ("read", "write", "admin")

token_app = typer.Typer(help="Bearer tokens: create, list, revoke (grants `read`, `write`, `admin` per scope).")

TokensFile = Annotated[
    Path | None,
    typer.Option("--tokens", help="The token file (default: <home>/auth/tokens.json, what `quarry up` reads)."),
]


def _store(path: Path | None) -> TokenStore:
    from quarry.core.tokens import TokenStore

    return TokenStore(path) if path is not None else TokenStore.in_home(settings.home)


CSV_COLUMNS = ("id", "name", "grants", "created_ms")


def _record_json(record: TokenRecord) -> dict[str, object]:
    """A token's record as the CLI prints it (never its hash), named as proto3 JSON names fields."""
    grants = {scope: sorted(held) for scope, held in sorted(record.grants.items())}
    return {"id": record.id, "name": record.name, "grants": grants, "createdMs": record.created_ms}


@token_app.command("create")
def create(
    scope: Annotated[list[str], typer.Option("--scope", help="A scope the token holds its grants on (repeatable).")],
    grant: Annotated[str, typer.Option(help=f"Comma-separated: {', '.join(GRANTS)}.")] = "read",
    name: Annotated[str, typer.Option(help="What the token is for (shown by `quarry token list`).")] = "",
    tokens: TokensFile = None,
) -> None:
    """A new token with the grants on each scope; printed once (the file keeps only its hash)."""
    grants = grant.split(",")
    secret, record = _store(tokens).create(name, {s: grants for s in scope})
    if render.emit_response({"token": secret, **_record_json(record)}, settings.format, "a new token"):
        return
    stdout().print(secret, soft_wrap=True, highlight=False)
    held = "; ".join(f"{s}: {','.join(sorted(g))}" for s, g in sorted(record.grants.items()))
    stderr().print(f"token {record.id} ({held}); shown once: use it as QUARRY_TOKEN or `Authorization: Bearer`")


@token_app.command("list")
def list_tokens(tokens: TokensFile = None) -> None:
    """Every token's id, name, grants and creation time (never the token)."""
    records = _store(tokens).records()
    if settings.format == "csv":
        cells = ([r.id, r.name, {s: ",".join(sorted(g)) for s, g in r.grants.items()}, r.created_ms] for r in records)
        render.emit_csv(CSV_COLUMNS, cells)  # grants as `scope=grant,grant` pairs
        return
    listed = [_record_json(r) for r in records]
    if render.emit_response({"tokens": listed}, settings.format, "a token list", listed):
        return
    for record in records:
        created = datetime.fromtimestamp(record.created_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M")
        held = "; ".join(f"{s}: {','.join(sorted(g))}" for s, g in sorted(record.grants.items()))
        stdout().print(f"{record.id}  {created}  {record.name or '-'}  {held}", highlight=False)


@token_app.command("revoke")
def revoke(
    token_id: Annotated[str, typer.Argument(help="The token's id (`quarry token list`).")], tokens: TokensFile = None
) -> None:
    """Remove a token: calls carrying it are refused from the next call on."""
    from quarry.core.errors import QuarryError
    from quarry.v1 import errors_pb2

    if not _store(tokens).revoke(token_id):
        raise QuarryError(errors_pb2.NOT_FOUND, f"no token {token_id!r}", parameter="token_id")
    stdout().print(f"revoked {token_id}")
