"""The acceptance of the foundation, on real node processes: lanes, fusion, tracing, durability,
typed errors, tolerant ingest."""

from __future__ import annotations

import signal

import grpc
import orjson
import pytest
from opentelemetry import trace

from quarry.cli.synthetic import generate_sessions
from quarry.core.errors import QuarryError, from_rpc_error
from quarry.v1 import errors_pb2, query_pb2
from tests.cluster.corpus import SESSIONS, session_id, write_session

pytestmark = pytest.mark.cluster


def first(envelope: query_pb2.SearchEnvelope) -> str:
    assert envelope.hits, f"no hits for {envelope.query!r}"
    return envelope.hits[0].session.id


def test_lexical_search_ranks_the_matching_session_first(client, corpus):
    envelope = client.search("sqlite locking", lane="dialogue")
    assert envelope.retrieval_lane == "dialogue"
    assert first(envelope) == session_id("sqlite")
    hit = envelope.hits[0].match
    assert hit.score_kind == "bm25" and hit.rank == 1
    assert hit.message_id.startswith(session_id("sqlite"))
    assert {"sqlite", "locking"} <= {t.lower() for t in hit.matched_terms}


def test_auto_resolves_prose_to_hybrid_and_the_query_language_to_dialogue_and_says_so(client, corpus):
    prose = client.search("flexbox")
    assert (prose.requested_lane, prose.retrieval_lane, prose.reading) == ("auto", "hybrid", "prose")
    assert prose.ranking_policy == "mixed-bm25-rrf-vector" and prose.ranking_policy_version == 3
    assert first(prose) == session_id("css")
    phrase = client.search('"flexbox"')
    assert (phrase.retrieval_lane, phrase.reading) == ("dialogue", "query")
    assert first(phrase) == session_id("css")
    assert client.search("flexbox", reading="query").retrieval_lane == "dialogue"


def test_diacritics_fold_both_ways_including_l_with_stroke(client, corpus):
    assert first(client.search("zrobilem latwo")) == session_id("polish")
    assert first(client.search("Łódź OR lodzi")) == session_id("polish")


def test_field_filters_narrow_the_search(client, corpus):
    ledger = client.search("repo:ledger")
    assert {h.session.id for h in ledger.hits} == {session_id("sqlite"), session_id("retry")}
    assert all(not h.match.HasField("score") for h in ledger.hits)
    assert first(client.search("timeout repo:ledger role:assistant")) in {
        session_id("retry"),
        session_id("sqlite"),
    }


def test_semantic_search_finds_a_paraphrase(client, corpus):
    envelope = client.search("two processes write the same database file at once", lane="semantic")
    assert envelope.retrieval_lane == "semantic"
    assert first(envelope) == session_id("sqlite")
    assert envelope.hits[0].match.score_kind == "vector_distance"


def test_near_id_selects_the_sessions_nearest_to_one_session(client, corpus):
    envelope = client.search(f"near:id:{session_id('retry')}")
    found = {hit.session.id for hit in envelope.hits}
    assert session_id("retry") not in found  # the session itself is not near itself
    assert found and found <= {session_id(key) for key in corpus}
    narrowed = client.search(f"near:id:{session_id('retry')} AND repo:{SESSIONS['sqlite'][0]}")
    assert {hit.session.id for hit in narrowed.hits} <= found


def test_hybrid_hit_in_both_lanes_carries_both_rrf_terms(client, corpus):
    by_rank = query_pb2.SearchControls(fusion=query_pb2.Fusion(method="rrf"))
    envelope = client.search("database locked writers", lane="hybrid", controls=by_rank)
    assert envelope.retrieval_lane == "hybrid"
    assert first(envelope) == session_id("sqlite")
    match = envelope.hits[0].match
    components = dict(match.score_components)
    assert {"text_rank", "text_rrf", "vector_rank", "vector_rrf"} <= set(components)
    assert match.score_kind == "rrf"
    terms = [value for name, value in components.items() if name.endswith("_rrf")]
    assert match.score == pytest.approx(sum(terms), rel=1e-12)  # text, vector, and action when it matched too
    assert components["text_rrf"] == pytest.approx(1 / (60 + components["text_rank"]))


@pytest.mark.parametrize("limit", [20, 1])
def test_hybrid_hits_show_the_evidence_their_lexical_lane_gives(client, corpus, limit):
    # The hybrid lane fuses rank-only lexical answers whose nodes explain only their best page's worth;
    # hits further down a lane (a later page of a cursor walk) are explained afterwards. Either way each
    # hit shows what the lane that found it shows for that session (the dialogue match first), with its
    # summary.
    query = "database OR image OR toolbar OR migracji OR timeout OR tokenizer"  # one word a session
    dialogue = {h.session.id: h for h in client.search(query, lane="dialogue", limit=50).hits}
    actions = {h.session.id: h for h in client.search(query, lane="actions", limit=50).hits}
    explained = 0
    pages = walk(client, query, lane="hybrid", limit=limit)
    for hit in (hit for page in pages for hit in page.hits):
        lexical = dialogue.get(hit.session.id) or actions.get(hit.session.id)
        if lexical is None:  # the vector lane's alone: its nearest message
            assert hit.match.message_id.startswith(hit.session.id) and hit.session.origin
            continue
        assert hit.session == lexical.session
        evidence = ("message_id", "snippet", "match_surface", "target_ref", "matched_terms")
        assert [getattr(hit.match, name) for name in evidence] == [getattr(lexical.match, name) for name in evidence]
        explained += 1
    assert explained >= 5
    if limit == 1:  # hits past the nodes' first explained ones took the second round
        assert any("complete" in page.timings_ms for page in pages[2:])


