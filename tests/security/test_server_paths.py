"""Reading the ingest node's own files (IngestPaths) is an operator's tool, confined to its roots.

Attacks, as a teammate with a write token would send them: name the server's secrets, name files that
do or do not exist to learn which do, plant a symlink or a pipe where the node reads. None may read a
file, import a session, or tell anything about a file."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from quarry.core.errors import QuarryError, from_rpc_error
from quarry.v1 import errors_pb2, ingest_pb2
from tests.cluster.corpus import write_session
from tests.security.team_cluster import TeamCluster

pytestmark = pytest.mark.cluster


def typed_stream(call: Iterator[ingest_pb2.IngestProgress]) -> Iterator[ingest_pb2.IngestProgress]:
    try:
        yield from call
    except grpc.RpcError as error:
        raise from_rpc_error(error) from None


def _refusal(teams: TeamCluster, who: str, paths: list[str]) -> QuarryError:
    with teams.client(who) as client, pytest.raises(QuarryError) as refused:
        list(client.ingest_paths(paths, scope="team-a" if who != "b" else "team-b"))
    return refused.value


def test_a_write_token_reads_no_server_file(teams: TeamCluster) -> None:
    secrets = teams.local.home / "auth" / "tokens.json"
    session_log = teams.root / "team-b-log"
    session_log.mkdir()
    write_session(session_log, "team-b/secret", "vault", [("user", "the launch code is swordfish")])
    for path in ("/etc/passwd", "/etc/shadow", str(secrets), "/nonexistent", str(session_log)):
        refused = _refusal(teams, "a", [path])
        assert refused.code == errors_pb2.PERMISSION_DENIED
        assert refused.message == "the token grants `admin` on no scope", refused.message  # nothing of the file
    with teams.client("a") as client:
        assert not client.search("swordfish").hits


def test_an_operator_reads_only_below_the_roots_and_learns_nothing_of_other_files(teams: TeamCluster) -> None:
    (teams.outside / "exists.jsonl").write_text('{"version": 1, "tokens": []}\n')
    answers = {
        path: _refusal(teams, "operator", [path])
        for path in (
            "/etc/passwd",
            str(teams.local.home / "auth" / "tokens.json"),
            str(teams.outside / "exists.jsonl"),
            str(teams.outside / "missing.jsonl"),
            str(teams.root / ".." / "outside" / "exists.jsonl"),
        )
    }
    for path, refused in answers.items():
        assert refused.code == errors_pb2.PERMISSION_DENIED, path
        assert refused.message == "paths[0] is not below a folder this ingest node may read (its --ingest-root folders)"
        assert "tokens" not in refused.message and "exist" not in refused.message
    with teams.client("operator") as client, pytest.raises(QuarryError) as relative:
        list(typed_stream(client.ingest.IngestPaths(ingest_pb2.IngestPathsRequest(paths=["etc/passwd"]))))
    assert relative.value.code == errors_pb2.INVALID_REQUEST


def test_a_symlink_in_a_root_does_not_lead_out_of_it(teams: TeamCluster) -> None:
    planted = teams.root / "planted"
    planted.mkdir()
    victim = teams.outside / "victim"
    victim.mkdir()
    write_session(victim, "team-b/victim", "vault", [("user", "the vault combination is 4-8-15")])
    (planted / "link.jsonl").symlink_to(next(victim.iterdir()))
    (planted / "tokens.json").symlink_to(teams.local.home / "auth" / "tokens.json")
    with teams.client("operator") as client:
        report = list(client.ingest_paths([planted], scope="team-a"))[-1].report
        assert sorted((i.code, Path(i.path).name) for i in report.issues) == [
            ("outside_roots", "link.jsonl"),
            ("outside_roots", "tokens.json"),
        ]
        assert all("version" not in i.reason and "tokens" not in i.reason for i in report.issues)
        assert report.sessions_written == 0
        assert not client.search("combination").hits
        linked = _refusal(teams, "operator", [str(planted / "link.jsonl")])
        assert linked.code == errors_pb2.PERMISSION_DENIED


def test_a_named_pipe_is_refused_at_once_not_read(teams: TeamCluster) -> None:
    pipes = teams.root / "pipes"
    pipes.mkdir()
    os.mkfifo(pipes / "session.jsonl")
    with teams.client("operator") as client:
        started = time.monotonic()
        named = list(client.ingest_paths([pipes / "session.jsonl"], scope="team-a"))[-1].report
        found = list(client.ingest_paths([pipes], scope="team-a"))[-1].report
        assert time.monotonic() - started < 30, "a pipe hung the ingest"
    assert [(i.code, i.reason) for i in named.issues] == [
        ("not_regular", "a named pipe (FIFO), not a regular file: never read")
    ]
    assert [(s.code, Path(s.path).name) for s in found.skipped] == [("not_regular", "session.jsonl")]


def test_an_ingest_node_without_roots_reads_no_path(tmp_path: Path) -> None:
    from quarry.cli.local import LocalCluster
    from quarry.client.client import QuarryClient

    local = LocalCluster(tmp_path / "home", partitions=1, embedder="none", ingest_roots=[])
    local.start()
    try:
        shutil.copytree(Path(__file__).parent.parent / "fixtures" / "claude_code", tmp_path / "logs")
        info = local.info()
        with QuarryClient(info.query, info.ingest) as client, pytest.raises(QuarryError) as refused:
            list(client.ingest_paths([tmp_path / "logs"]))
        assert refused.value.code == errors_pb2.PERMISSION_DENIED
        assert "quarry push" in refused.value.message
    finally:
        local.stop()
