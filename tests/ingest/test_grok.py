"""Grok data exports (`prod-grok-backend.json`), written as xAI's export writes them.

The fixture (tests/fixtures/grok/prod-grok-backend.json) follows the shape Polylogue reads
(Sinity/polylogue at d250e578bf7353519f667a96fafd7ea7d43f8e0b: polylogue/sources/parsers/grok.py,
tests/unit/sources/parsers/test_grok.py: `{conversation, responses}` wrappers, `{"response": {...}}` entries,
MongoDB `$date` times) and the documented fields of real exports (codeface-io/mac-stack
grok/export_conversations/README.md; `_id`, `parent_response_id`, `thinking_trace`, `agent_thinking_traces`,
`generated_image_urls`, `file_attachments`, `error`, senders "ASSISTANT" and "grok-3"). Every count is taken
from the fixture's JSON here, not from the parser.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import orjson

from quarry.ingest.parse import parse_bytes, parse_file
from tests.ingest.support import FIXTURES

EXPORT = FIXTURES / "grok" / "prod-grok-backend.json"
DOCUMENT = orjson.loads(EXPORT.read_bytes())


def responses(conversation: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["response"]["_id"]: entry["response"] for entry in conversation["responses"]}


def current_thread(conversation: dict[str, Any]) -> list[str]:
    """Root to the newest leaf, by the responses' own parent links and times."""
    by_id = responses(conversation)
    parents = {r.get("parent_response_id") for r in by_id.values()}
    leaf = max(
        (k for k in by_id if k not in parents), key=lambda k: int(by_id[k]["create_time"]["$date"]["$numberLong"])
    )
    thread = [leaf]
    while by_id[thread[-1]].get("parent_response_id"):
        thread.append(by_id[thread[-1]]["parent_response_id"])
    return thread[::-1]


def test_an_export_s_conversations_are_read_with_branches_thinking_models_images_and_attachments() -> None:
    result = parse_file(EXPORT)
    assert result.format == "grok" and not result.issues
    conversations = DOCUMENT["conversations"]
    assert [s.id for s in result.sessions] == [f"grok-export:{c['conversation']['id']}" for c in conversations]
    assert [s.title for s in result.sessions] == [c["conversation"]["title"] for c in conversations]
    first, data = result.sessions[0], conversations[0]
    by_id = responses(data)
    thread = current_thread(data)
    current = [m for m in first.messages if m.surface == "current"]
    shadowed = [m for m in first.messages if m.surface == "shadowed"]
    assert len(current) == len(thread) and len(shadowed) == len(by_id) - len(thread)  # the regenerated reply
    assert [m.role for m in current] == [
        "user" if by_id[k]["sender"].lower() == "human" else "assistant" for k in thread
    ]
    assert [m.time_ms for m in current] == [int(by_id[k]["create_time"]["$date"]["$numberLong"]) for k in thread]
    replies = [by_id[k] for k in thread if by_id[k]["sender"] != "human"]
    assert [m.model for m in current if m.role == "assistant"] == [r.get("model") or r["sender"] for r in replies]
    thinking = [b.text for m in first.messages for b in m.blocks if b.type == "thinking"]
    expected = [r["thinking_trace"] for r in by_id.values() if r.get("thinking_trace")]
    expected += [t["thinking_trace"] for r in by_id.values() for t in r.get("agent_thinking_traces", [])]
    assert sorted(thinking) == sorted(expected)
    images = [b.text for m in first.messages for b in m.blocks if b.type == "image"]
    assert images == [url for r in by_id.values() for url in r.get("generated_image_urls", [])]
    asset = by_id[thread[0]]["file_attachments"][0]
    assert any(asset in b.text for b in current[0].blocks)  # the uploaded file, referenced by its asset id
    assert first.title != current[0].blocks[0].text  # titled by the export, not by the first prompt
    assert first.created_ms == 1746093600123  # the conversation's create_time, 2025-05-01T10:00:00.123456Z


def test_a_reply_grok_failed_to_give_is_an_api_error() -> None:
    second = parse_file(EXPORT).sessions[1]
    failed = [r for r in responses(DOCUMENT["conversations"][1]).values() if r.get("error")]
    assert [(e.kind, e.text) for e in second.events if e.kind == "api_error"] == [
        ("api_error", r["error"]) for r in failed
    ]
    assert [m.role for m in second.messages] == ["user"]  # the empty failed reply is no message


def test_the_export_zip_as_downloaded_is_read_and_its_account_files_passed_over() -> None:
    folder = "ttl/30d/export_data/0b7d6e2a-91c4-4f3e-8d55-2c6a9e0f4b18"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(f"{folder}/prod-grok-backend.json", EXPORT.read_bytes())
        archive.writestr(f"{folder}/prod-mc-auth-mgmt-api.json", b'{"user": {"email": "a@b.c"}, "sessions": []}')
        archive.writestr(f"{folder}/prod-mc-billing.json", b'{"credits": 0}')
    result = parse_bytes(buffer.getvalue(), "/downloads/grok-export.zip")
    assert result.format == "grok" and not result.issues
    assert len(result.sessions) == len(DOCUMENT["conversations"])
    assert result.sessions[0].source_path == f"/downloads/grok-export.zip!{folder}/prod-grok-backend.json"
    assert result.skipped_record_types["zip:other-member"] == 2


def test_damaged_conversations_are_reported_and_the_others_kept(tmp_path: Path) -> None:
    good = DOCUMENT["conversations"][0]
    looped = {
        "conversation": {"id": "loop", "title": "loop"},
        "responses": [
            {"response": {"_id": "x", "parent_response_id": "y", "sender": "human", "message": "one"}},
            {"response": {"_id": "y", "parent_response_id": "x", "sender": "assistant", "message": "two"}},
            {"response": {"_id": "z", "parent_response_id": "z", "sender": "assistant", "message": "three"}},
            "not a response",
            {"response": {"_id": "w", "sender": "human", "message": 7, "create_time": {"$date": {"$numberLong": "x"}}}},
        ],
    }
    document = {"conversations": [good, {"conversation": {"title": "no id"}, "responses": []}, looped, 3]}
    path = tmp_path / "prod-grok-backend.json"
    path.write_bytes(orjson.dumps(document))
    result = parse_file(path)
    assert [(i.code, i.reason) for i in result.issues] == [
        ("invalid_record", "conversation #1 has no conversation.id"),
        ("invalid_record", "conversation #3 is not an object"),
    ]
    assert [s.native_id for s in result.sessions] == [good["conversation"]["id"], "loop"]
    loop = result.sessions[1]
    assert sorted(b.text for m in loop.messages for b in m.blocks) == ["one", "three", "two"]
