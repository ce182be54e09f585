"""What a session's prompts say: the text of a user message without the harness wrappers around it.

Agents wrap context they inject in tags (`<ide_opened_file>…</ide_opened_file>`,
`<environment_context>…`); a text block that is only such a wrapper is not what anyone asked.
Titles and the session-start context snapshot both read prompts this way.
"""

from __future__ import annotations

import re

from quarry.ingest.sources import DraftMessage

# Text that is only a harness wrapper such as <ide_opened_file>…</ide_opened_file>.
_WRAPPED = re.compile(r"\A\s*<([A-Za-z][\w-]*)[^>]*>.*</\1>\s*\Z", re.DOTALL)


def prompt_text(message: DraftMessage) -> str:
    """The message's prose and code blocks that are not only a wrapper, joined by newlines."""
    return "\n".join(
        block.text
        for block in message.blocks
        if block.type in ("text", "code") and block.text.strip() and not _WRAPPED.match(block.text)
    )


def first_prompt(messages: list[DraftMessage]) -> DraftMessage | None:
    """The first user message with prompt text a human authored; failing that, the first user message
    with prompt text of any kind (a subagent's instruction, injected context). Log-only branches are
    not the session's prompts."""
    fallback = None
    for message in messages:
        if message.role != "user" or message.surface == "log-only" or not prompt_text(message):
            continue
        if message.authored:
            return message
        if fallback is None:
            fallback = message
    return fallback
