"""Raw records are their source's bytes: text that merely looks like base64 stays in them, and only the
payloads the format marks as media or opaque data are held apart, each leaving a placeholder whose size
and digest are of the bytes held (the string's contents as the source wrote them), so that putting them
back gives the source record byte for byte, escapes included."""

from __future__ import annotations

import hashlib

import orjson
import pytest

from quarry.index.lexical.session_reads import put_back
from quarry.ingest import payloads
from quarry.ingest.parse import parse_bytes
from quarry.ingest.validate import session_problems
from quarry.v1 import units_pb2
from tests import held_logs


@pytest.fixture(scope="module")
def session() -> units_pb2.Session:
    result = parse_bytes(held_logs.log_bytes(), "/logs/genome.jsonl")
    assert not result.issues
    (parsed,) = result.sessions
    return parsed


def _whole(session: units_pb2.Session, event: units_pb2.SessionEvent) -> bytes:
    return put_back(event.raw_json, event.held, {p.sha256: p.data for p in session.held_payloads})


def _placeholders(event: units_pb2.SessionEvent) -> list[dict[str, object]]:
    return [orjson.loads(event.raw_json[place.start : place.end]) for place in event.held]


def test_text_of_the_base64_alphabet_stays_in_its_record(session: units_pb2.Session) -> None:
    dna_line, _, hex_line, *_ = held_logs.lines()
    dna, _, hex_token, *_ = session.log_events
    assert dna.raw_json == dna_line and not dna.held  # 4,000 bases: text, byte for byte
    assert orjson.loads(dna.raw_json)["message"]["content"] == held_logs.dna()
    assert hex_token.raw_json == hex_line and not hex_token.held


def test_a_thinking_signature_is_held_apart_as_opaque_data(session: units_pb2.Session) -> None:
    signed = session.log_events[1]
    assert held_logs.SIGNATURE.encode() not in signed.raw_json
    [marker] = _placeholders(signed)
    signature = held_logs.SIGNATURE.encode()
    assert marker == {"held_apart": "opaque", "bytes": len(signature), "sha256": hashlib.sha256(signature).hexdigest()}
    record = orjson.loads(signed.raw_json)  # still JSON: the placeholder stands where the string was
    assert record["message"]["content"][0]["signature"] == marker
    assert record["message"]["content"][0]["thinking"] == "A read of 4,000 bases: align it."
    assert _whole(session, signed) == held_logs.lines()[1]


def test_an_image_block_is_held_apart_with_its_escapes(session: units_pb2.Session) -> None:
    image = session.log_events[3]
    [marker] = _placeholders(image)
    escaped = held_logs.PNG.replace("/", "\\/").encode()  # the data exactly as the line writes it
    assert marker == {
        "held_apart": "media",
        "media_type": "image/png",
        "bytes": len(escaped),
        "sha256": hashlib.sha256(escaped).hexdigest(),
    }
    [held] = [p for p in session.held_payloads if p.sha256 == marker["sha256"]]
    assert held.data == escaped
    assert b"caf\\u00e9" in image.raw_json  # escapes outside payloads are kept as written too
    assert _whole(session, image) == held_logs.lines()[3]


def test_a_data_url_is_held_apart_as_media(session: units_pb2.Session) -> None:
    url = session.log_events[4]
    [marker] = _placeholders(url)
    written = held_logs.GIF_URL.replace("é", "\\u00e9").encode()
    assert marker == {
        "held_apart": "media",
        "media_type": "image/gif",
        "bytes": len(written),
        "sha256": hashlib.sha256(written).hexdigest(),
    }
    assert _whole(session, url) == held_logs.lines()[4]


def test_every_record_is_given_back_whole(session: units_pb2.Session) -> None:
    assert [_whole(session, event) for event in session.log_events] == held_logs.lines()
    assert len(session.held_payloads) == 3 and not session_problems(session)


def _held(value: object) -> list[str]:
    """The placeholders' kinds in a whole document's record (its canonical JSON)."""
    record = payloads.hold_apart(orjson.dumps(value))
    assert put_back(record.raw, record.places, record.payloads) == orjson.dumps(value)
    return [orjson.loads(record.raw[p.start : p.end])["held_apart"] for p in record.places]


LONG = "QUJD" * 100  # 400 bytes of base64


@pytest.mark.parametrize(
    ("value", "kinds"),
    [
        ({"inlineData": {"mimeType": "image/jpeg", "data": LONG}}, ["media"]),  # Gemini
        ({"type": "image", "data": LONG, "mimeType": "image/png"}, ["media"]),  # MCP, type after data
        ({"file": {"base64": LONG, "type": "image/png"}}, ["media"]),  # Claude Code's read image
        ({"type": "reasoning", "encrypted_content": LONG}, ["opaque"]),  # Codex
        ({"type": "redacted_thinking", "data": LONG}, ["opaque"]),
        ({"thinking": {"id": LONG, "text": "hm", "encrypted": LONG}}, ["opaque"]),  # Copilot Chat
        ({"images": [f"data:image/png;base64,{LONG}"]}, ["media"]),
        # Structure decides, not the look of a string:
        ({"type": "progress", "data": LONG}, []),  # a `data` of no media object
        ({"type": "text", "text": LONG, "signature": LONG}, []),  # a signature outside a thinking block
        ({"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": LONG}}, []),
        ({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QUJD"}}, []),  # small
        ({"text": f"see data:image/png;base64,{LONG}"}, []),  # not a data URL: text that quotes one
    ],
)
def test_what_is_held_apart_is_decided_by_key_and_container(value: object, kinds: list[str]) -> None:
    assert _held(value) == kinds


def test_a_payload_quoted_twice_is_held_once() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": LONG}}
    record = payloads.hold_apart(orjson.dumps({"content": [image, image]}))
    assert len(record.places) == 2 and len(record.payloads) == 1


def test_a_session_whose_payloads_do_not_give_back_its_records_is_refused(session: units_pb2.Session) -> None:
    forged = units_pb2.Session()
    forged.CopyFrom(session)
    forged.held_payloads[0].data += b"A"
    del forged.held_payloads[1]
    problems = session_problems(forged)
    assert any("is not the sha256 of its" in p for p in problems)
    assert any("which the session lacks" in p for p in problems)
