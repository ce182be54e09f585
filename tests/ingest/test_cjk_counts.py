"""Words of Chinese and Japanese text are counted as words, not as space-separated runs (issue 28): a whole
Chinese sentence was one word. The rule is quarry.core.cjk's; the expected counts here are written by hand
or, on real logs, cut in the test with the jieba dictionary the index uses."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest
import rjieba

from quarry.ingest.normalize import build_session
from quarry.ingest.parse import parse_file
from quarry.ingest.sources import DraftBlock, DraftMessage, DraftSession
from tests.shared_paths import REAL_LOGS, needs_shared

_HAN_ONLY = re.compile(r"[\u4e00-\u9fff]+")


def _session(*texts: tuple[str, str]) -> DraftSession:
    draft = DraftSession("claude-code-session", "cjk", "x.jsonl")
    for role, text in texts:
        message = draft.add_message(DraftMessage(role, True))
        draft.add_block(message, DraftBlock("text", text=text))
    return draft


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("我们的数据库连接超时了。", 6),  # 我们 / 的 / 数据库 / 连接 / 超时 / 了, the full stop no word
        ("把外观切换为黑色主题", 6),  # 把 / 外观 / 切换 / 为 / 黑色 / 主题
        ("用pytest跑测试", 4),  # 用 / pytest / 跑 / 测试
        ("先跑 make test 再看", 6),  # 先 / 跑 / make / test / 再 / 看: spaces still separate
        (
            "データベースの接続",
            4,
        ),  # データベース (katakana run) / の (hiragana run) / 接 / 続 (jieba, no Japanese entry)
        ("데이터베이스 연결이 시간 초과되었습니다", 4),  # Korean is written with spaces: whitespace words
        ("the request hit a timeout again", 6),
        ("Соединение с базой данных оборвалось", 5),
        ("", 0),
    ],
)
def test_message_words_count_chinese_and_japanese_by_their_words(text: str, words: int) -> None:
    session = build_session(_session(("user", text)))
    assert session.messages[0].words == words


def test_session_counts_add_the_segmented_words() -> None:
    session = build_session(_session(("user", "请把外观切换为黑色主题"), ("assistant", "好的，已经切换。")))
    # 请 / 把 / 外观 / 切换 / 为 / 黑色 / 主题, then 好 / 的 / 已经 / 切换 (the commas and stop no words)
    assert (session.counts.user_words, session.counts.assistant_words, session.counts.words) == (7, 4, 11)


def _chinese_prompts(path: Path) -> list[list[str]]:
    """The text blocks of each of the log's user records that hold Chinese, read with json in the test."""
    prompts = []
    for line in path.read_bytes().splitlines():
        record = orjson.loads(line)
        if record.get("type") != "user":
            continue
        content = record["message"]["content"]
        blocks = [content] if isinstance(content, str) else [b.get("text", "") for b in content if b["type"] == "text"]
        if any(_HAN_ONLY.search(text) for text in blocks):
            prompts.append(blocks)
    return prompts


def _expected_words(text: str) -> int:
    """Whitespace words, a run of Han characters counted by the words jieba cuts it into."""
    assert all(_HAN_ONLY.fullmatch(w) or not _HAN_ONLY.search(w) for w in text.split())  # no mixed word here
    return sum(len(rjieba.cut(w, hmm=False)) if _HAN_ONLY.fullmatch(w) else 1 for w in text.split())


@needs_shared
@pytest.mark.parametrize(
    "name",
    [
        "Xu-Wentao__dotfile__0286dfe3-da60-4357-9919-adca8b3b9cd4.jsonl",  # "[Image #1] 评价一下这个宠物"
        "Xu-Wentao__dotfile__814710e0-c005-483c-bcb2-727b2e09f73c.jsonl",  # an IDE selection, "解释下这个函数的逻辑"
    ],
)
def test_real_chinese_prompts_are_counted_by_their_words(name: str) -> None:
    path = REAL_LOGS / "claude_code" / name
    prompts = _chinese_prompts(path)
    assert prompts
    (session,) = parse_file(path).sessions
    by_text = {tuple(b.text for b in m.blocks if b.type == "text"): m for m in session.messages}
    for blocks in prompts:
        expected = sum(_expected_words(text) for text in blocks)
        assert by_text[tuple(blocks)].words == expected > sum(len(text.split()) for text in blocks)
