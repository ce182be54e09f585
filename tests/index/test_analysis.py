"""Word analysis shared by indexing and querying (docs/query-language.md#how-words-match, issue 5): identifiers
whole and by parts, English stems beside exact words, stopwords dropped from unquoted queries only (not
the negations), folding, Chinese word segmentation, and the rebuild after an analyzer upgrade."""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
import tantivy

from quarry.dsl.compile import compile_query
from quarry.index.lexical import analyzer, fts, schema, session_rows
from quarry.index.lexical.partition import LexicalPartition
from quarry.index.lexical.store import Store
from quarry.v1 import index_pb2, plan_pb2, units_pb2
from tests.index.conftest import sid
from tests.index.sessions import Msg, Tool, session


def _corpus() -> list[units_pb2.Session]:
    return [
        session("profile", [Msg("user", "the bug is in connection_profile.py, line 40")]),
        session("words", [Msg("user", "a connection pool and a user profile")]),
        session("refactored", [Msg("assistant", "I refactored the pool module yesterday")]),
        session("exact", [Msg("assistant", "still refactoring the parser")]),
        session("timeout", [Msg("user", "the request hit a timeout again")]),
        session("timeouts", [Msg("user", "timeout timeout, every call times out")]),
        session("article", [Msg("user", "the")]),
        session("negation", [Msg("user", "it is not working without the cache")]),
        session("working", [Msg("user", "the cache is working")]),
        session("polish", [Msg("user", "Zrobiłem migrację w Łódź")]),
        session("chinese", [Msg("user", "我们的数据库连接超时了")]),
        session("chinese-other", [Msg("user", "的确如此")]),
        session(
            "tool",
            [Msg("assistant", "running it", tools=[Tool("Bash", "shell", summary="refactored output", command="ls")])],
        ),
    ]


@pytest.fixture(scope="module")
def partition(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LexicalPartition]:
    lexical = LexicalPartition(Path(tmp_path_factory.mktemp("analysis")), 0)
    lexical.upsert(_corpus())
    yield lexical
    lexical.close()


def hits(partition: LexicalPartition, query: str, lane: str = "dialogue") -> list[index_pb2.PartitionHit]:
    request = index_pb2.PartitionSearchRequest(plan=compile_query(query).plan, lane=lane, limit=20, with_snippets=True)
    return list(partition.search(request).hits)


def found(partition: LexicalPartition, query: str, lane: str = "dialogue") -> set[str]:
    return {h.session.id.split(":", 1)[1] for h in hits(partition, query, lane)}


def scores(partition: LexicalPartition, query: str) -> dict[str, float]:
    return {h.session.id: h.score for h in hits(partition, query)}


def test_identifiers_are_found_whole_and_by_their_parts(partition: LexicalPartition) -> None:
    assert found(partition, "connection_profile.py") == {"profile"}  # whole: its parts in order, not scattered
    assert found(partition, "connection") == {"profile", "words"}
    assert found(partition, "profile") == {"profile", "words"}
    assert found(partition, "profile_connection") == set()


def test_unquoted_words_match_by_stem_quoted_words_exactly(partition: LexicalPartition) -> None:
    assert found(partition, "refactoring") == {"refactored", "exact"}
    assert found(partition, '"refactoring"') == {"exact"}
    assert found(partition, "refactored") == {"refactored", "exact"}
    assert found(partition, "timeouts") == {"timeout", "timeouts"}
    # the actions lane has no stems: paths and commands are matched as written
    assert found(partition, "refactored", lane="actions") == {"tool"}
    assert found(partition, "refactoring", lane="actions") == set()


def test_unquoted_stopwords_are_dropped_quoted_ones_searched(partition: LexicalPartition) -> None:
    assert scores(partition, "the timeout") == scores(partition, "timeout")
    assert set(scores(partition, "timeout")) == {sid("timeout"), sid("timeouts")}
    assert "article" in found(partition, '"the"')
    assert "article" in found(partition, "the")  # only stopwords: they are kept, or nothing could be found
    # a quoted stopword inside a phrase still counts
    assert found(partition, '"hit a timeout"') == {"timeout"}
    assert found(partition, '"hit the timeout"') == set()


def test_negations_are_not_stopwords(partition: LexicalPartition) -> None:
    assert found(partition, "not working") == {"negation"}
    assert found(partition, "working") == {"negation", "working"}
    assert found(partition, "without cache") == {"negation"}


