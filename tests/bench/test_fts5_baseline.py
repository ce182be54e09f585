"""The FTS5 baseline and the query set, on ~2k generated messages."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bench.fts5_baseline import TOKENIZE, Fts5Archive, pl_fold
from bench.queries import CLASSES, build_queries, measure
from quarry.cli import synthetic
from quarry.index.lexical.schema import dialogue_text
from quarry.v1 import units_pb2


@pytest.fixture(scope="module")
def sessions() -> list[units_pb2.Session]:
    return list(synthetic.generate_sessions(2000, seed=9))


@pytest.fixture(scope="module")
def archive(tmp_path_factory, sessions):
    db = Fts5Archive(tmp_path_factory.mktemp("fts5") / "bench.db")
    db.stats = db.build(sessions, batch_sessions=17)
    yield db
    db.close()


def _messages(sessions: list[units_pb2.Session]) -> dict[str, units_pb2.Message]:
    return {m.id: m for s in sessions for m in s.messages}


def test_this_python_has_fts5_with_the_peer_tokenizer():
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5 (x, tokenize='{TOKENIZE}')")
    db.execute("INSERT INTO t VALUES ('Zażółć gęślą jaźń')")
    assert db.execute("SELECT count(*) FROM t WHERE t MATCH 'gesla'").fetchone() == (1,)
    # ł has no decomposition: remove_diacritics leaves it, which is why the peer folds it first.
    assert db.execute("SELECT count(*) FROM t WHERE t MATCH 'zazolc'").fetchone() == (0,)


def test_the_build_stores_every_message_and_indexes_those_with_dialogue_text(archive, sessions):
    stats = archive.stats
    messages = [m for s in sessions for m in s.messages]
    assert (stats.sessions, stats.messages) == (len(sessions), 2000)
    assert stats.fts_rows == sum(1 for m in messages if dialogue_text(m)) < len(messages)
    assert stats.messages_per_s > 0 and stats.db_bytes > 0


def test_and_returns_best_sessions_whose_best_message_has_both_terms(archive, sessions):
    messages = _messages(sessions)
    hits = archive.search('"sqlite" AND "timeout"')
    assert 0 < len(hits) <= 20
    assert len({h.session_id for h in hits}) == len(hits)
    assert [h.score for h in hits] == sorted(h.score for h in hits)  # bm25: lower is better
    for h in hits:
        words = dialogue_text(messages[h.message_id]).lower()
        assert "sqlite" in words and "timeout" in words


def test_the_role_filter_and_phrases_hold(archive, sessions):
    messages = _messages(sessions)
    hits = archive.search('"retry" AND "timeout"', role="assistant")
    assert hits and all(messages[h.message_id].role == "assistant" for h in hits)
    assert hits != archive.search('"retry" AND "timeout"')
    for h in archive.search('"database locked"'):
        assert "database locked" in dialogue_text(messages[h.message_id]).lower()
    either = {h.session_id for h in archive.search('"vacuum" OR "kubernetes"', limit=1000)}
    assert {h.session_id for h in archive.search('"vacuum"', limit=1000)} <= either


def test_diacritics_fold_both_ways_including_l_with_stroke(tmp_path: Path):
    session = units_pb2.Session(id="claude-code-session:pl", title="t", repo="r")
    message = session.messages.add(id="claude-code-session:pl:m0", role="user")
    message.blocks.add(type="text", text="Zrobiłem to łatwo w Łódź")
    db = Fts5Archive(tmp_path / "pl.db")
    db.build([session])
    for query in ('"zrobilem"', '"zrobiłem"', '"latwo"', '"lodz"', '"Łódź"'):
        assert [h.session_id for h in db.search(query)] == [session.id], query
    assert pl_fold("Łódź łatwo") == "Lódź latwo"
    db.close()


def test_the_query_set_is_deterministic_and_runs_on_fts5(archive):
    queries = build_queries(per_class=12)
    assert queries == build_queries(per_class=12)
    assert [q.kind for q in queries] == [k for k in CLASSES for _ in range(12)]
    for q in queries:
        a, b = q.words
        assert {
            "and": f"{a} {b}",
            "or": f"{a} OR {b}",
            "phrase": f'"{a} {b}"',
            "and_role": f"{a} {b} role:assistant",
        }[q.kind] == q.quarry
        assert q.role == ("assistant" if q.kind == "and_role" else "")
    answered = {k: sum(1 for q in queries if q.kind == k and archive.search(q.fts_match, q.role)) for k in CLASSES}
    assert all(n >= 6 for n in answered.values()), answered


def test_latency_is_measured_per_class_and_overall(archive):
    queries = build_queries(per_class=5)
    latency = measure(lambda q: archive.search(q.fts_match, q.role), queries)
    assert set(latency) == {*CLASSES, "all"}
    assert len(latency["all"].samples_ms) == 20
    for lat in latency.values():
        assert 0 < lat.p50 <= lat.p95


def test_a_reader_of_the_built_archive_answers_as_the_writer_and_cannot_write(archive):
    # The cost bench gives each client thread its own read-only connection, as an application would.
    reader = Fts5Archive.reader(archive.path)
    try:
        for q in build_queries(per_class=3):
            assert reader.search(q.fts_match, q.role) == archive.search(q.fts_match, q.role)
        with pytest.raises(sqlite3.OperationalError):
            reader.db.execute("DELETE FROM messages")
    finally:
        reader.close()
