"""Ranked and unranked session search on one partition: what a user sees for the queries they type."""

from __future__ import annotations

import pytest

from quarry.core.errors import QuarryError
from quarry.index.lexical.partition import LexicalPartition
from quarry.v1 import errors_pb2, plan_pb2
from tests.index import plans as p
from tests.index.conftest import HOUR, sid
from tests.index.sessions import BASE_MS, Msg, Tool, session


def hit_ids(partition: LexicalPartition, request) -> list[str]:
    return [h.session.id for h in partition.search(request).hits]


def test_plain_ascii_finds_polish_diacritics_including_l_stroke(loaded: LexicalPartition) -> None:
    assert hit_ids(loaded, p.search(p.text("zrobilem"))) == [sid("polish")]
    assert hit_ids(loaded, p.search(p.text("lodz"))) == [sid("polish")]
    assert hit_ids(loaded, p.search(p.text("latwo", "dziala"))) == [sid("polish")]
    # and the accented form finds the same message
    assert hit_ids(loaded, p.search(p.text("Łódź"))) == [sid("polish")]


def test_and_requires_all_words_in_the_same_message(loaded: LexicalPartition) -> None:
    found = hit_ids(loaded, p.search(p.text("sqlite", "locking")))
    assert set(found) == {sid("lock-same"), sid("lock-user")}  # lock-split has them in two messages
    # two separate fts leaves in one `all` group are still message-level
    split_leaves = p.all_(p.text("sqlite"), p.text("locking"))
    assert set(hit_ids(loaded, p.search(split_leaves))) == set(found)


def test_or_not_phrase_and_prefix(loaded: LexicalPartition) -> None:
    either = p.fts(p.fts_any(p.term("kangaroo"), p.term("zebra")))
    assert set(hit_ids(loaded, p.search(either))) == {sid(s) for s in ("tie-a", "tie-b", "zebra-hi", "zebra-lo")}

    sqlite_not_wal = p.fts(p.fts_all(p.term("sqlite"), p.fts_not(p.term("wal"))))
    # message-level NOT: lock-same still has a sqlite message without "wal" (the user's)
    assert set(hit_ids(loaded, p.search(sqlite_not_wal))) == {
        sid("lock-same"),
        sid("lock-split", "codex-session"),
        sid("lock-user"),
    }
    sqlite_not_locking = p.fts(p.fts_all(p.term("sqlite"), p.fts_not(p.term("locking"))))
    assert hit_ids(loaded, p.search(sqlite_not_locking)) == [sid("lock-split", "codex-session")]

    assert hit_ids(loaded, p.search(p.fts(p.phrase("locking keeps failing")))) == [sid("lock-same")]
    assert hit_ids(loaded, p.search(p.fts(p.phrase("failing keeps locking")))) == []

    assert set(hit_ids(loaded, p.search(p.fts(p.prefix("kanga"))))) == {sid("tie-a"), sid("tie-b")}
    assert hit_ids(loaded, p.search(p.fts(p.prefix("migr")))) == [sid("polish")]  # migrację and migration


def test_word_that_analyzes_to_several_tokens_is_a_phrase(loaded: LexicalPartition) -> None:
    assert hit_ids(loaded, p.search(p.text("connection_profile"))) == [sid("tools")]
    assert hit_ids(loaded, p.search(p.text("profile_connection"))) == []


def test_role_filter_holds_in_the_matching_message(loaded: LexicalPartition) -> None:
    assistant = p.all_(p.text("sqlite", "locking"), p.field("role", "assistant"))
    assert hit_ids(loaded, p.search(assistant)) == [sid("lock-same")]
    user = p.all_(p.text("sqlite", "locking"), p.field("role", "user"))
    assert set(hit_ids(loaded, p.search(user))) == {sid("lock-same"), sid("lock-user")}
    # a negated role inside the group: the words in a message that is not the user's
    not_user = p.all_(p.text("sqlite", "locking"), p.not_(p.field("role", "user")))
    assert hit_ids(loaded, p.search(not_user)) == [sid("lock-same")]


