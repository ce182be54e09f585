"""Upserts: idempotence, replacement, restarts, and crashes at the worst moments."""

from __future__ import annotations

import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from quarry.core.errors import QuarryError
from quarry.index.lexical.partition import LexicalPartition
from quarry.v1 import errors_pb2
from tests.index import plans as p
from tests.index.conftest import corpus, sid
from tests.index.sessions import Msg, session

REPO = Path(__file__).resolve().parents[2]


def test_unchanged_reupsert_writes_nothing(fresh: LexicalPartition) -> None:
    first = fresh.upsert(corpus())
    assert (first.sessions_written, first.sessions_unchanged) == (9, 0)
    assert first.messages_written == sum(len(s.messages) for s in corpus())
    meta = fresh.directory / "tantivy" / "meta.json"
    before = meta.read_bytes()
    watcher = sqlite3.connect(fresh.directory / "store.sqlite3")
    version = watcher.execute("PRAGMA data_version").fetchone()[0]

    again = fresh.upsert(corpus())

    assert (again.sessions_written, again.sessions_unchanged, again.messages_written) == (0, 9, 0)
    assert meta.read_bytes() == before  # no Tantivy commit
    assert watcher.execute("PRAGMA data_version").fetchone()[0] == version  # no SQLite commit
    watcher.close()


def test_replacement_removes_the_old_version(fresh: LexicalPartition) -> None:
    fresh.upsert([session("s1", [Msg("user", "alpha topic"), Msg("assistant", "alpha answer")])])
    fresh.upsert([session("s1", [Msg("user", "beta topic")])])

    assert [h.session.id for h in fresh.search(p.search(p.text("beta"))).hits] == [sid("s1")]
    assert fresh.search(p.search(p.text("alpha"))).hits == []
    rows = fresh.query_units(p.units("messages")).rows
    assert [r.message.blocks[0].text for r in rows] == ["beta topic"]
    stats = fresh.stats()
    assert (stats.sessions, stats.messages, stats.documents) == (1, 1, 1)


def test_content_hash_is_computed_when_missing_and_the_last_duplicate_wins(fresh: LexicalPartition) -> None:
    old = session("s1", [Msg("user", "first draft")])
    new = session("s1", [Msg("user", "second draft")])
    response = fresh.upsert([old, new])
    assert (response.sessions_written, response.sessions_unchanged) == (1, 0)
    assert fresh.upsert([new]).sessions_unchanged == 1
    assert [h.session.id for h in fresh.search(p.search(p.text("second"))).hits] == [sid("s1")]
    assert fresh.search(p.search(p.text("first"))).hits == []


def test_reopen_keeps_everything_and_still_folds(tmp_path: Path) -> None:
    partition = LexicalPartition(tmp_path, 3)
    partition.upsert(corpus())
    before = partition.stats()
    partition.close()

    reopened = LexicalPartition(tmp_path, 3)
    try:
        assert reopened.stats() == before
        assert [h.session.id for h in reopened.search(p.search(p.text("zrobilem"))).hits] == [sid("polish")]
        # and it can still index: the folding tokenizer is registered again
        reopened.upsert([session("late", [Msg("user", "Żółw przyszedł późno")])])
        assert [h.session.id for h in reopened.search(p.search(p.text("zolw"))).hits] == [sid("late")]
    finally:
        reopened.close()


def test_lost_tantivy_index_is_rebuilt_from_sqlite(tmp_path: Path) -> None:
    partition = LexicalPartition(tmp_path, 0)
    partition.upsert(corpus())
    partition.close()
    shutil.rmtree(tmp_path / "tantivy")

    rebuilt = LexicalPartition(tmp_path, 0)
    try:
        assert rebuilt.stats().documents == sum(len(s.messages) for s in corpus())
        assert {h.session.id for h in rebuilt.search(p.search(p.text("sqlite", "locking"))).hits} == {
            sid("lock-same"),
            sid("lock-user"),
        }
    finally:
        rebuilt.close()


def _run_child(body: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    script = textwrap.dedent(
        f"""
        import os, signal, sys
        from pathlib import Path
        from quarry.index.lexical.partition import LexicalPartition
        from tests.index.sessions import Msg, session
        partition = LexicalPartition(Path({str(data_dir)!r}), 0)
        """
    ) + textwrap.dedent(body)
    return subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )


