"""What the agent did right after a failed tool call (`Action.followup`): a label read off the text of its
next turn, so it is a heuristic, documented as one, and this module is its whole rule.

For a failed action, the next turn is what the assistant writes after the call's result (after the call
when no result was recorded): the rest of that message when it is the assistant's own (Claude.ai's
server-side tools put calls, results and the reply in one message), then the run of assistant messages
that follows, up to the next message of another role (some agents write one turn as several messages:
thinking, then a call). Its prose is the text and code blocks of all that (thinking is not said to the
user):

- `acknowledged`: the prose speaks of the failure (ACKNOWLEDGING: error, fail, exit code, not found,
  traceback, retry, instead, …);
- `silent_proceed`: it has prose, and none of it speaks of the failure;
- `wordless_continuation`: it has no prose at all (only more tool calls);
- `ambiguous`: there is no next turn in the session (it ended, or was cut, after the failure).

Actions that did not fail carry no label ("").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from quarry.core.vocab import FOLLOWUP_CLASSES
from quarry.ingest.sources import DraftMessage

ACKNOWLEDGED, SILENT_PROCEED, WORDLESS_CONTINUATION, AMBIGUOUS = FOLLOWUP_CLASSES

_PROSE_TYPES = ("text", "code")
ACKNOWLEDGING = re.compile(
    r"\b(?:errors?|errored|fail|fails|failed|failing|failures?|exit code|exit status|non-zero|nonzero|"
    r"traceback|exceptions?|not found|no such|does not exist|doesn't exist|missing|denied|refused|timed out|"
    r"timeout|broke|broken|didn't work|did not work|wrong|issues?|problems?|mistake|oops|sorry|"
    r"retry|retrying|retried|try again|instead|couldn't|could not|can't|cannot|unable|invalid|fix|fixed|fixing)\b",
    re.IGNORECASE,
)


def followup(messages: Sequence[DraftMessage], after_seq: int, after_block: int = -1) -> str:
    """The label of a failure whose result is block `after_block` of message `after_seq` (see the
    module's rule)."""
    own = messages[after_seq]
    blocks = list(own.blocks[after_block + 1 :]) if own.role == "assistant" and after_block >= 0 else []
    running = bool(blocks)  # the assistant's turn goes on in the next messages
    for message in messages[after_seq + 1 :]:
        if message.role == "assistant":
            blocks.extend(message.blocks)
            running = True
        elif running:
            break
    if not blocks:
        return AMBIGUOUS
    prose = " ".join(b.text for b in blocks if b.type in _PROSE_TYPES and b.text.strip())
    if not prose:
        return WORDLESS_CONTINUATION
    return ACKNOWLEDGED if ACKNOWLEDGING.search(prose) else SILENT_PROCEED