def test_role_filter_does_not_change_scores(loaded: LexicalPartition) -> None:
    plain = {h.session.id: h for h in loaded.search(p.search(p.text("sqlite", "locking"))).hits}
    user = p.all_(p.text("sqlite", "locking"), p.field("role", "user"))
    filtered = {h.session.id: h for h in loaded.search(p.search(user)).hits}
    # lock-user's best message is its user message: same message, same BM25 with or without the filter
    assert filtered[sid("lock-user")].message_id == plain[sid("lock-user")].message_id
    assert filtered[sid("lock-user")].score == pytest.approx(plain[sid("lock-user")].score, rel=1e-6)


def test_session_field_filters(loaded: LexicalPartition) -> None:
    base = p.text("sqlite")
    assert set(hit_ids(loaded, p.search(p.all_(base, p.field("repo", "QUARRY"))))) == {
        sid("lock-same"),
        sid("lock-user"),
    }
    assert hit_ids(loaded, p.search(p.all_(base, p.field("origin", "codex-session")))) == [
        sid("lock-split", "codex-session")
    ]
    assert hit_ids(loaded, p.search(p.all_(base, p.field("tag", "active")))) == [sid("lock-same")]
    assert set(hit_ids(loaded, p.search(p.all_(base, p.not_(p.field("tag", "stale")))))) == {
        sid("lock-same"),
        sid("lock-user"),
    }
    either_repo = p.any_(p.field("repo", "other"), p.field("tag", "active"))
    assert set(hit_ids(loaded, p.search(p.all_(base, either_repo)))) == {
        sid("lock-same"),
        sid("lock-split", "codex-session"),
    }
    # a title filter is evaluated in SQL, folded and case-insensitive
    assert hit_ids(loaded, p.search(p.all_(p.text("migration"), p.field("title", "LODZ")))) == [sid("polish")]
    assert hit_ids(loaded, p.search(p.all_(base, p.field("title", "lodz")))) == []
    # an allow-list from another lane
    assert hit_ids(loaded, p.search(p.all_(base, p.ids(sid("lock-user"), sid("polish"))))) == [sid("lock-user")]
    assert hit_ids(loaded, p.search(p.all_(base, p.ids("claude-code-session:not-here")))) == []


def test_session_id_filters(loaded: LexicalPartition) -> None:
    base = p.text("sqlite")
    assert hit_ids(loaded, p.search(p.all_(base, p.field("session", sid("lock-user"))))) == [sid("lock-user")]
    both = p.field("session", sid("lock-user"), sid("lock-same"))
    assert set(hit_ids(loaded, p.search(p.all_(base, both)))) == {sid("lock-user"), sid("lock-same")}
    assert set(hit_ids(loaded, p.search(p.all_(base, p.not_(p.field("session", sid("lock-user"))))))) == {
        sid("lock-same"),
        sid("lock-split", "codex-session"),
    }
    # an id this partition does not hold matches nothing, and its negation everything
    assert hit_ids(loaded, p.search(p.all_(base, p.field("session", "claude-code-session:nope")))) == []
    assert len(hit_ids(loaded, p.search(p.all_(base, p.not_(p.field("session", "x:nope")))))) == 3


def test_action_filters_on_sessions(loaded: LexicalPartition) -> None:
    assert hit_ids(loaded, p.search(p.all_(p.text("pool"), p.field("tool", "bash")))) == [sid("tools")]
    assert hit_ids(loaded, p.search(p.all_(p.text("pool"), p.field("action", "file_edit")))) == [sid("tools")]
    by_path = p.all_(p.text("pool"), p.field("path", "db/connection_profile.py"))
    assert hit_ids(loaded, p.search(by_path)) == [sid("tools")]
    assert hit_ids(loaded, p.search(p.all_(p.text("pool"), p.field("tool", "webfetch")))) == []


def test_ranking_order_and_ties_break_on_session_id(loaded: LexicalPartition) -> None:
    zebras = loaded.search(p.search(p.text("zebra"))).hits
    assert [h.session.id for h in zebras] == [sid("zebra-hi"), sid("zebra-lo")]
    assert zebras[0].score > zebras[1].score > 0
    ties = loaded.search(p.search(p.text("kangaroo"))).hits
    assert [h.session.id for h in ties] == [sid("tie-a"), sid("tie-b")]
    assert ties[0].score == ties[1].score
    assert all(h.ranked for h in ties)


