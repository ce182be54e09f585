"""A Claude Code log whose records hold what a byte-faithful archive must give back exactly: a 4,000-character
DNA-like user message and a long hex token (text, never held apart), a thinking block's signature and an
image block (held apart), a data URL, and JSON escapes (`\\/`, `\\u00e9`) inside payloads and around them.

The lines are written the way some JSON encoders write them (solidus escaped inside the image's data,
non-ASCII escaped), so a test compares bytes no serializer would reproduce.
"""

from __future__ import annotations

import base64
import hashlib
import random
import uuid

import orjson

SESSION_UUID = "5f1d8c2e-7a44-4b59-9c1e-0d3a6b7e2f10"
SESSION_ID = f"claude-code-session:{SESSION_UUID}"
CWD = "/home/dev/genome"


def dna(length: int = 4000, seed: int = 7) -> str:
    """A DNA-like string: every character is of the base64 alphabet, and it is text."""
    return "".join(random.Random(seed).choice("ACGT") for _ in range(length))


def hex_token(length: int = 2048) -> str:
    return "".join(hashlib.sha256(str(n).encode()).hexdigest() for n in range(length // 64 + 1))[:length]


def base64_bytes(size: int, seed: int) -> str:
    """Base64 of `size` random bytes (it holds `/` and `+`, as real image data and signatures do)."""
    return base64.b64encode(random.Random(seed).randbytes(size)).decode()


SIGNATURE = base64_bytes(600, 1)
PNG = base64_bytes(3000, 2)
GIF_URL = "data:image/gif;name=café.gif;base64," + base64_bytes(400, 3)


def _record(session_uuid: str, seq: int, role: str, content: object, parent: str | None) -> dict[str, object]:
    message: dict[str, object] = {"role": role, "content": content}
    if role == "assistant":
        message |= {"id": f"msg_{seq}", "model": "claude-opus-4-5", "type": "message"}
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": CWD,
        "sessionId": session_uuid,
        "version": "2.1.90",
        "gitBranch": "main",
        "type": role,
        "message": message,
        "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{session_uuid}/{seq}")),
        "timestamp": f"2026-03-01T10:00:{seq:02d}.000Z",
    }


def lines(session_uuid: str = SESSION_UUID) -> list[bytes]:
    """The log's lines (without their newlines); another `session_uuid` gives another session quoting the
    same payloads."""
    contents: list[tuple[str, object]] = [
        ("user", dna()),
        (
            "assistant",
            [
                {"type": "thinking", "thinking": "A read of 4,000 bases: align it.", "signature": SIGNATURE},
                {"type": "text", "text": "Here is the digest of the alignment:"},
            ],
        ),
        ("assistant", [{"type": "text", "text": hex_token()}]),
        (
            "user",
            [
                {"type": "text", "text": "What is on this plot? (café)"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
            ],
        ),
        ("user", [{"type": "text", "text": GIF_URL}]),
    ]
    out = []
    parent = None
    for seq, (role, content) in enumerate(contents):
        record = _record(session_uuid, seq, role, content, parent)
        parent = str(record["uuid"])
        line = orjson.dumps(record)
        line = line.replace("é".encode(), b"\\u00e9")  # as an ASCII-only encoder writes it
        if seq == 3:  # the image's data as an encoder that escapes the solidus writes it
            line = line.replace(PNG.encode(), PNG.replace("/", "\\/").encode())
        out.append(line)
    return out


def log_bytes(session_uuid: str = SESSION_UUID) -> bytes:
    return b"\n".join(lines(session_uuid)) + b"\n"