def test_folding_in_both_directions(partition: LexicalPartition) -> None:
    assert found(partition, "zrobilem") == {"polish"}
    assert found(partition, "lodz") == {"polish"}
    assert found(partition, "Łódź") == {"polish"}
    assert found(partition, "migracje") == {"polish"}


def test_chinese_text_is_segmented_into_words(partition: LexicalPartition) -> None:
    assert found(partition, "数据库") == {"chinese"}
    assert found(partition, "超时") == {"chinese"}
    assert found(partition, "数据库连接") == {"chinese"}  # an unsegmented query run: its words
    assert found(partition, '"数据库连接"') == {"chinese"}  # quoted: the words in order
    assert found(partition, '"连接数据库"') == set()
    # 的 is a stopword: dropped from the unquoted query, so it neither narrows nor adds matches
    assert scores(partition, "的 数据库") == scores(partition, "数据库")
    assert "chinese-other" not in found(partition, "的 数据库")
    assert found(partition, '"的"') == {"chinese"}  # quoted, it is searched (的确 is one word of its own)


def test_matched_terms_are_the_query_words_as_found(partition: LexicalPartition) -> None:
    (hit,) = [h for h in hits(partition, "refactoring parser") if h.session.id == sid("exact")]
    assert list(hit.matched_terms) == ["refactoring", "parser"]
    by_session = {h.session.id: list(h.matched_terms) for h in hits(partition, "refactoring OR yesterday")}
    assert by_session[sid("refactored")] == ["refactoring", "yesterday"]
    assert by_session[sid("exact")] == ["refactoring"]
    (chinese,) = hits(partition, "的 数据库")
    assert list(chinese.matched_terms) == ["数据库"]


def test_snippets_mark_the_words_a_stem_or_a_chinese_word_matched(partition: LexicalPartition) -> None:
    (hit,) = [h for h in hits(partition, "refactoring") if h.session.id == sid("refactored")]
    assert hit.snippet == "I [refactored] the pool module yesterday"
    (chinese,) = hits(partition, "数据库")
    assert chinese.snippet == "我们的[数据库]连接超时了"


def test_blocks_match_as_their_field_does(partition: LexicalPartition) -> None:
    """A dialogue block matches an unquoted word by stem, a tool block only as written (as the
    `text_stem` and `actions` fields do in Tantivy)."""

    def block_ids(query: str) -> set[str]:
        request = index_pb2.PartitionUnitsRequest(plan=compile_query(query).plan, limit=50)
        return {r.sort_id for r in partition.query_units(request).rows}

    stemmed = block_ids("blocks where text:refactoring")
    assert {i.split(":m")[0] for i in stemmed} == {sid("refactored"), sid("exact")}
    assert {i.split(":m")[0] for i in block_ids("blocks where text:refactored")} == {
        sid("refactored"),
        sid("exact"),
        sid("tool"),
    }


def test_analyzers_agree_with_tantivy_and_keep_negations() -> None:
    english = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple()).filter(tantivy.Filter.stopword("english")).build()
    probe = " ".join([*analyzer.ENGLISH_STOPWORDS, "no", "not", "nor", "never", "without", "timeout"])
    assert english.analyze(probe) == ["nor", "never", "without", "timeout"]  # Tantivy drops ours and no / not
    assert analyzer.stem_tokens(probe) == ["no", "not", "nor", "never", "without", "timeout"]
    assert analyzer.stem_tokens("不 没 没有 无 非 的 了") == ["不", "没", "没有", "无", "非"]
    text = "The Refactored connection_profile.py 我们的数据库 zrobiłem"
    assert analyzer.stem_tokens(text) == [s for s in map(analyzer.stem, analyzer.tokens(text)) if s]


