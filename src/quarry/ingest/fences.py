"""Fenced code inside prose: a text block holding ``` or ~~~ fences becomes text and code blocks.

The fences follow CommonMark: an opening line of at least three backticks or tildes, indented by at
most three spaces, whose info string's first word is the language; the block ends at a line of the
same character, at least as long, and nothing else; an unclosed fence runs to the end of the text.
The fence lines themselves are dropped; the prose around the code keeps its text, minus the blank
lines that separated it from the fence.
"""

from __future__ import annotations

import re

_OPENING = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*?)\s*$")


def has_fence(text: str) -> bool:
    """A cheap test that may say yes for text without a fence at a line start; never no for one."""
    return "```" in text or "~~~" in text


def split_fenced(text: str) -> list[tuple[str, str, str]]:
    """(type, text, language) pieces of `text` in order: "text" prose and "code" fenced blocks.

    Empty pieces are dropped; text without a fence comes back as one text piece."""
    pieces: list[tuple[str, str, str]] = []
    prose: list[str] = []
    code: list[str] = []
    fence = ""
    language = ""
    for line in text.splitlines(keepends=True):
        if fence:
            if _closes(line, fence):
                _append(pieces, "code", code, language)
                code, fence = [], ""
            else:
                code.append(line)
            continue
        match = _OPENING.match(line.rstrip("\r\n"))
        if match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
            _append(pieces, "text", prose, "")
            prose = []
            fence = match.group(1)
            info = match.group(2).strip().split()
            language = info[0].strip("{}.") if info else ""
            continue
        prose.append(line)
    if fence:
        _append(pieces, "code", code, language)
    _append(pieces, "text", prose, "")
    return pieces


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    indent = len(line) - len(line.lstrip(" "))
    return indent <= 3 and len(stripped) >= len(fence) and stripped == fence[0] * len(stripped)


def _append(pieces: list[tuple[str, str, str]], kind: str, lines: list[str], language: str) -> None:
    text = "".join(lines)
    text = text.strip("\r\n") if kind == "text" else text.rstrip("\r\n")
    if text.strip():
        pieces.append((kind, text, language))
