"""Every agent format through a real cluster (2 partitions): all of ../shared/real-logs ingested at once; a
word that occurs in one file only finds that file's session first, for each format, and a unit query
finds the tool errors each format recorded; the costs the sources recorded are compared and summed."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from quarry.cli.local import LocalCluster
from quarry.client.client import QuarryClient
from quarry.core.errors import QuarryError
from quarry.ingest.parse import parse_file
from quarry.v1 import units_pb2
from tests.ingest.test_goose import build, msg, session_row, text
from tests.shared_paths import INGEST_ROOTS, REAL_LOGS, needs_shared

pytestmark = [pytest.mark.cluster, needs_shared, pytest.mark.shared]

# A word and the one real file that holds it (`grep -ril WORD ../shared/real-logs` names only that file, or
# for a Cline or Roo Code task only the files of that task).
# Goose's real database holds a session without messages: a database of our own stands in for it.
UNIQUE_WORDS = {
    "aider": ("libdispatch", "aider/0202alcc__luvatrix__.aider.chat.history.md"),
    "copilot-chat": ("devcontainer", "copilot/bunty1981__AI-copilot-vibe-app__copilot-chat.json"),
    "cursor (SpecStory)": (
        "gitservice",
        "cursor/edobry__minsky__.specstory__history__2025-04-29_20-13-session-start-error-for-task-008.md",
    ),
    "cursor (state.vscdb)": ("mathwork", "cursor/slevin48__cursor-history__state.vscdb"),
    "opencode": ("refundable", "opencode/rajsinghast03__skillpath__chat-export.json"),
    "crush": ("containerfile", "opencode_go/chad-russell__chex-mix-timer__.crush__crush.db"),
    "cline": (
        "gameaction",  # in the dialogue (not in the environment details Cline injects, which are not text)
        "cline/gmfstu__Online-Card-Architecture__exported_task_1769064454592__api_conversation_history.json",
    ),
    "roo-code": (
        "epita",
        "roo_code/jsboige__jsboige-mcp-servers__real-tasks__bc93a6f7-cd2e-4686-a832-46e3cd14d338__api_conversation_history.json",
    ),
}
GOOSE_WORD = "flibbertigibbet"
# Failed tool calls per origin, as each format's parser test counts them from the file (jq, sqlite3, grep).
FAILED = {
    "crush-session": 158,  # test_crush: 136 in crush.db, 22 in opencode.db
    "cursor-session": 17,  # test_cursor_db: 16 rejected or cancelled edits; test_cursor_markdown: 1 cancelled
    "copilot-chat-export": 4,
    "aider-session": 3,
    "cline-task": 3,
    "opencode-session": 2,  # test_opencode: 1 in the skillpath export; test_opencode_db: 1 in opencode.db
    "roo-code-task": 1,
}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[QuarryClient]:
    home = tmp_path_factory.mktemp("quarry-formats")
    logs = home / "logs"
    shutil.copytree(REAL_LOGS, logs)
    goose_reply = msg("assistant", text(f"the {GOOSE_WORD} step is done"))
    build(logs / "goose" / "ours.db", [session_row()], [msg("user", text("go")), goose_reply])
    cluster = LocalCluster(home / "cluster", partitions=2, embedder="none", ingest_roots=INGEST_ROOTS)
    cluster.start()
    try:
        info = cluster.info()
        with QuarryClient(info.query, info.ingest) as quarry:
            report = list(quarry.ingest_paths([logs]))[-1].report
            assert report.sessions_written >= 100, report
            yield quarry
    finally:
        cluster.stop()


def _holding(path: Path, word: str) -> set[str]:
    """The ids of the file's sessions whose dialogue holds the word."""
    return {s.id for s in parse_file(path).sessions if word in _text(s).lower()}


def _text(session: units_pb2.Session) -> str:
    return " ".join(b.text for m in session.messages for b in m.blocks)


@pytest.mark.parametrize("kind", sorted(UNIQUE_WORDS))
def test_a_word_only_one_file_holds_finds_its_session_first(client: QuarryClient, kind: str) -> None:
    word, file = UNIQUE_WORDS[kind]
    expected = _holding(REAL_LOGS / file, word)
    assert expected, f"{file} has no session holding {word}"
    hits = client.search(word, limit=5).hits
    assert hits and hits[0].session.id in expected, [h.session.id for h in hits]


def test_goose_s_word_finds_its_session(client: QuarryClient) -> None:
    hits = client.search(GOOSE_WORD, limit=5).hits
    assert [h.session.id for h in hits] == ["goose-session:20260101_1"]


def test_failed_actions_of_every_format_that_records_them(client: QuarryClient) -> None:
    envelope = client.query_units("actions where is_error:true | group by session.origin | count")
    counts = {group.key: group.count for group in envelope.groups}
    assert {origin: counts.get(origin, 0) for origin in FAILED} == FAILED


def test_costs_the_sources_recorded_are_compared_and_summed(client: QuarryClient) -> None:
    # The main runs over half a dollar (the parser tests count each from its file): Cline's task 2.200621,
    # Roo Code's 2.90000775, OpenCode's skillpath export 2.2804212, Continue's CLI session 2.881939;
    # Aider's 0.01346 and the OpenCode (Go) sessions' 0.0044034 and 0.20698245 are below.
    envelope = client.query_units(
        "runs where role:main AND cost_usd > 0.5 | group by session.origin | agg count, sum:cost_usd"
    )
    summed = {
        g.key: (g.count, round(next(v.value for v in g.values if v.name == "sum:cost_usd"), 6)) for g in envelope.groups
    }
    assert summed == {
        "cline-task": (1, 2.200621),
        "roo-code-task": (1, 2.900008),
        "opencode-session": (1, 2.280421),
        "continue-session": (1, 2.881939),  # test_continue: the CLI session's usage totals
    }
    cheap = client.query_units("runs where role:main AND cost_usd between 0.001 and 0.25", limit=10).rows
    assert sorted(round(r.run.cost_usd, 7) for r in cheap) == [0.0044034, 0.01346, round(0.20698245, 7)]
    # Aider prints each reply's cost: grep '^> Tokens:.*Cost' | sed -E 's/.*Cost: \$([0-9.]+) message.*/\1/' |
    # awk '$1 >= 0.001' | wc -l  -> 7 of its 12 replies
    priced = client.query_units("messages where session.origin:aider-session AND cost_usd >= 0.001", limit=20)
    assert len(priced.rows) == 7 and all(r.message.cost_usd >= 0.001 for r in priced.rows)


def test_a_decimal_where_a_whole_number_is_expected_is_a_typed_error(client: QuarryClient) -> None:
    with pytest.raises(QuarryError) as raised:
        client.query_units("runs where total_tokens > 0.5")
    assert "not a whole number" in str(raised.value)
