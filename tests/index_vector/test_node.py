"""The vector node: durable queue, background embedding, FAISS search with sessions and allow-lists."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from quarry.core.errors import QuarryError
from quarry.core.outgoing import SCOPES
from quarry.v1 import errors_pb2, index_pb2, vector_pb2
from quarry.vector.embed import E5_MODEL, MINILM_MODELS, Embedder
from quarry.vector.node import STORE_FILE, VectorNode
from quarry.vector.store import VectorStore

from .conftest import (
    CORPUS,
    SQLITE_QUERY,
    EmbeddingsServer,
    corpus_items,
    corpus_size,
    message_id,
)

Opener = Callable[..., VectorNode]


def search(node: VectorNode, text: str, limit: int = 10, allow: list[str] | None = None):
    request = vector_pb2.VectorSearchRequest(
        text=text, limit=limit, allow_session_ids=allow or [], restrict_to_allowed=allow is not None
    )
    return node.search(request)


def hit_sessions(response: vector_pb2.VectorSearchResponse) -> list[str]:
    return [hit.session_id for hit in response.hits]


def test_related_text_ranks_first(corpus_node: VectorNode) -> None:
    response = search(corpus_node, SQLITE_QUERY)
    best = response.hits[0]
    assert best.session_id == "claude-code:sqlite"
    assert best.message_id == message_id("claude-code:sqlite", 0)  # "sqlite database is locked error ..."
    recipe = next(h for h in response.hits if h.session_id == "chatgpt:recipe")
    assert best.distance < recipe.distance - 0.2
    assert response.embed_ms > 0 and response.search_ms > 0


def test_hits_are_sessions_ordered_by_distance(corpus_node: VectorNode) -> None:
    response = search(corpus_node, SQLITE_QUERY)
    sessions = hit_sessions(response)
    assert sorted(sessions) == sorted(CORPUS)  # every session once, though sqlite has 3 messages near
    distances = [h.distance for h in response.hits]
    assert distances == sorted(distances)
    assert all(0 <= d <= 2 for d in distances)
    top_two = search(corpus_node, SQLITE_QUERY, limit=2)
    assert hit_sessions(top_two) == sessions[:2]


def test_distance_is_l2_between_unit_vectors(corpus_node: VectorNode, minilm: Embedder) -> None:
    best = search(corpus_node, SQLITE_QUERY).hits[0]
    query, text = minilm.embed([SQLITE_QUERY, CORPUS["claude-code:sqlite"][0]])
    assert best.distance == pytest.approx(float(np.linalg.norm(query - text)), abs=1e-4)


def test_allow_list_restricts_sessions(corpus_node: VectorNode) -> None:
    only_css = search(corpus_node, SQLITE_QUERY, allow=["codex:css"])
    assert hit_sessions(only_css) == ["codex:css"]
    two = search(corpus_node, SQLITE_QUERY, allow=["chatgpt:recipe", "codex:git", "nobody:else"])
    assert sorted(hit_sessions(two)) == ["chatgpt:recipe", "codex:git"]
    assert hit_sessions(search(corpus_node, SQLITE_QUERY, allow=[])) == []
    assert hit_sessions(search(corpus_node, SQLITE_QUERY, allow=["nobody:else"])) == []
    unrestricted = vector_pb2.VectorSearchRequest(text=SQLITE_QUERY, allow_session_ids=["codex:css"])
    assert len(corpus_node.search(unrestricted).hits) == len(CORPUS)


def test_small_allow_list_among_many_crowding_sessions(open_node: Opener, minilm: Embedder) -> None:
    """A far-away allowed session is found even when hundreds of nearer messages come first."""
    crowd = {f"codex:lock{i}": [f"sqlite database is locked, attempt {i} {j}" for j in range(4)] for i in range(40)}
    crowd["chatgpt:recipe"] = ["bake banana bread at 180 degrees"]
    node = open_node("minilm")
    node.enqueue(corpus_items(crowd))
    assert node.wait_idle(120)
    response = search(node, SQLITE_QUERY, limit=3, allow=["chatgpt:recipe"])
    assert [(h.session_id, h.message_id) for h in response.hits] == [("chatgpt:recipe", "chatgpt:recipe:m0")]
    # Without an allow-list, 161 messages of 41 sessions collapse to 30 distinct sessions.
    assert len(set(hit_sessions(search(node, SQLITE_QUERY, limit=30)))) == 30


def test_faiss_matches_sqlite_vec_exact_search(corpus_node: VectorNode, minilm: Embedder) -> None:
    for text in [SQLITE_QUERY, "merge conflicts", "dark mode colors", "sourdough"]:
        vector = minilm.embed([text])[0]
        approx = corpus_node.ann_search(vector, 6)
        exact = corpus_node.exact_search(vector, 6)
        assert [h.message_id for h in approx] == [h.message_id for h in exact]
        np.testing.assert_allclose([h.distance for h in approx], [h.distance for h in exact], atol=1e-5)


def test_reopen_rebuilds_faiss_with_the_same_results(corpus_node_dir: Path, open_node: Opener) -> None:
    first = open_node("minilm", corpus_node_dir)
    before = search(first, SQLITE_QUERY)
    first.close()
    second = open_node("minilm", corpus_node_dir)
    assert second.stats().vectors == corpus_size()
    assert second.ann_search(np.ones(384, dtype=np.float32) / np.sqrt(384), 100)  # FAISS is populated
    after = search(second, SQLITE_QUERY)
    assert [(h.session_id, h.message_id) for h in after.hits] == [(h.session_id, h.message_id) for h in before.hits]
    np.testing.assert_allclose([h.distance for h in after.hits], [h.distance for h in before.hits], atol=1e-6)


def test_unchanged_texts_are_not_queued_again(open_node: Opener, minilm: Embedder) -> None:
    node = open_node("minilm")
    first = node.enqueue(corpus_items())
    assert (first.queued, first.unchanged) == (corpus_size(), 0)
    again_while_queued = node.enqueue(corpus_items())
    assert (again_while_queued.queued, again_while_queued.unchanged) == (0, corpus_size())
    assert node.wait_idle(60)
    again = node.enqueue(corpus_items())
    assert (again.queued, again.unchanged) == (0, corpus_size())
    assert node.stats().pending == 0

    edited = [index_pb2.EmbedItem(message_id="codex:css:m0", session_id="codex:css", text="sqlite lock timeout")]
    assert node.enqueue(edited).queued == 1
    assert node.wait_idle(30)
    stats = node.stats()
    assert (stats.vectors, stats.pending) == (corpus_size(), 0)  # replaced, not added
    best = search(node, SQLITE_QUERY, allow=["codex:css"]).hits[0]
    assert best.message_id == "codex:css:m0"
    assert best.distance < 0.5


def test_replace_sessions_drops_messages_not_resent(corpus_node_dir: Path, open_node: Opener) -> None:
    node = open_node("minilm", corpus_node_dir)
    kept = index_pb2.EmbedItem(
        message_id=message_id("claude-code:sqlite", 2),
        session_id="claude-code:sqlite",
        text=CORPUS["claude-code:sqlite"][2],
    )
    response = node.enqueue([kept], replace_session_ids=["claude-code:sqlite", "codex:git"])
    assert (response.queued, response.unchanged) == (0, 1)
    assert node.stats().vectors == corpus_size() - 2 - 2
    hits = search(node, SQLITE_QUERY, allow=["claude-code:sqlite", "codex:git"]).hits
    assert [(h.session_id, h.message_id) for h in hits] == [("claude-code:sqlite", message_id("claude-code:sqlite", 2))]
    vector = node.ann_search(np.ones(384, dtype=np.float32) / np.sqrt(384), 100)
    assert len(vector) == corpus_size() - 4  # FAISS dropped them too


def test_blank_text_removes_the_message_vector(corpus_node_dir: Path, open_node: Opener) -> None:
    node = open_node("minilm", corpus_node_dir)
    blank = index_pb2.EmbedItem(message_id="codex:css:m1", session_id="codex:css", text="  ")
    response = node.enqueue([blank])
    assert (response.queued, response.unchanged) == (0, 0)
    assert [h.message_id for h in search(node, "dark mode", allow=["codex:css"]).hits] == ["codex:css:m0"]


def test_pending_texts_survive_a_restart(tmp_path: Path, open_node: Opener, minilm: Embedder) -> None:
    data_dir = tmp_path / "queue"
    idle = open_node("none", data_dir)
    assert idle.enqueue(corpus_items()).queued == corpus_size()
    stats = idle.stats()
    assert (stats.vectors, stats.pending, stats.embedder, stats.ready) == (0, corpus_size(), "", False)
    assert not idle.wait_idle(0.1)
    with pytest.raises(QuarryError) as caught:
        search(idle, SQLITE_QUERY)
    assert caught.value.code == errors_pb2.SEMANTIC_UNAVAILABLE
    assert "no embedder configured" in caught.value.message
    idle.close()

    node = open_node("minilm", data_dir)
    assert node.wait_idle(60)
    stats = node.stats()
    assert (stats.vectors, stats.pending) == (corpus_size(), 0)
    assert (stats.embedder, stats.model, stats.dimension) == (minilm.name, minilm.model, 384)
    assert search(node, SQLITE_QUERY).hits[0].session_id == "claude-code:sqlite"


def test_no_vectors_yet_is_semantic_unavailable(open_node: Opener, minilm: Embedder) -> None:
    node = open_node("minilm")
    with pytest.raises(QuarryError) as caught:
        search(node, SQLITE_QUERY)
    assert caught.value.code == errors_pb2.SEMANTIC_UNAVAILABLE
    assert caught.value.message == "no vectors yet: 0 pending"


def test_failing_embedder_keeps_texts_queued_and_recovers(
    open_node: Opener, embeddings_server: EmbeddingsServer
) -> None:
    embeddings_server.failing = True
    node = open_node(f"openai:{embeddings_server.url}#embed-small", batch_size=4)
    assert node.enqueue(corpus_items()).queued == corpus_size()
    deadline = time.monotonic() + 10
    while not node.stats().last_error and time.monotonic() < deadline:
        time.sleep(0.05)
    stats = node.stats()
    assert "503" in stats.last_error and not stats.ready
    assert (stats.vectors, stats.pending) == (0, corpus_size())
    with pytest.raises(QuarryError) as caught:
        search(node, "anything")
    assert caught.value.code == errors_pb2.SEMANTIC_UNAVAILABLE
    assert caught.value.message == f"no vectors yet: {corpus_size()} pending"

    embeddings_server.failing = False  # the worker retries after its back-off
    assert node.wait_idle(20)
    stats = node.stats()
    assert (stats.vectors, stats.pending, stats.last_error, stats.ready) == (corpus_size(), 0, "", True)
    assert (stats.embedder, stats.model, stats.dimension) == ("openai", "embed-small", 8)
    assert max(len(r["input"]) for r in embeddings_server.requests) == 4


def test_store_refuses_vectors_of_another_model(corpus_node_dir: Path, embeddings_server: EmbeddingsServer) -> None:
    node = VectorNode(corpus_node_dir, f"openai:{embeddings_server.url}#embed-small")
    with pytest.raises(QuarryError) as caught:
        node.start()
    assert caught.value.code == errors_pb2.BAD_VALUE
    assert "all-MiniLM-L6-v2" in caught.value.message


def test_plain_minilm_keeps_the_backend_that_made_the_store(tmp_path: Path) -> None:
    """A store the torch backend made stays torch under the default spec; naming int8 is refused."""
    store = VectorStore(tmp_path / STORE_FILE)
    store.set_model(MINILM_MODELS["minilm-torch"], 384)
    store.close()
    node = VectorNode(tmp_path, "minilm", embed_mode="manual")
    node.start()
    try:
        stats = node.stats()
        assert (stats.embedder, stats.model) == ("minilm-torch", MINILM_MODELS["minilm-torch"])
    finally:
        node.close()
    with pytest.raises(QuarryError) as caught:
        VectorNode(tmp_path, "minilm-int8").start()
    assert caught.value.code == errors_pb2.BAD_VALUE
    assert MINILM_MODELS["minilm-torch"] in caught.value.message


def test_unknown_embedder_spec_is_bad_value(tmp_path: Path) -> None:
    with pytest.raises(QuarryError) as caught:
        VectorNode(tmp_path, "word2vec")
    assert caught.value.code == errors_pb2.BAD_VALUE


def test_invalid_requests_are_typed(corpus_node: VectorNode) -> None:
    with pytest.raises(QuarryError) as empty_text:
        search(corpus_node, "   ")
    assert empty_text.value.code == errors_pb2.BAD_VALUE
    with pytest.raises(QuarryError) as negative:
        search(corpus_node, SQLITE_QUERY, limit=-1)
    assert negative.value.code == errors_pb2.BAD_VALUE
    with pytest.raises(QuarryError) as missing:
        corpus_node.enqueue([index_pb2.EmbedItem(message_id="x:m0", text="hello")])
    assert missing.value.code == errors_pb2.INVALID_REQUEST


def test_near_a_session_finds_the_others_by_its_mean_vector(open_node: Opener, minilm: Embedder) -> None:
    node = open_node("minilm")
    node.enqueue(corpus_items())
    assert node.wait_idle(120)
    near = node.search(vector_pb2.VectorSearchRequest(near_session_id="codex:git", limit=10))
    sessions = hit_sessions(near)
    assert sorted(sessions) == sorted(set(CORPUS) - {"codex:git"})  # every other session, not itself
    # The order is the order from the mean of the session's own texts, as a text search would rank it.
    centroid = minilm.embed(CORPUS["codex:git"]).mean(axis=0)
    exact = node._state.store.exact_search(centroid / np.linalg.norm(centroid), 20)
    by_distance = list(dict.fromkeys(ref.session_id for ref, _ in exact if ref.session_id != "codex:git"))
    assert sessions == by_distance


def test_near_a_session_without_vectors_is_semantic_unavailable(corpus_node: VectorNode) -> None:
    with pytest.raises(QuarryError) as error:
        corpus_node.search(vector_pb2.VectorSearchRequest(near_session_id="codex:unknown"))
    assert error.value.code == errors_pb2.SEMANTIC_UNAVAILABLE
    assert "codex:unknown" in error.value.message


@pytest.mark.parametrize(
    ("query", "session"),
    [("数据库被锁定，第二个写入者在等待", "claude-code:sqlite"), ("Git-Verlauf nach dem Rebase", "codex:git")],
)
def test_a_multilingual_node_finds_a_session_asked_about_in_another_language(
    open_node: Opener, query: str, session: str
) -> None:
    """Chinese and German questions find English sessions with the multilingual embedder, whose store
    records its own model."""
    node = open_node("e5-multilingual")
    node.enqueue(corpus_items())
    assert node.wait_idle(120)
    assert next(h.session_id for h in search(node, query, limit=3).hits) == session
    assert node.stats().model == E5_MODEL


def test_a_search_returns_only_the_callers_scopes_sessions(open_node: Opener, minilm: Embedder) -> None:
    """The vector node restricts every search to the scopes the call carries (quarry-scopes, set on a
    node only by a caller holding the cluster key), with or without an allow-list."""
    node = open_node("minilm")
    node.enqueue(
        corpus_items(
            {
                "codex:ours": ["sqlite database is locked while writing the cache"],
                "team-a@codex:theirs": ["sqlite database is locked during the migration"],
                "team-b@codex:other": ["sqlite database locked again in the worker"],
            }
        )
    )
    assert node.wait_idle(60)
    assert node.stats().scopes_enforced

    def as_caller(scopes: set[str] | None, allow: list[str] | None = None) -> list[str]:
        token = SCOPES.set(None if scopes is None else frozenset(scopes))
        try:
            return sorted(hit_sessions(search(node, SQLITE_QUERY, allow=allow)))
        finally:
            SCOPES.reset(token)

    assert as_caller(None) == ["codex:ours", "team-a@codex:theirs", "team-b@codex:other"]
    assert as_caller({"team-a"}) == ["team-a@codex:theirs"]
    assert as_caller({"default", "team-b"}) == ["codex:ours", "team-b@codex:other"]
    assert as_caller(set()) == []
    # An allow-list naming another scope's session does not reach past the caller's scopes.
    assert as_caller({"default"}, allow=["codex:ours", "team-a@codex:theirs"]) == ["codex:ours"]
    near = vector_pb2.VectorSearchRequest(near_session_id="codex:ours", limit=5)
    token = SCOPES.set(frozenset({"team-b"}))
    try:
        assert [h.session_id for h in node.search(near).hits] == ["team-b@codex:other"]
    finally:
        SCOPES.reset(token)