def test_latin_text_does_not_load_the_segmenter() -> None:
    """Segmentation costs nothing for text without Han characters: it is returned as is, and the
    segmenter's dictionary is never loaded (checked in a fresh interpreter)."""
    text = "Zrobiłem connection_profile.py — naïve café"
    assert analyzer.segment(text) is text
    code = (
        "import sys\n"
        "from quarry.index.lexical import session_rows\n"
        "from tests.index.conftest import corpus\n"
        "for s in corpus(): session_rows.decompose(s, 1, range(len(s.messages)))\n"
        "assert 'rjieba' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[2])


def _old_schema() -> tantivy.Schema:
    """The schema of analyzer version 1: exact fields only, no `text_stem`."""
    sb = tantivy.SchemaBuilder()
    sb.add_text_field(schema.TEXT, tokenizer_name=analyzer.ANALYZER_NAME, index_option="position")
    sb.add_text_field(schema.ACTIONS, tokenizer_name=analyzer.ANALYZER_NAME, index_option="position")
    for name in (schema.ROLE, schema.ORIGIN, schema.REPO, schema.TAG):
        sb.add_text_field(name, tokenizer_name="raw", index_option="basic")
    sb.add_integer_field(schema.SESSION_ORD, indexed=True, fast=True)
    sb.add_integer_field(schema.MESSAGE_ORD, fast=True)
    sb.add_integer_field(schema.TIME, fast=True)
    return sb.build()


def test_an_index_of_an_older_analyzer_is_rebuilt_from_the_store(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    partition = LexicalPartition(tmp_path, 0)
    partition.upsert(_corpus())
    summaries = partition.get_sessions([s.id for s in _corpus()])
    partition.close()
    directory = tmp_path
    store = Store(directory / "store.sqlite3")
    store_uuid = store.store_uuid
    documents = [
        doc
        for session, session_ord, message_ords in store.load_sessions(store.all_ords())
        for doc in session_rows.decompose(session, session_ord, message_ords, rows=False).documents
    ]
    store.close()

    # the index as version 1 wrote it: same documents, no stemmed field, no version file
    shutil.rmtree(directory / "tantivy")
    (directory / "tantivy").mkdir()
    old = tantivy.Index(_old_schema(), path=str(directory / "tantivy"))
    old.register_tokenizer(analyzer.ANALYZER_NAME, analyzer.build_analyzer())
    writer = old.writer()
    for doc in documents:
        fields = orjson.loads(doc)
        del fields[schema.TEXT_STEM]
        writer.add_json(orjson.dumps(fields).decode())
    writer.commit()
    writer.wait_merging_threads()
    del writer, old
    assert schema.index_version(directory / "tantivy") == 1

    with caplog.at_level(logging.WARNING, logger="quarry.index.lexical"):
        reopened = LexicalPartition(tmp_path, 0)
    try:
        assert schema.index_version(directory / "tantivy") == analyzer.VERSION
        assert any("rebuilt" in r.getMessage() for r in caplog.records)
        assert found(reopened, "refactoring") == {"refactored", "exact"}  # searchable the new way
        assert found(reopened, "数据库") == {"chinese"}
        assert reopened.stats().documents == len(documents)
        # records, ids and the change feed's identity are untouched
        assert reopened.get_sessions([s.id for s in _corpus()]) == summaries
        assert reopened.embed_feed(0, 100).store_uuid == store_uuid
    finally:
        reopened.close()
    caplog.clear()
    again = LexicalPartition(tmp_path, 0)  # the current version opens as it is
    again.close()
    assert not any("rebuil" in r.getMessage() for r in caplog.records)


def test_compiled_leaves_carry_exact_tokens_and_stems() -> None:
    def compiled(expr: plan_pb2.FtsExpr) -> fts.Fts | None:
        return fts.compile_fts(expr)

    term = compiled(plan_pb2.FtsExpr(term="Refactoring"))
    assert term == fts.Fts("term", ("refactoring",), raw="Refactoring", stem="refactor")
    quoted = compiled(plan_pb2.FtsExpr(phrase="Refactoring"))
    assert quoted is not None and quoted.kind == "term" and not quoted.stem
    identifier = compiled(plan_pb2.FtsExpr(term="connection_profile.py"))
    assert identifier is not None and identifier.kind == "phrase"
    assert identifier.tokens == ("connection", "profile", "py")
    chinese = compiled(plan_pb2.FtsExpr(term="我们的数据库"))
    assert chinese is not None and chinese.kind == "all"
    assert [c.tokens for c in chinese.children] == [("我们",), ("数据库",)]


def test_two_forms_of_one_word_score_as_one_term(partition: LexicalPartition) -> None:
    assert scores(partition, "timeouts timeout") == scores(partition, "timeout")
    assert scores(partition, "timeout timeout") == scores(partition, "timeout")
