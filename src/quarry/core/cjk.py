"""Words of text written without spaces between them: Chinese, and the Han and kana runs of Japanese.

Whitespace separates words in most scripts, Korean included (Hangul is written with spaces between
words), but a Chinese sentence is one run of Han characters. `cut()` segments such a run into words
with the jieba dictionary (rjieba, no HMM guessing, so the same run always cuts the same way): the
index segments Chinese text with it (quarry.index.lexical.analyzer) and ingest counts words with it
(`count_words`). The dictionary loads on the first Han character seen (~0.2 s), so text without one
never pays for it.

`count_words(text)`, the `words` of messages and sessions (docs/query-language.md#message-fields):
- each whitespace-separated chunk without a Han or kana character is one word, as before;
- in a chunk with one, each Han run counts the words jieba cuts it into (`切换为黑色主题` is 切换 /
  为 / 黑色 / 主题: 4), each run of hiragana and each run of katakana counts one word (Japanese
  writes a particle or an inflection in hiragana and a loanword in katakana), and each piece between
  those runs that holds a letter or digit counts one (`用pytest跑测试` is 用 / pytest / 跑 / 测试: 4);
  punctuation alone (`。`, `，`) is no word.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

# CJK Unified Ideographs with extension A, the compatibility block and the supplementary planes.
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
HAN_RUN = re.compile(f"[{_HAN}]+")
# Han runs, hiragana runs, katakana runs (with the prolonged sound mark and half-width katakana).
_CJK_RUN = re.compile(f"([{_HAN}]+|[\u3041-\u309f]+|[\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f]+)")


@functools.cache
def _cutter() -> Callable[[str], list[str]]:
    import rjieba  # loads its dictionary: only once a text has Han characters

    return functools.partial(rjieba.cut, hmm=False)


def cut(run: str) -> list[str]:
    """The words of a run of Han characters, in order (jieba's dictionary, no HMM)."""
    return _cutter()(run)


def count_words(text: str) -> int:
    """The words of `text`: whitespace words, a Han run counted by its segmented words and a kana run
    as one (the module docstring has the rule)."""
    if text.isascii():
        return len(text.split())
    return sum(_chunk_words(chunk) for chunk in text.split())


def _chunk_words(chunk: str) -> int:
    if not _CJK_RUN.search(chunk):
        return 1
    words = 0
    for index, piece in enumerate(_CJK_RUN.split(chunk)):
        if index % 2 == 0:  # between the runs: a word when it holds a letter or a digit
            words += any(ch.isalnum() for ch in piece)
        elif HAN_RUN.fullmatch(piece):
            words += len(cut(piece))
        else:
            words += 1
    return words
