"""A failed action's followup label (quarry.ingest.followup) and its exit status: the rule on drafts
built for each branch, and on the real logs (read by hand: the turn after each failure)."""

from __future__ import annotations

import pytest

from quarry.ingest.followup import followup
from quarry.ingest.normalize import exit_status
from quarry.ingest.parse import parse_file
from quarry.ingest.sources import DraftBlock, DraftMessage
from tests.shared_paths import REAL_LOGS, needs_shared


def said(role: str, *blocks: tuple[str, str]) -> DraftMessage:
    return DraftMessage(role, authored=True, blocks=[DraftBlock(kind, text=text) for kind, text in blocks])


CALL = said("assistant", ("tool_use", "pytest -q"))
THINKS = said("assistant", ("thinking", "the error again"))
RESULT = said("tool", ("tool_result", "Exit code 1\n2 failed"))


@pytest.mark.parametrize(
    ("after", "label"),
    [
        ([said("assistant", ("text", "Two tests fail; the fixture is wrong, fixing it."))], "acknowledged"),
        ([said("assistant", ("text", "Now the README."))], "silent_proceed"),
        ([THINKS, said("assistant", ("tool_use", "pytest -x"))], "wordless_continuation"),
        ([THINKS, said("assistant", ("text", "Retrying with -x."))], "acknowledged"),
        ([], "ambiguous"),
        ([said("user", ("text", "stop"))], "ambiguous"),
        # a parallel call's result comes first: the turn is the assistant's next run of messages
        ([said("tool", ("tool_result", "ok")), said("assistant", ("text", "Done."))], "silent_proceed"),
    ],
)
def test_the_turn_after_a_failure_gives_its_label(after: list[DraftMessage], label: str) -> None:
    assert followup([CALL, RESULT, *after], after_seq=1) == label


@pytest.mark.parametrize(
    ("text", "status"),
    [
        ("Exit code 2\nmake: *** [test] Error 2", 2),
        ("Error: Exit code 1\nTraceback", 1),
        ("Command: ls\nExit Code: 0\nSignal: (none)", 0),
        ("Process exited with code 127\nOutput:", 127),
        ("the exit code was 3, see above", None),  # not a status line
        ("all passed", None),
    ],
)
def test_exit_status_is_read_from_the_result_s_first_lines(text: str, status: int | None) -> None:
    assert exit_status(DraftBlock("tool_result", text=text)) == status


@needs_shared
def test_real_logs_record_exit_codes_and_label_every_failure() -> None:
    codex = parse_file(
        REAL_LOGS
        / "codex"
        / "chunrui-qashier__md-http-server__rollout-2025-11-24T00-07-08-019ab178-1682-7892-912f-cd70b0725a0c.jsonl"
    ).sessions[0]
    listing = next(a for a in codex.actions if a.command.endswith("&& ls specs"))
    # `ls specs` failed (exit 1 in the output's metadata); the agent's next turn thinks, then runs sed: no prose
    assert (listing.exit_code, listing.followup) == (1, "wordless_continuation")
    for path in sorted(REAL_LOGS.glob("*/*.json*")):
        if path.parent.name not in ("claude_code", "codex", "gemini", "chatgpt"):
            continue
        for session in parse_file(path).sessions:
            for action in session.actions:
                assert bool(action.followup) == action.failed, (path.name, action.id)
