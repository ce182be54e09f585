"""The shared analyzer through the query node of a two-partition cluster: what a user types finds what the
agents wrote, whatever the inflection, the accents, the identifier's parts or the script, while a
quoted word stays exact."""

from __future__ import annotations

import pytest

from quarry.client.client import QuarryClient
from tests.index.sessions import Msg, session

pytestmark = pytest.mark.cluster

TEXTS = {
    "identifier": "I moved the retry settings into connection_profile.py so both clients share them.",
    "inflected": "We refactored the parser yesterday and the benchmarks improved.",
    "exact": "Refactoring plan: split the parser module before touching the lexer.",
    "polish": "Zrobiłem migrację bazy w Łodzi.",
    "chinese": "我们的数据库连接超时了，需要增加重试。",
    "stopwords": "The timeout of the worker was raised to thirty seconds.",
}


@pytest.fixture(scope="module")
def archive(light_client: QuarryClient) -> QuarryClient:
    sessions = [session(f"analysis-{name}", [Msg("user", text)]) for name, text in TEXTS.items()]
    report = light_client.ingest_sessions(sessions)
    assert report.sessions_written == len(TEXTS), report
    return light_client


def found(client: QuarryClient, query: str) -> set[str]:
    return {h.session.id.removeprefix("claude-code-session:analysis-") for h in client.search(query, limit=50).hits}


@pytest.mark.parametrize("query", ["connection_profile.py", "connection", "profile", "connection_profile"])
def test_an_identifier_is_found_whole_and_by_its_parts(archive: QuarryClient, query: str) -> None:
    assert "identifier" in found(archive, query)


def test_unquoted_words_match_their_inflections_and_quoted_words_stay_exact(archive: QuarryClient) -> None:
    assert {"inflected", "exact"} <= found(archive, "refactoring")
    assert found(archive, '"refactoring"') == {"exact"}
    assert "inflected" in found(archive, "benchmark improvement parser")


def test_folding_finds_accented_text_from_plain_letters(archive: QuarryClient) -> None:
    assert found(archive, "zrobilem") == {"polish"}
    assert found(archive, "lodzi") == {"polish"}


def test_chinese_text_is_segmented_into_words(archive: QuarryClient) -> None:
    assert found(archive, "数据库") == {"chinese"}
    assert found(archive, "连接 超时") == {"chinese"}


def test_stopwords_are_dropped_unless_quoted(archive: QuarryClient) -> None:
    unquoted = archive.search("the timeout", limit=50)
    assert [h.session.id.rsplit("-", 1)[1] for h in unquoted.hits] == ["stopwords"]
    assert "the" not in {t.lower() for t in unquoted.hits[0].match.matched_terms}
    assert found(archive, '"the" timeout') == {"stopwords"}
    assert {"identifier", "inflected", "exact", "stopwords"} <= found(archive, '"the"')