def test_limit_keeps_the_best_sessions(loaded: LexicalPartition) -> None:
    response = loaded.search(p.search(p.fts(p.fts_any(p.term("zebra"), p.term("kangaroo"))), limit=1))
    assert len(response.hits) == 1
    assert response.hits[0].session.id == sid("zebra-hi")
    assert response.matched_sessions >= 1


def test_hit_evidence_message_snippet_and_terms(loaded: LexicalPartition) -> None:
    (hit,) = loaded.search(p.search(p.all_(p.text("sqlite", "locking"), p.field("role", "assistant")))).hits
    assert hit.message_id == f"{sid('lock-same')}:m1"
    assert hit.match_surface == "message"
    assert list(hit.matched_terms) == ["sqlite", "locking"]
    assert "[sqlite]" in hit.snippet and "[locking]" in hit.snippet
    assert (
        hit.snippet.replace("[", "").replace("]", "")
        in "The sqlite database is in WAL mode; locking happens on every write."
    )
    assert hit.session.title == "SQLite locking"
    assert not hit.session.messages and not hit.session.actions  # a summary
    assert hit.sort_time_ms == hit.session.updated_ms > 0

    (polish,) = loaded.search(p.search(p.text("lodz"))).hits
    assert "[Łódź]" in polish.snippet  # the original text, highlighted where the folded term matched
    assert list(polish.matched_terms) == ["lodz"]

    (prefixed,) = loaded.search(p.search(p.fts(p.prefix("migr")))).hits
    assert prefixed.matched_terms and all(t.startswith("migr") for t in prefixed.matched_terms)
    assert "[" in prefixed.snippet

    (either,) = loaded.search(p.search(p.fts(p.fts_any(p.term("zebra"), p.term("nothere"))), limit=1)).hits
    assert list(either.matched_terms) == ["zebra"]


def test_snippets_keep_the_text_exactly_around_the_marks(fresh: LexicalPartition) -> None:
    text = "a <b>&amp; tag</b> & 'quoted' \"x\" > y [zebra] zebra"
    fresh.upsert([session("markup", [Msg("user", text)])])
    (hit,) = fresh.search(p.search(p.text("zebra"))).hits
    assert hit.snippet == "a <b>&amp; tag</b> & 'quoted' \"x\" > y [[zebra]] [zebra]"


def test_snippets_are_optional(loaded: LexicalPartition) -> None:
    hits = loaded.search(p.search(p.text("zebra"), snippets=False)).hits
    assert hits and all(h.snippet == "" for h in hits)


def test_ranking_text_scores_while_where_filters(loaded: LexicalPartition) -> None:
    # where: sessions with a "sqlite" message; ranking: by "locking"
    response = loaded.search(p.search(p.text("sqlite"), ranking=p.term("locking")))
    assert {h.session.id for h in response.hits} <= {
        sid("lock-same"),
        sid("lock-user"),
        sid("lock-split", "codex-session"),
    }
    assert list(response.hits[0].matched_terms) == ["locking"]


def test_actions_lane_searches_tool_traffic_not_dialogue(loaded: LexicalPartition) -> None:
    assert hit_ids(loaded, p.search(p.text("pytest"))) == []
    (hit,) = loaded.search(p.search(p.text("pytest"), lane="actions")).hits
    assert hit.session.id == sid("tools")
    assert hit.match_surface == "action"
    assert "[pytest]" in hit.snippet
    # tool output is action text too; the body an Edit wrote is not indexed
    assert hit_ids(loaded, p.search(p.text("failed"), lane="actions")) == [sid("tools")]
    assert hit_ids(loaded, p.search(p.text("secretbody"), lane="actions")) == []
    assert hit_ids(loaded, p.search(p.text("connection_profile"), lane="actions")) == [sid("tools")]


def test_actions_lane_finds_and_shows_a_command_kept_only_in_the_action(fresh: LexicalPartition) -> None:
    hidden = Tool("Bash", "shell", summary="run the release script", command="make deploy-prod")
    fresh.upsert([session("deploy", [Msg("assistant", "shipping it", tools=[hidden])])])
    (hit,) = fresh.search(p.search(p.text("deploy"), lane="actions")).hits
    assert hit.session.id == sid("deploy")
    assert hit.message_id == f"{sid('deploy')}:m0"
    assert "[deploy]" in hit.snippet and "release script" in hit.snippet