def test_sigkill_right_after_upsert_returns_loses_nothing(tmp_path: Path) -> None:
    child = _run_child(
        """
        for batch in range(4):
            sessions = [session(f"crash-{batch}-{i}", [Msg("user", f"marker{batch}x{i} durable words")])
                        for i in range(25)]
            partition.upsert(sessions)
            print("ack", " ".join(s.id for s in sessions), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        """,
        tmp_path,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    acknowledged = [sid_ for line in child.stdout.splitlines() if line.startswith("ack ") for sid_ in line.split()[1:]]
    assert len(acknowledged) == 100

    partition = LexicalPartition(tmp_path, 0)
    try:
        assert [s.id for s in partition.get_sessions(acknowledged)] == acknowledged
        assert partition.stats().documents == 100
        hits = partition.search(p.search(p.text("marker3x24"))).hits
        assert [h.session.id for h in hits] == [sid("crash-3-24")]
    finally:
        partition.close()


def test_crash_between_the_sqlite_and_tantivy_commits_is_repaired_at_open(tmp_path: Path) -> None:
    child = _run_child(
        """
        partition.upsert([session("one", [Msg("user", "committed everywhere")]), session("two", [Msg("user", "old")])])
        def die(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGKILL)
        partition._index_sessions = die   # SQLite has committed, Tantivy never will
        partition.upsert([session("one", [Msg("user", "replaced text")]), session("two", [Msg("user", "orphan row")])])
        """,
        tmp_path,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr

    # Same document count in both stores: only the pending marks tell what Tantivy missed.
    partition = LexicalPartition(tmp_path, 0)
    try:
        assert [h.session.id for h in partition.search(p.search(p.text("orphan"))).hits] == [sid("two")]
        assert [h.session.id for h in partition.search(p.search(p.text("replaced"))).hits] == [sid("one")]
        assert partition.search(p.search(p.text("committed"))).hits == []  # the stale version is gone
        stats = partition.stats()
        assert (stats.sessions, stats.documents) == (2, 2)
    finally:
        partition.close()


class _CommitFailsOnce:
    """Wraps the partition's Tantivy writer: the next commit fails as a full disk would."""

    def __init__(self, writer: object) -> None:
        self.writer = writer
        self.armed = True

    def commit(self) -> int:
        if self.armed:
            self.armed = False
            raise ValueError("No space left on device")
        return self.writer.commit()  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self.writer, name)


def test_a_failed_tantivy_commit_is_retried_by_the_next_upsert(fresh: LexicalPartition) -> None:
    fresh._writer = _CommitFailsOnce(fresh._writer)  # type: ignore[assignment]
    first = session("s1", [Msg("user", "quokka sighting")])
    with pytest.raises(ValueError, match="No space"):
        fresh.upsert([first])
    assert fresh.search(p.search(p.text("quokka"))).hits == []  # rolled back, not half-visible

    # the retry carries the same content hash: SQLite already has it, Tantivy still must get it
    retry = fresh.upsert([first])
    assert retry.sessions_unchanged == 1
    assert [h.session.id for h in fresh.search(p.search(p.text("quokka"))).hits] == [sid("s1")]


def test_one_batch_of_new_and_replaced_sessions_keeps_ordinals_and_replaces_tags(fresh: LexicalPartition) -> None:
    fresh.upsert(
        [
            session("a", [Msg("user", "apple orchard")], tags=("old",)),
            session("b", [Msg("user", "banana boat")]),
        ]
    )
    ords = dict(fresh._store._writer.execute("SELECT id, ord FROM sessions").fetchall())

    written = fresh.upsert(
        [
            session("a", [Msg("user", "apricot jam"), Msg("assistant", "apricot pie")], tags=("new",)),
            session("c", [Msg("user", "cherry tree")]),
            session("b", [Msg("user", "banana boat")]),  # unchanged
        ]
    )

    assert (written.sessions_written, written.sessions_unchanged, written.messages_written) == (2, 1, 3)
    after = dict(fresh._store._writer.execute("SELECT id, ord FROM sessions").fetchall())
    assert after[sid("a")] == ords[sid("a")] and after[sid("b")] == ords[sid("b")]
    assert after[sid("c")] not in ords.values()
    assert hit_ids(fresh, p.all_(p.text("apricot"), p.field("tag", "new"))) == [sid("a")]
    assert hit_ids(fresh, p.field("tag", "old")) == []
    assert hit_ids(fresh, p.text("apple")) == []
    assert hit_ids(fresh, p.text("cherry")) == [sid("c")]
    stats = fresh.stats()
    assert (stats.sessions, stats.messages, stats.documents) == (3, 4, 4)
    # the rows of the replaced session are gone: blocks in time order, equal times by id
    blocks = [r.sort_id for r in fresh.query_units(p.units("blocks", p.field("type", "text"))).rows]
    assert blocks == [f"{sid('a')}:m0:0", f"{sid('b')}:m0:0", f"{sid('c')}:m0:0", f"{sid('a')}:m1:0"]


def test_a_store_in_another_format_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite3"
    old = sqlite3.connect(path)
    old.execute("CREATE TABLE sessions (ord INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, cwd TEXT NOT NULL)")
    old.close()
    with pytest.raises(QuarryError) as refused:
        LexicalPartition(tmp_path, 0)
    assert refused.value.code == errors_pb2.NODE_UNAVAILABLE
    assert "re-ingest" in str(refused.value)


def hit_ids(partition: LexicalPartition, where: object) -> list[str]:
    return [h.session.id for h in partition.search(p.search(where)).hits]  # type: ignore[arg-type]
