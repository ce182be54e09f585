"""A scope owns its sessions: no ingest in one scope can shadow, block, capture or reveal a session of
another.

The attack of the report: team-a ingests team-b's log folder first (a copy of it, or the folder
itself through an operator), hoping team-b's own ingest then finds its session "unchanged" and team-b
can no longer read it, while team-a can."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from quarry.cli.push import Pusher
from quarry.core.session_ids import scoped_id
from tests.cluster.corpus import session_id, write_session
from tests.security.team_cluster import TeamCluster

pytestmark = pytest.mark.cluster


def _team_b_log(folder: Path, key: str, secret: str) -> Path:
    folder.mkdir(parents=True)
    return write_session(folder, key, "vault", [("user", f"team-b only: {secret}"), ("assistant", "noted")])


def test_a_copy_pushed_first_by_another_scope_captures_nothing(teams: TeamCluster, tmp_path: Path) -> None:
    log = _team_b_log(tmp_path / "team-b-laptop", "team-b/pushed", "the rotation key is blue-harbour")
    stolen = tmp_path / "team-a-laptop"
    stolen.mkdir()
    shutil.copy(log, stolen / log.name)
    native = session_id("team-b/pushed")
    with teams.client("a") as a, Pusher(a, state_home=tmp_path / "a-state") as pusher:
        assert pusher.push([stolen]).sessions_written == 1
    with teams.client("b") as b, Pusher(b, state_home=tmp_path / "b-state") as pusher:
        report = pusher.push([log.parent])
        assert (report.sessions_written, report.sessions_unchanged, list(report.issues)) == (1, 0, [])
        header, events = b.sessions.read(scoped_id("team-b", native))
        assert (header.id, header.scope, header.pusher, len(events)) == ("team-b@" + native, "team-b", "b-token", 2)
        assert [h.session.id for h in b.search("blue-harbour").hits] == ["team-b@" + native]
    with teams.client("a") as a:
        # team-a reads only its own copy, under its own id; team-b's stays out of its reach.
        assert [h.session.id for h in a.search("blue-harbour").hits] == ["team-a@" + native]
        assert not a.resolve_ref(f"session:team-b@{native}").resolved


def test_the_file_tracker_is_per_scope(teams: TeamCluster) -> None:
    folder = teams.root / "shared-folder"
    _team_b_log(folder, "team-b/tracked", "the staging password is tidewater")
    native = session_id("team-b/tracked")
    with teams.client("operator") as operator:
        first = list(operator.ingest_paths([folder], scope="team-a"))[-1].report
        second = list(operator.ingest_paths([folder], scope="team-b"))[-1].report
        assert (first.sessions_written, second.sessions_written, second.files_unchanged) == (1, 1, 0)
        again = list(operator.ingest_paths([folder], scope="team-b"))[-1].report
        assert (again.files_unchanged, again.sessions_written) == (1, 0)
    with teams.client("b") as b:
        assert [h.session.id for h in b.search("tidewater").hits] == [scoped_id("team-b", native)]


def test_a_session_deleted_in_one_scope_stays_in_the_other(teams: TeamCluster, tmp_path: Path) -> None:
    log = _team_b_log(tmp_path / "laptop", "team-b/deleted", "the escrow phrase is lantern")
    native = session_id("team-b/deleted")
    for who in ("a", "b"):
        with teams.client(who) as client, Pusher(client, state_home=tmp_path / f"{who}-state") as pusher:
            assert pusher.push([log.parent]).sessions_written == 1
    with teams.client("a") as a:
        assert list(a.delete([native]).not_found) == [native]  # the bare id is nobody's: nothing removed
        assert list(a.delete([scoped_id("team-b", native)]).not_found) == [scoped_id("team-b", native)]
        assert list(a.delete([scoped_id("team-a", native)]).deleted) == [scoped_id("team-a", native)]
    with teams.client("b") as b:
        assert [h.session.id for h in b.search("lantern").hits] == [scoped_id("team-b", native)]


def test_a_sent_id_that_names_a_scope_is_refused(teams: TeamCluster, tmp_path: Path) -> None:
    from quarry.ingest.parse import parse_file

    log = _team_b_log(tmp_path / "forged", "team-b/forged", "forged")
    session = parse_file(log).sessions[0]
    session.id = "team-b@" + session.id  # team-a tries to write straight into team-b's id space
    with teams.client("a") as a:
        report = a.ingest_sessions([session])
    assert report.sessions_written == 0
    assert [i.code for i in report.issues] == ["invalid_record"]