def test_without_text_sessions_are_listed_by_update_time(loaded: LexicalPartition) -> None:
    response = loaded.search(p.search(p.field("repo", "quarry"), limit=3))
    assert [h.session.id for h in response.hits] == [sid("zebra-hi"), sid("zebra-lo"), sid("tie-a")]
    assert all(not h.ranked and h.score == 0 for h in response.hits)
    assert [h.sort_time_ms for h in response.hits] == sorted((h.sort_time_ms for h in response.hits), reverse=True)
    assert response.matched_sessions == 7
    everything = loaded.search(p.search(None, limit=100))
    assert len(everything.hits) == 9


def test_match_session_ids_returns_every_match(loaded: LexicalPartition) -> None:
    assert loaded.match_session_ids(p.text("sqlite")) == sorted(
        [sid("lock-same"), sid("lock-split", "codex-session"), sid("lock-user")]
    )
    where = p.any_(p.all_(p.text("sqlite", "locking"), p.field("role", "assistant")), p.field("tag", "stale"))
    assert loaded.match_session_ids(where) == sorted([sid("lock-same"), sid("lock-split", "codex-session")])
    assert loaded.match_session_ids(p.not_(p.field("repo", "quarry"))) == sorted(
        [sid("lock-split", "codex-session"), sid("polish")]
    )
    assert len(loaded.match_session_ids(plan_pb2.Predicate())) == 9
    # "tools" has 5 messages (each tool call adds a tool message); every other session has 1 or 2
    assert loaded.match_session_ids(p.field("messages", "3", op=plan_pb2.GE)) == [sid("tools")]
    assert len(loaded.match_session_ids(p.field("messages", "1", op=plan_pb2.LE))) == 4
    # times: epoch ms or ISO dates against the session's update time
    assert loaded.match_session_ids(p.field("since", str(BASE_MS + 9 * HOUR))) == [sid("zebra-hi")]
    # BASE_MS is 2025-06-15T15:06:40Z; zebra-hi, updated 9 h later, is the only one on the 16th
    assert len(loaded.match_session_ids(p.field("date", "2025-06-15"))) == 8
    assert loaded.match_session_ids(p.field("date", "2025-06-16", op=plan_pb2.GE)) == [sid("zebra-hi")]
    assert len(loaded.match_session_ids(p.field("until", "2025-06-15"))) == 8


def test_get_sessions_keeps_the_order_asked_and_skips_unknown(loaded: LexicalPartition) -> None:
    got = loaded.get_sessions([sid("zebra-hi"), "claude-code-session:nope", sid("polish")])
    assert [s.id for s in got] == [sid("zebra-hi"), sid("polish")]
    assert all(not s.messages for s in got)


def test_typed_errors(loaded: LexicalPartition) -> None:
    with pytest.raises(QuarryError) as unknown:
        loaded.search(p.search(p.all_(p.text("sqlite"), p.field("colour", "red"))))
    assert unknown.value.code == errors_pb2.UNKNOWN_FIELD
    with pytest.raises(QuarryError) as lane:
        loaded.search(p.search(p.text("sqlite"), lane="semantic"))
    assert lane.value.code == errors_pb2.INVALID_REQUEST
    with pytest.raises(QuarryError) as semantic:
        loaded.match_session_ids(plan_pb2.Predicate(semantic="pool failures"))
    assert semantic.value.code == errors_pb2.UNSUPPORTED_FORM


def test_text_without_tokens_matches_nothing(loaded: LexicalPartition) -> None:
    assert hit_ids(loaded, p.search(p.text("!!!"))) == []


def test_ties_across_pages_still_break_on_session_id(fresh: LexicalPartition) -> None:
    # 50 equal messages, newest id indexed first: the smallest ids come last in Tantivy's order
    fresh.upsert([session(f"same-{n:02d}", [Msg("user", "wombat burrow")]) for n in reversed(range(50))])
    hits = fresh.search(p.search(p.text("wombat"), limit=3)).hits
    assert [h.session.id for h in hits] == [sid(f"same-{n:02d}") for n in range(3)]
    assert fresh.search(p.search(p.text("wombat"), limit=3)).matched_sessions == 50
