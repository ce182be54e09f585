"""`quarry context …`: named clusters, in the manner of kubectl's contexts, kept in the per-user contexts
file (quarry.client.contexts):

    quarry context add team --cluster grpcs://quarry.example.com:7443 --ca team-ca.pem --token-file team.token
    quarry context use team              # every command now talks to it (`use local`: back to `quarry up`'s)
    quarry --context team search sqlite  # one command (or $QUARRY_CONTEXT)
    quarry context list                  # every --format
    quarry context remove team

`add` checks what every later command would: the URL, a plaintext one beyond loopback (--allow-plaintext),
the CA file, and that the token file exists and is private to its owner.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from quarry.cli.lazy import escape, lazy_module, stderr, stdout
from quarry.cli.state import settings

if TYPE_CHECKING:
    from quarry.client.contexts import Context, Contexts

render = lazy_module("quarry.cli.render")

COLUMNS = ("name", "current", "cluster", "ingest", "ca", "token_file", "allow_plaintext", "home")

context_app = typer.Typer(help="Named clusters: add, use, list, remove (`quarry --context NAME …` picks one).")

Name = Annotated[str, typer.Argument(help="The context's name.", show_default=False)]


@context_app.command("add")
def add(
    name: Name,
    cluster: Annotated[
        str,
        typer.Option(
            "--cluster", help="grpcs://HOST:PORT (TLS) or grpc://HOST:PORT: the query node.", show_default=False
        ),
    ],
    ingest: Annotated[
        str | None,
        typer.Option(
            "--ingest",
            help="HOST:PORT of the ingest node (default: the query node's host, the port the cluster reports).",
            show_default=False,
        ),
    ] = None,
    ca: Annotated[
        Path | None,
        typer.Option("--ca", help="The CA file the cluster's certificate is verified with (default: system roots)."),
    ] = None,
    token_file: Annotated[
        Path | None,
        typer.Option("--token-file", help="A file holding the token (mode 0600; $QUARRY_TOKEN overrides it)."),
    ] = None,
    allow_plaintext: Annotated[
        bool, typer.Option("--allow-plaintext", help="Allow a grpc:// URL to a host beyond loopback.")
    ] = False,
) -> None:
    """Add a named cluster, or replace the one of that name."""
    from quarry.client.contexts import ContextStore

    context = _checked(name, cluster, ingest, ca, token_file, allow_plaintext)
    store = ContextStore()
    replaced = store.add(context)
    current = store.load().current
    if settings.format != "plain":
        render.emit_document({"context": _row(context, current), "replaced": replaced}, settings.format)
        return
    verb = "replaced" if replaced else "added"
    stdout().print(f"{verb} context {name}: {escape(context.cluster)}", highlight=False, soft_wrap=True)
    if current != name:
        hint = f"`quarry context use {name}` makes it the default; `quarry --context {name} …` uses it once"
        stderr().print(hint, highlight=False, soft_wrap=True)


@context_app.command("use")
def use(name: Annotated[str, typer.Argument(help="A context's name; `local`: the cluster under --home.")]) -> None:
    """Make a context the one every command talks to (unless --cluster, $QUARRY_URL, --context or
    $QUARRY_CONTEXT names another)."""
    from quarry.client.contexts import LOCAL, ContextStore, check_name

    store = ContextStore()
    store.use(check_name(name, "name"))
    if settings.format != "plain":
        render.emit_document({"current": name}, settings.format)
    elif name == LOCAL:
        stdout().print(f"using the local cluster under {escape(str(settings.home))}", highlight=False, soft_wrap=True)
    else:
        cluster = store.load().contexts[name].cluster
        stdout().print(f"using context {name}: {escape(cluster)}", highlight=False, soft_wrap=True)


@context_app.command("list")
def list_contexts() -> None:
    """Every context (`local` first: the cluster under --home), the current one marked."""
    from quarry.client.contexts import ContextStore

    contexts = ContextStore().load()
    rows = _rows(contexts)
    fmt = settings.format
    if fmt in ("json", "yaml"):
        render.emit_document({"current": contexts.current or "local", "contexts": rows}, fmt)
    elif fmt == "ndjson":
        render.emit_ndjson(rows)
    elif fmt == "csv":
        render.emit_csv(COLUMNS, ([row[c] for c in COLUMNS] for row in rows))
    else:
        for row in rows:
            mark = "*" if row["current"] else " "
            where = row["cluster"] or f"the cluster `quarry up` runs under {row['home']}"
            extra = "".join(
                f"  {label} {row[key]}"
                for label, key in (("ingest", "ingest"), ("ca", "ca"), ("token-file", "token_file"))
                if row[key]
            )
            stdout().print(f"{mark} {row['name']:<16} {escape(where)}{escape(extra)}", highlight=False, soft_wrap=True)


@context_app.command("remove")
def remove(name: Name) -> None:
    """Forget a context; when it was the current one, the local cluster is current again."""
    from quarry.client.contexts import LOCAL, ContextStore, check_name
    from quarry.core.errors import QuarryError
    from quarry.v1 import errors_pb2

    if check_name(name, "name") == LOCAL:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST, "`local` is the cluster under --home: it cannot be removed", parameter="name"
        )
    store = ContextStore()
    was_current = store.load().current == name
    store.remove(name)
    if settings.format != "plain":
        render.emit_document({"removed": name, "current": store.load().current or LOCAL}, settings.format)
        return
    stdout().print(
        f"removed context {name}" + ("; the local cluster is current" if was_current else ""), soft_wrap=True
    )


def _checked(
    name: str, cluster: str, ingest: str | None, ca: Path | None, token_file: Path | None, allow_plaintext: bool
) -> Context:
    """The context, once everything a command using it would check holds; errors name the option."""
    from quarry.client.cluster_url import parse_cluster_url, parse_host_port, require_private
    from quarry.client.contexts import LOCAL, Context, check_name
    from quarry.client.target import check_ca_file, read_token_file
    from quarry.core.errors import QuarryError
    from quarry.v1 import errors_pb2

    if check_name(name, "name") == LOCAL:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST, "`local` names the cluster under --home: choose another name", parameter="name"
        )
    url = parse_cluster_url(cluster, "--cluster")
    require_private(url, allow_plaintext, "--cluster", "--allow-plaintext")
    if ingest and url.ingest:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            "the ingest node is given twice: by --ingest and by ?ingest= in --cluster",
            parameter="--ingest",
        )
    if ca is not None and not url.tls:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            f"--ca verifies a TLS cluster, but {cluster!r} is plaintext (grpc://): use grpcs://",
            parameter="--ca",
        )
    token_path = token_file.expanduser().resolve() if token_file is not None else None
    if token_path is not None:
        read_token_file(token_path, "--token-file")
    return Context(
        name=name,
        cluster=url.text,
        ingest=parse_host_port(ingest, "--ingest") if ingest else "",
        ca=str(check_ca_file(ca.expanduser(), "--ca")) if ca is not None else "",
        token_file=str(token_path) if token_path is not None else "",
        allow_plaintext=allow_plaintext,
    )


def _rows(contexts: Contexts) -> list[dict[str, Any]]:
    home = str(settings.home)
    local = dict.fromkeys(COLUMNS, "") | {"name": "local", "current": not contexts.current, "home": home}
    local["allow_plaintext"] = False
    return [local, *(_row(contexts.contexts[name], contexts.current) for name in sorted(contexts.contexts))]


def _row(context: Context, current: str) -> dict[str, Any]:
    return {
        "name": context.name,
        "current": context.name == current,
        "cluster": context.cluster,
        "ingest": context.ingest,
        "ca": context.ca,
        "token_file": context.token_file,
        "allow_plaintext": context.allow_plaintext,
        "home": "",
    }
