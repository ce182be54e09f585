"""What became of each edit an Aider reply asked for, read from what aider printed after it: the one
SEARCH/REPLACE block its error names failed (not every block of that file), "Add file to the chat?" is no
answer about an edit, "Skipping edits to …" fails the file's edits, and a block naming no file is no edit.
The console text is aider's own (aider/coders/base_coder.py `allowed_to_edit`, editblock_coder.py)."""

from __future__ import annotations

from quarry.ingest.parse import parse_bytes
from quarry.v1 import units_pb2

HEADER = "\n# aider chat started at 2026-03-01 10:00:00\n\n"
BANNER = "> Aider v0.86.1  \n> Main model: anthropic/claude-sonnet-4 with diff edit format  \n> Git repo: .git  \n"
USAGE = "> Tokens: 1.2k sent, 80 received. Cost: $0.01 message, $0.01 session.  \n"


def block(path: str, search: str, replace: str) -> str:
    return f"{path}\n```python\n<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n```\n"


def session_of(reply: str, console: str) -> units_pb2.Session:
    text = f"{HEADER}{BANNER}\n#### change things  \n\n{reply.strip()}\n\n{USAGE}{console}"
    result = parse_bytes(text.encode(), "h.md")
    (session,) = result.sessions
    return session


def edits(session: units_pb2.Session) -> list[tuple[str, bool]]:
    return [(a.path, a.failed) for a in session.actions if a.category == "file_edit"]


SIX = [
    ("app.py", "a = 1", "a = 2"),
    ("app.py", "b = 1", "b = 2"),
    ("app.py", "c = 1", "c = 2"),
    ("lib.py", "d = 1", "d = 2"),
    ("lib.py", "e = 1", "e = 2"),
    ("cli.py", "f = 1", "f = 2"),
]


def test_one_failed_block_of_six_fails_only_that_block() -> None:
    reply = "Here are the edits:\n\n" + "\n".join(block(*edit) for edit in SIX)
    error = (
        "> The LLM did not conform to the edit format.  \n"
        "> https://aider.chat/docs/troubleshooting/edit-errors.html  \n"
        "> # 1 SEARCH/REPLACE block failed to match!\n\n"
        "## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in app.py\n"
        "<<<<<<< SEARCH\nb = 1\n=======\nb = 2\n>>>>>>> REPLACE\n\n"
        "The SEARCH section must exactly match an existing block of lines including all white space, comments, "
        "indentation, docstrings, etc\n\n"
        "# The other 5 SEARCH/REPLACE blocks were applied successfully.\n"
        "Don't re-send them.\n"
        "Just reply with fixed versions of the block above that failed to match.  \n"
    )
    session = session_of(reply, error)
    assert edits(session) == [
        ("app.py", False),
        ("app.py", True),
        ("app.py", False),
        ("lib.py", False),
        ("lib.py", False),
        ("cli.py", False),
    ]
    failed = next(a for a in session.actions if a.failed)
    assert '"search":"b = 1"' in failed.input_json
    assert "failed to exactly match lines in app.py" in failed.output
    applied = [a.output for a in session.actions if not a.failed]
    assert set(applied) == {"# The other 5 SEARCH/REPLACE blocks were applied successfully."}


def test_declining_to_add_a_mentioned_file_is_not_declining_its_edit() -> None:
    reply = block("app.py", "a = 1", "a = 2") + "\nYou may also want to look at docs/notes.md."
    # aider asks about the files a reply mentions before it applies the reply's edits
    console = (
        "> app.py  \n"
        "> Add file to the chat? (Y)es/(N)o/(A)ll/(S)kip all/(D)on't ask again [Yes]: n  \n"
        "> docs/notes.md  \n"
        "> Add file to the chat? (Y)es/(N)o/(A)ll/(S)kip all/(D)on't ask again [Yes]: n  \n"
        "> Applied edit to app.py  \n"
        "> Commit 1a2b3c4 fix: change a  \n"
    )
    session = session_of(reply, console)
    # one edit, applied: the "n" answered whether to add the file to the chat
    assert edits(session) == [("app.py", False)]
    assert session.actions[0].output == "Applied edit to app.py"


def test_a_skipped_edit_is_a_failed_edit() -> None:
    reply = block("build/out.py", "a = 1", "a = 2") + "\n" + block("src/main.py", "b = 1", "b = 2")
    console = "> Skipping edits to build/out.py that matches gitignore spec.  \n> Applied edit to src/main.py  \n"
    session = session_of(reply, console)
    assert edits(session) == [("build/out.py", True), ("src/main.py", False)]
    assert session.actions[0].output == "Skipping edits to build/out.py that matches gitignore spec."


def test_a_declined_edit_outside_the_chat_fails_once() -> None:
    reply = block("other.py", "a = 1", "a = 2")
    console = (
        "> other.py  \n"
        "> Allow edits to file that has not been added to the chat? (Y)es/(N)o [Yes]: n  \n"
        "> Skipping edits to other.py  \n"
    )
    session = session_of(reply, console)
    assert edits(session) == [("other.py", True)]
    assert session.actions[0].output.startswith("declined: Allow edits to file")


def test_a_skipped_edit_the_reply_made_in_a_way_not_read_is_still_an_edit() -> None:
    session = session_of("I rewrote notes.txt for you.", "> Skipping edits to notes.txt  \n")
    assert edits(session) == [("notes.txt", True)]


def test_a_block_naming_no_file_is_no_edit() -> None:
    reply = "Change this:\n\n```\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```\n"
    error = (
        "> The LLM did not conform to the edit format.  \n"
        "> https://aider.chat/docs/troubleshooting/edit-errors.html  \n"
        "> Bad/missing filename. The filename must be alone on the line before the opening fence ```  \n"
    )
    text = f"{HEADER}{BANNER}\n#### change x  \n\n{reply}\n{USAGE}{error}"
    result = parse_bytes(text.encode(), "h.md")
    (session,) = result.sessions
    assert [a for a in session.actions if a.category == "file_edit"] == []
    assert all(a.path for a in session.actions)
    # the block stays the reply's text, and the file says one block named no file
    assert "<<<<<<< SEARCH" in "\n".join(b.text for m in session.messages for b in m.blocks if m.role == "assistant")
    assert dict(result.skipped_record_types) == {"aider:unnamed-edit": 1}
