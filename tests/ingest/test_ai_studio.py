"""Google AI Studio's saved chats (the extensionless files of Drive's "Google AI Studio" folder), written
as AI Studio writes them.

The fixture (tests/fixtures/ai_studio/Flaky test triage) follows the fields Polylogue reads
(Sinity/polylogue at d250e578bf7353519f667a96fafd7ea7d43f8e0b: polylogue/sources/parsers/drive.py,
drive_support_text.py, drive_support_attachments.py, polylogue/sources/providers/gemini_message.py and its
tests/data/gemini_chunked_prompt/*.json): `runSettings`, `systemInstruction`, `chunkedPrompt.chunks` with
`role`, `text`, `parts`, `tokenCount`, `isThought`, `finishReason`, `errorMessage`, `executableCode`,
`codeExecutionResult` and Drive attachments, and `pendingInputs`. Counts are taken from the fixture's JSON
here, not from the parser.
"""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path
from typing import Any

import orjson

from quarry.ingest.parse import iter_parse, parse_file
from tests.ingest.support import FIXTURES

CHAT = FIXTURES / "ai_studio" / "Flaky test triage"
DOCUMENT = orjson.loads(CHAT.read_bytes())
CHUNKS: list[dict[str, Any]] = DOCUMENT["chunkedPrompt"]["chunks"]


def turns() -> list[list[dict[str, Any]]]:
    """The chunks grouped into turns: a run of one role, as AI Studio shows them."""
    return [list(group) for _, group in itertools.groupby(CHUNKS, key=lambda chunk: chunk["role"])]


def test_a_chat_is_read_with_its_turns_thinking_code_runs_attachments_model_and_tokens() -> None:
    result = parse_file(CHAT)
    assert result.format == "ai-studio" and not result.issues
    (session,) = result.sessions
    assert session.origin == "ai-studio-export"
    assert session.title == "Flaky test triage"  # the chat's name is its file name
    system, *dialogue = session.messages
    assert (system.role, system.authored, system.blocks[0].text) == (
        "system",
        False,
        DOCUMENT["systemInstruction"]["text"],
    )
    groups = turns()
    assert [m.role for m in dialogue] == ["user" if g[0]["role"] == "user" else "assistant" for g in groups]
    model = DOCUMENT["runSettings"]["model"].removeprefix("models/")
    replies = [g for g in groups if g[0]["role"] == "model"]
    assert [(m.model, m.output_tokens) for m in dialogue if m.role == "assistant"] == [
        (model, sum(c.get("tokenCount", 0) for c in g)) for g in replies
    ]
    thinking = [b.text for m in dialogue for b in m.blocks if b.type == "thinking"]
    assert thinking == [c["text"] for c in CHUNKS if c.get("isThought")]
    prompts = [c["text"] for c in CHUNKS if c["role"] == "user" and c.get("text")]
    authored = [b.text for m in dialogue if m.role == "user" for b in m.blocks if b.type == "text"]
    assert [text for text in authored if not text.startswith("attached: ")] == prompts
    assert any(CHUNKS[1]["driveDocument"]["id"] in text for text in authored)
    images = [b for m in dialogue for b in m.blocks if b.type == "image"]
    assert [b.text for b in images] == [c["driveImage"]["id"] for c in CHUNKS if "driveImage" in c]
    runs = [c for c in CHUNKS if "executableCode" in c]
    outcomes = [c["codeExecutionResult"]["outcome"] for c in CHUNKS if "codeExecutionResult" in c]
    assert [(a.tool, a.failed) for a in session.actions] == [
        ("code_execution", outcome != "OUTCOME_OK") for outcome in outcomes
    ]
    assert [orjson.loads(a.input_json)["code"] for a in session.actions] == [c["executableCode"]["code"] for c in runs]
    assert "ModuleNotFoundError" in session.actions[-1].output
    errors = [c["errorMessage"] for c in CHUNKS if c.get("errorMessage")]
    assert [e.text for e in session.events if e.kind == "api_error"] == errors
    assert session.title != prompts[0] and "senior Python reviewer" not in session.title


def test_the_same_chat_read_again_or_grown_is_one_session_and_another_chat_is_not(tmp_path: Path) -> None:
    first = parse_file(CHAT).sessions[0]
    grown = dict(DOCUMENT, chunkedPrompt={"chunks": [*CHUNKS, {"text": "Thanks!", "role": "user"}]})
    (tmp_path / "Flaky test triage").write_bytes(orjson.dumps(grown))
    again = parse_file(tmp_path / "Flaky test triage").sessions[0]
    assert again.id == first.id and len(again.messages) == len(first.messages) + 1
    shutil.copy(CHAT, tmp_path / "Untitled prompt")
    assert parse_file(tmp_path / "Untitled prompt").sessions[0].id != first.id


def test_a_synced_drive_folder_is_walked_and_its_extensionless_chats_read(tmp_path: Path) -> None:
    folder = tmp_path / "My Drive" / "Google AI Studio"
    folder.mkdir(parents=True)
    shutil.copy(CHAT, folder / "Flaky test triage")
    (folder / "Untitled prompt").write_bytes(orjson.dumps(dict(DOCUMENT, systemInstruction={})))
    results = sorted(iter_parse([tmp_path]), key=lambda r: r.path)
    assert [(Path(r.path).name, r.format, len(r.sessions)) for r in results] == [
        ("Flaky test triage", "ai-studio", 1),
        ("Untitled prompt", "ai-studio", 1),
    ]
    assert results[1].sessions[0].messages[0].role == "user"  # an empty instruction is no message


def test_damaged_chunks_cost_only_themselves(tmp_path: Path) -> None:
    chunks = [
        "a bare string",
        {"role": "user", "text": 5},
        {"role": "user", "text": "What is 2+2?", "tokenCount": "12"},
        {"role": "robot", "text": "beep"},
        {"role": "model", "codeExecutionResult": "broken", "executableCode": {"code": 7}},
        {"role": "model", "parts": [{"text": "Four."}, "junk", {"inlineData": None}], "tokenCount": -3},
    ]
    path = tmp_path / "Damaged"
    path.write_bytes(orjson.dumps({"runSettings": [], "systemInstruction": 3, "chunkedPrompt": {"chunks": chunks}}))
    result = parse_file(path)
    assert result.format == "ai-studio" and not result.issues
    (session,) = result.sessions
    assert [(m.role, [b.text for b in m.blocks], m.output_tokens) for m in session.messages] == [
        ("user", ["What is 2+2?"], 0),
        ("assistant", ["Four."], 0),
    ]
    assert result.skipped_record_types["ai-studio:empty-chunk"] == 4
    empty = tmp_path / "Empty"
    empty.write_bytes(orjson.dumps({"chunkedPrompt": {"chunks": [], "pendingInputs": [{"text": "draft"}]}}))
    assert parse_file(empty).sessions == []
