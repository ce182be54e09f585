"""Redaction of exported transcripts: secrets, home directories and email addresses, each replaced by a
visible marker saying what was removed.

Secrets are what detect-secrets (pinned, 1.5.0) finds, with every detector its default configuration
enables, run on each line of a text without its global settings (so no detector's `verify` ever sends a
found secret anywhere, and concurrent exports do not share state):
- the pattern detectors (AWS, GitHub, GitLab, Slack, Stripe, OpenAI, JWT, private keys, public IP
  addresses, …): each match of their patterns, whole;
- the keyword detector (`password = "…"`, `api_key: …`): the value it reports;
- the high-entropy string detectors: quoted strings above their default entropy limits.
A private key is removed from its `-----BEGIN` line to its `-----END` line (the whole key, not only the
header the detector recognizes). Then email addresses become `[redacted: email]` and home directories
(`/home/NAME`, `/Users/NAME`, `C:\\Users\\NAME`) become `~`.

This is best-effort: a secret no detector recognizes (an unquoted password in prose, a key split across
messages) stays. docs/transcripts.md says so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from functools import cache

from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.plugins.base import BasePlugin, RegexBasedDetector
from detect_secrets.plugins.high_entropy_strings import HighEntropyStringsPlugin
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.keyword import CONFIG_DENYLIST_REGEX_TO_GROUP, KeywordDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector

EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
HOME = re.compile(
    r"(?<![\w/])/(?:home|Users)/[^/\s\"'`<>|:;,]+"  # /home/ana, /Users/ana
    # C:\Users\ana, C:/Users/ana, and C:\\Users\\ana as JSON writes it
    r"|\b[A-Za-z]:(?:\\{1,2}|/)Users(?:\\{1,2}|/)[^\\/\s\"'`<>|:;,]+",
    re.IGNORECASE,
)
PEM_BLOCK = re.compile(r"-----BEGIN[^\n]*?-----.*?(?:-----END[^\n]*?-----|\Z)", re.DOTALL)
JWT_TAIL = re.compile(r"[A-Za-z0-9_.+/=-]*")  # the signature the detector's lazy pattern stops before
EMAIL_MARK = "[redacted: email]"


def marker(kind: str) -> str:
    return f"[redacted: {kind}]"


class Redactor:
    """`redactor(text)`: the text with what it found replaced (module docstring)."""

    def __call__(self, text: str) -> str:
        if not text:
            return text
        text = PEM_BLOCK.sub(_private_key, text)
        text = "\n".join(_redact_line(line) for line in text.split("\n"))
        text = EMAIL.sub(EMAIL_MARK, text)
        return HOME.sub("~", text)


def _private_key(block: re.Match[str]) -> str:
    header = block.group(0).partition("\n")[0]
    found = any(regex.search(header) for regex in PrivateKeyDetector.denylist)
    return marker(PrivateKeyDetector.secret_type) if found else block.group(0)


def _redact_line(line: str) -> str:
    spans = sorted(_secret_spans(line), key=lambda span: (span[0], -span[1]))
    if not spans:
        return line
    out, at = [], 0
    for start, end, kind in spans:
        if start < at:  # inside a secret already removed
            continue
        out += [line[at:start], marker(kind)]
        at = end
    out.append(line[at:])
    return "".join(out)


def _secret_spans(line: str) -> Iterator[tuple[int, int, str]]:
    for detector in _detectors():
        kind = detector.secret_type
        if isinstance(detector, RegexBasedDetector):
            for regex in detector.denylist:
                for match in regex.finditer(line):
                    if match.end() == match.start():
                        continue
                    if not isinstance(detector, JwtTokenDetector):
                        yield match.start(), match.end(), kind
                    elif JwtTokenDetector.is_formally_valid(match.group(0)):
                        tail = JWT_TAIL.match(line, match.end())
                        yield match.start(), tail.end() if tail else match.end(), kind
        else:
            for value in _values(detector, line):
                yield from ((start, start + len(value), kind) for start in _occurrences(line, value))


def _values(detector: BasePlugin, line: str) -> Iterable[str]:
    if isinstance(detector, KeywordDetector):
        yield from detector.analyze_string(line)  # quoted values
        yield from detector.analyze_string(line, denylist_regex_to_group=CONFIG_DENYLIST_REGEX_TO_GROUP)
    elif isinstance(detector, HighEntropyStringsPlugin):
        entropy, limit = detector.calculate_shannon_entropy, detector.entropy_limit
        yield from (value for value in detector.analyze_string(line) if entropy(value) > limit)
    else:
        yield from detector.analyze_string(line)


def _occurrences(line: str, value: str) -> Iterator[int]:
    start = line.find(value) if value else -1
    while start >= 0:
        yield start
        start = line.find(value, start + len(value))


@cache
def _detectors() -> tuple[BasePlugin, ...]:
    """Every detector detect-secrets ships, in its default configuration; pattern detectors first, so a
    span they name keeps their name rather than an entropy detector's."""
    detectors = [plugin() for plugin in get_mapping_from_secret_type_to_class().values()]
    return tuple(sorted(detectors, key=lambda d: (isinstance(d, HighEntropyStringsPlugin), d.secret_type)))
