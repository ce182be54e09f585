"""A hit's snippet always holds its match whole (issue 28): a match near the end of a long message kept only
its first words (`…切换为[黑色]` for 黑色主题), because the excerpt was cut on a fixed grid."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from quarry.dsl.compile import compile_query
from quarry.index.lexical.partition import LexicalPartition
from quarry.ingest.parse import parse_bytes
from quarry.v1 import index_pb2, sessions_pb2
from tests.index.sessions import Msg, session

SNIPPET_CHARS = 160  # what a reader is shown at most, marks aside
_CHINESE = (
    "我们讨论了很多关于界面设计的问题，包括字体大小、颜色搭配、按钮位置以及导航栏的布局方式，"
    "最后用户希望能够在设置页面中增加一个开关，用来把整个应用的外观"
)
# Every cut of the lead-in: one of them puts the old fixed window's edge between 黑色 and 主题.
CHINESE = {f"zh{i}": _CHINESE[i:] + "切换为黑色主题。谢谢" for i in range(len(_CHINESE) - 40)} | {
    "zh-long": _CHINESE * 3 + "切换为黑色主题。" + _CHINESE,
}
ENGLISH = {f"en{i}": "word " * i + "now switch to the dark theme please" for i in range(20, 40)} | {
    "en-long": "the fonts and the colors " * 12 + "then switch to the dark theme please " + "and more " * 30,
    "en-spread": "dark mode first. " + "filler words here " * 20 + "a dark theme at last, " + "tail " * 20,
}


@pytest.fixture(scope="module")
def partition(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LexicalPartition]:
    lexical = LexicalPartition(Path(tmp_path_factory.mktemp("snippets")), 0)
    lexical.upsert([session(name, [Msg("user", text)]) for name, text in (CHINESE | ENGLISH).items()])
    yield lexical
    lexical.close()


def snippets(partition: LexicalPartition, query: str) -> dict[str, str]:
    plan = compile_query(query).plan
    request = index_pb2.PartitionSearchRequest(plan=plan, lane="dialogue", limit=100, with_snippets=True)
    return {h.session.id.split(":", 1)[1]: h.snippet for h in partition.search(request).hits}


def unmarked(snippet: str) -> str:
    return snippet.replace("[", "").replace("]", "")


@pytest.mark.parametrize(
    ("query", "texts", "marked"),
    [
        ("黑色主题", CHINESE, "[黑色][主题]"),
        ('"黑色主题"', CHINESE, "[黑色][主题]"),
        ("dark theme", ENGLISH, "[dark] [theme]"),
        ('"dark theme"', ENGLISH, "[dark] [theme]"),
    ],
)
def test_a_match_near_the_end_or_across_the_old_window_edge_is_shown_whole(
    partition: LexicalPartition, query: str, texts: dict[str, str], marked: str
) -> None:
    found = snippets(partition, query)
    assert set(found) == set(texts)
    for name, snippet in found.items():
        assert marked in snippet, name
        assert unmarked(snippet) in texts[name] and len(unmarked(snippet)) <= SNIPPET_CHARS


def test_the_window_prefers_the_place_holding_every_matched_word(partition: LexicalPartition) -> None:
    """`dark` alone opens the text; the window goes where both words are, with words before them."""
    snippet = snippets(partition, "dark theme")["en-spread"]
    assert snippet.startswith("filler words here filler words here a [dark] [theme] at last, tail")
    assert "[dark] mode" not in snippet


def test_a_short_text_is_shown_whole_and_a_long_one_cut_at_words(partition: LexicalPartition) -> None:
    assert snippets(partition, "dark theme")["en20"] == ENGLISH["en20"].replace("dark theme", "[dark] [theme]")
    long = snippets(partition, "dark theme")["en-long"]
    text = ENGLISH["en-long"]
    start = text.index(unmarked(long))
    assert text[start - 1] == " " and text[start + len(unmarked(long))] == " "  # whole words at both ends


def test_search_within_a_session_shows_a_chinese_match_far_into_its_event(tmp_path: Path) -> None:
    """The session API's search (docs/sessions.md): its excerpt began at the text's start when the
    matched word sat inside a run of Han characters, dropping a match past the first 200 characters."""
    text = _CHINESE * 4 + "切换为黑色主题。"
    records = [
        {"type": "user", "sessionId": "zh", "uuid": "u1", "timestamp": "2026-01-05T10:00:00Z",
         "message": {"role": "user", "content": text}},
    ]  # fmt: skip
    (parsed,) = parse_bytes(b"\n".join(orjson.dumps(r) for r in records) + b"\n", "zh.jsonl").sessions
    lexical = LexicalPartition(tmp_path, 0)
    try:
        lexical.upsert([parsed])
        request = sessions_pb2.EventSearchRequest(session_id=parsed.id, query="黑色主题", limit=5)
        (item,) = lexical.search_events(sessions_pb2.PartitionSearchEvents(request=request)).items
    finally:
        lexical.close()
    assert "黑色主题" in item.snippet and item.snippet.startswith("…")
