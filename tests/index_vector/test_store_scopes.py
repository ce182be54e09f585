"""The vector node counts per scope: a caller limited to team-a's sessions learns nothing of how many
vectors, queued texts or sessions team-b has (a session's scope is read off its id)."""

from __future__ import annotations

from pathlib import Path

from quarry.vector.store import VectorStore
from tests.index_vector.test_store_order import DAY_MS, embed_next, items


def test_counts_coverage_and_sessions_are_those_of_the_visible_scopes(tmp_path: Path) -> None:
    store = VectorStore(tmp_path / "vectors.sqlite")
    store.enqueue(
        items("team-a@claude-code-session:1", 3, "a", "b")
        + items("team-b@claude-code-session:1", 9, "c", "d", "e")
        + items("claude-code-session:x@y", 1, "f"),  # an @ in a native id is no scope's mark
        [],
    )
    embed_next(store, 2)  # team-b's newest texts
    assert store.counts() == (2, 4)
    assert store.counts(["team-a"]) == (0, 2)
    assert store.counts(["team-b"]) == (2, 1)
    assert store.counts(["default"]) == (0, 1)
    assert store.counts([]) == (0, 0)
    assert (store.embedded_sessions(["team-a"]), store.queued_sessions(["team-a"])) == (0, 1)
    assert (store.embedded_sessions(["team-b"]), store.queued_sessions(["team-a", "team-b"])) == (1, 2)
    assert store.coverage(["team-a"]).embedded_newest_ms == 0
    assert store.coverage(["team-b"]).embedded_newest_ms == 9 * DAY_MS
    store.close()
    reopened = VectorStore(tmp_path / "vectors.sqlite")  # the virtual column survives a reopen
    assert reopened.counts(["team-b"]) == (2, 1)