def test_a_prose_searchs_hits_carry_their_session_and_evidence(client, corpus):
    # Prose is ranked rank-only with relaxed admission (no message needs every word); completing the
    # page searches again restricted to its sessions, and must admit them the same way, or every hit of
    # the default search comes back as a bare id.
    prose = "database image toolbar migracji timeout tokenizer"
    envelope = client.search(prose, lane="hybrid", limit=10, reading="prose")
    dialogue = {h.session.id for h in client.search(prose, lane="dialogue", limit=50, reading="prose").hits}
    assert len(envelope.hits) >= 5
    for hit in envelope.hits:
        assert hit.session.origin and hit.session.title, hit.session.id
        if hit.session.id in dialogue:
            assert hit.match.snippet and hit.match.matched_terms, hit.session.id


def walk(client, query: str, lane: str, limit: int) -> list:
    """Every page of a cursor walk."""
    pages = [client.search(query, lane=lane, limit=limit)]
    while pages[-1].next_cursor:
        pages.append(client.search(query, lane=lane, limit=limit, cursor=pages[-1].next_cursor))
    return pages


def test_unit_query_returns_message_rows(client, corpus):
    envelope = client.query_units("messages where role:assistant AND text:timeout")
    assert envelope.unit == "messages"
    assert envelope.rows, envelope
    assert all(r.message.role == "assistant" for r in envelope.rows)
    assert {r.session_id for r in envelope.rows} == {session_id("sqlite"), session_id("retry")}


def test_an_invalid_query_is_invalid_argument_with_its_position(client, corpus):
    with pytest.raises(grpc.RpcError) as raised:
        client.query.Search(query_pb2.SearchRequest(query="sessions where repo:ledger AND ("), timeout=10)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    error = from_rpc_error(raised.value)
    assert error.code == errors_pb2.INVALID_QUERY
    assert error.offset == len("sessions where repo:ledger AND (")
    with pytest.raises(QuarryError) as slip:
        client.search("sqlite reop:ledger")
    assert slip.value.code == errors_pb2.UNKNOWN_FIELD and slip.value.offset == len("sqlite ")
    assert "repo" in str(slip.value)
    assert client.search("colour:blue sqlite").reading == "prose"  # no field a user could mean
    with pytest.raises(QuarryError) as unknown:
        client.search("colour:blue sqlite", reading="query")
    assert unknown.value.code == errors_pb2.UNKNOWN_FIELD and unknown.value.offset == 0


def test_a_malformed_line_is_reported_and_the_rest_of_the_file_ingested(client, corpus, tmp_path):
    turns = [("user", "Why is the cache warmer so slow?"), ("assistant", "It rebuilds every key serially.")]
    good = write_session(tmp_path, "malformed", "cachekit", turns).read_bytes().splitlines()
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(b"\n".join([good[0], b'{"type": "user", "message": {', good[1]]) + b"\n")
    events = list(client.ingest_paths([broken]))
    report = events[-1].report
    issues = [(i.path, i.line, i.code) for i in report.issues]
    assert (str(broken), 2, "malformed_json") in issues, report.issues
    assert report.sessions_written == 1
    rows = client.query_units(f"messages where session.id:{session_id('malformed')}")
    assert [r.message.role for r in rows.rows] == ["user", "assistant"]


def test_reingesting_the_same_files_changes_nothing(client, corpus):
    before = {n.name: n.sessions for n in client.status().nodes if n.partitions}
    report = list(client.ingest_paths([next(iter(corpus.values())).parent]))[-1].report
    assert report.sessions_written == 0 and report.sessions_unchanged == len(corpus)
    after = {n.name: n.sessions for n in client.status().nodes if n.partitions}
    assert before == after and sum(before.values()) >= len(corpus)


def test_one_trace_holds_spans_from_every_node_kind(client, corpus, otlp_sink):
    tracer = trace.get_tracer("tests")
    with tracer.start_as_current_span("search-trace") as span:
        client.search("database locked", lane="hybrid")
    search_trace = format(span.get_span_context().trace_id, "032x")
    wanted = {"quarry-query", "quarry-vector"}  # the query node holds the partitions: it calls them in-process
    assert wanted <= otlp_sink.wait_for_services(search_trace, wanted)
    in_process = [n for n in otlp_sink.span_names_by_trace[search_trace] if n.startswith("quarry-query:/quarry.v1")]
    assert "quarry-query:/quarry.v1.IndexService/SearchLanes" in in_process

    sessions = list(generate_sessions(40, seed=11))
    with tracer.start_as_current_span("ingest-and-search") as span:
        client.ingest_sessions(sessions)
        client.search("sqlite", lane="hybrid")
    whole = format(span.get_span_context().trace_id, "032x")
    every_kind = {"quarry-ingest", *wanted}
    assert every_kind <= otlp_sink.wait_for_services(whole, every_kind)


def test_sigkill_of_a_partition_loses_no_acknowledged_session(client, cluster, corpus):
    sessions = list(generate_sessions(2000, seed=23))
    report = client.ingest_sessions(sessions)
    assert report.sessions_written + report.sessions_unchanged == len(sessions)
    cluster.kill("query", signal.SIGKILL)  # the node holding the partitions
    cluster.restart("query")
    missing = []
    for session in sessions:
        hits = client.search(f"session:{session.id}").hits
        if [h.session.id for h in hits] != [session.id]:
            missing.append(session.id)
    assert not missing, f"{len(missing)} acknowledged sessions lost after SIGKILL, e.g. {missing[:3]}"
    status = orjson.loads(orjson.dumps([n.up for n in client.status().nodes]))
    assert all(status)
