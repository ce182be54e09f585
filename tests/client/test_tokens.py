"""Tokens and the gate in front of the public surfaces: what a user of `quarry token` and a caller notice."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from quarry.core import auth
from quarry.core.errors import QuarryError
from quarry.core.tokens import TokenStore
from quarry.v1 import errors_pb2, query_pb2


def test_a_token_is_shown_once_and_stored_only_as_its_hash(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "tokens.json")
    token, record = store.create("ci", {"team-a": ["read", "write"]})
    text = store.path.read_text()
    assert token not in text and token[len("qry_000000000000_") :] not in text
    assert record.sha256 in text
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    caller = store.authenticate(token)
    assert caller is not None and caller.scopes("write") == {"team-a"} and caller.scopes("admin") == set()


def test_a_running_node_sees_new_and_revoked_tokens(tmp_path: Path) -> None:
    node = TokenStore(tmp_path / "tokens.json")  # what a node holds open
    cli = TokenStore(tmp_path / "tokens.json")  # what `quarry token` writes with
    token, record = cli.create("", {"team-a": ["read"]})
    assert node.authenticate(token) is not None
    assert cli.revoke(record.id)
    assert node.authenticate(token) is None


def test_admin_holds_every_grant_on_its_scopes(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "tokens.json")
    token, _ = store.create("ops", {"team-a": ["admin"], "team-b": ["read"]})
    caller = store.authenticate(token)
    assert caller is not None
    assert caller.scopes("write") == {"team-a"} and caller.scopes("read") == {"team-a", "team-b"}


@pytest.mark.parametrize(
    ("grants", "parameter"),
    [({"Team A": ["read"]}, "scope"), ({"team-a": ["owner"]}, "grant"), ({}, "scope"), ({"team-a": []}, "grant")],
)
def test_bad_grants_are_refused_with_the_parameter(tmp_path: Path, grants: dict, parameter: str) -> None:
    with pytest.raises(QuarryError) as refused:
        TokenStore(tmp_path / "tokens.json").create("", grants)
    assert refused.value.code == errors_pb2.INVALID_REQUEST and refused.value.parameter == parameter


@given(presented=st.text(max_size=80))
def test_anything_but_a_valid_token_is_unauthenticated(
    tmp_path_factory: pytest.TempPathFactory, presented: str
) -> None:
    store = TokenStore(tmp_path_factory.mktemp("t") / "tokens.json")
    store.create("", {"team-a": ["read"]})
    gate = auth.Gate(store)
    with pytest.raises(QuarryError) as refused:
        gate.admit(f"Bearer {presented}", "read")
    assert refused.value.code == errors_pb2.UNAUTHENTICATED


def test_the_gate_refuses_a_missing_grant_before_anything_is_read(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "tokens.json")
    reader, _ = store.create("", {"team-a": ["read"]})
    gate = auth.Gate(store)
    for header in (None, "", "Basic abc", "Bearer", f"bearer {reader}x"):
        with pytest.raises(QuarryError) as missing:
            gate.admit(header, "read")
        assert missing.value.code == errors_pb2.UNAUTHENTICATED
    with pytest.raises(QuarryError) as denied:
        gate.admit(f"Bearer {reader}", "write")
    assert denied.value.code == errors_pb2.PERMISSION_DENIED
    assert gate.admit(f"bearer {reader}", "read")[1] == {"team-a"}
    assert auth.Gate(None).admit(None, "admin") == (None, None), "no token file: nothing is checked"


def test_local_paths_reach_admins_only(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "tokens.json")
    reader = store.authenticate(store.create("", {"team-a": ["read"]})[0])
    admin = store.authenticate(store.create("", {"team-a": ["admin"]})[0])

    def envelope() -> query_pb2.SearchEnvelope:
        answer = query_pb2.SearchEnvelope()
        hit = answer.hits.add()
        hit.session.source_path, hit.session.cwd = "/home/dev/.claude/projects/x.jsonl", "/home/dev/app"
        return answer

    seen_by_reader = auth.run_as(reader, frozenset({"team-a"}), lambda: auth.redact_local_paths(envelope()))
    seen_by_admin = auth.run_as(admin, frozenset({"team-a"}), lambda: auth.redact_local_paths(envelope()))
    assert seen_by_reader.hits[0].session.source_path == "" and seen_by_reader.hits[0].session.cwd == "/home/dev/app"
    assert seen_by_admin.hits[0].session.source_path.endswith("x.jsonl")


def test_a_node_beyond_loopback_needs_authentication() -> None:
    with pytest.raises(QuarryError) as refused:
        auth.require_auth_off_loopback("query", "0.0.0.0", configured=False)
    assert refused.value.parameter == "--host"
    auth.require_auth_off_loopback("query", "127.0.0.1", configured=False)
    auth.require_auth_off_loopback("index", "0.0.0.0", configured=True)


def test_quarry_token_prints_records_in_every_format(tmp_path: Path) -> None:
    """`quarry token` names fields as the rest of the CLI's json does (createdMs), lists one token a line
    in ndjson and a table in csv, and never prints a token's hash."""
    import csv
    import io

    import orjson
    from typer.testing import CliRunner

    from quarry.cli.main import app

    def quarry(*args: str) -> str:
        result = CliRunner().invoke(app, ["--home", str(tmp_path), *args])
        assert result.exit_code == 0, result.output
        return result.output

    created = orjson.loads(quarry("--format", "json", "token", "create", "--scope", "team-a", "--name", "ci"))
    assert set(created) == {"token", "id", "name", "grants", "createdMs"}
    assert created["grants"] == {"team-a": ["read"]}
    quarry("--format", "json", "token", "create", "--scope", "team-b", "--grant", "read,write")
    listed = orjson.loads(quarry("--format", "json", "token", "list"))["tokens"]
    assert [t["name"] for t in listed] == ["ci", ""] and all("sha256" not in t for t in listed)
    assert [orjson.loads(line) for line in quarry("--format", "ndjson", "token", "list").splitlines()] == listed
    rows = list(csv.DictReader(io.StringIO(quarry("--format", "csv", "token", "list"))))
    assert [(r["id"], r["grants"]) for r in rows] == [
        (listed[0]["id"], "team-a=read"),
        (listed[1]["id"], "team-b=read,write"),
    ]
