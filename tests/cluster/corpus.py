"""A small archive of Claude Code session files written in the real format, with known content,
for the cluster tests: each session is about one thing, so the expected first hit is clear."""

from __future__ import annotations

import uuid
from pathlib import Path

import orjson

# session key -> (repo, [(role, text), ...])
SESSIONS: dict[str, tuple[str, list[tuple[str, str]]]] = {
    "sqlite": (
        "ledger",
        [
            (
                "user",
                "Our tests fail with 'database is locked' from sqlite when two writers commit together.",
            ),
            (
                "assistant",
                "SQLite allows one writer at a time. Enable WAL mode and set a busy timeout so the "
                "second writer waits for the lock instead of failing.",
            ),
            ("user", "WAL fixed the sqlite locking errors, thanks."),
        ],
    ),
    "deploy": (
        "platform",
        [
            ("user", "The kubernetes deployment is stuck: the pod reports ImagePullBackOff."),
            (
                "assistant",
                "The registry denies the image pull. Create an image pull secret and reference it "
                "from the deployment's service account.",
            ),
        ],
    ),
    "css": (
        "webapp",
        [
            ("user", "The toolbar buttons overflow the flexbox row on narrow phone screens."),
            ("assistant", "Add flex-wrap: wrap to the toolbar and let the buttons shrink with min-width: 0."),
        ],
    ),
    "polish": (
        "migracje",
        [
            ("user", "Zrobiłem migrację bazy w Łodzi, ale łatwo ją cofnąć?"),
            ("assistant", "Tak, cofnięcie migracji jest łatwe: uruchom polecenie downgrade."),
        ],
    ),
    "retry": (
        "ledger",
        [
            ("user", "The HTTP client times out when the payment API is slow."),
            (
                "assistant",
                "Add retries with exponential backoff and jitter, and raise the read timeout to 30 seconds.",
            ),
        ],
    ),
    "tokenizer": (
        "searchkit",
        [
            ("user", "The tokenizer splits camelCase identifiers into the wrong pieces."),
            ("assistant", "Split on lower-to-upper transitions with a regex before lowercasing the tokens."),
        ],
    ),
}


def session_uuid(key: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"quarry-test/{key}"))


def session_id(key: str) -> str:
    return f"claude-code-session:{session_uuid(key)}"


def write_session(folder: Path, key: str, repo: str, turns: list[tuple[str, str]]) -> Path:
    sid = session_uuid(key)
    parent = None
    lines = []
    for seq, (role, text) in enumerate(turns):
        record_uuid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{sid}/{seq}"))
        content: object = text if role == "user" else [{"type": "text", "text": text}]
        message: dict[str, object] = {"role": role, "content": content}
        if role == "assistant":
            message |= {"id": f"msg_{seq}", "model": "claude-sonnet-4-5", "type": "message"}
        lines.append(
            {
                "parentUuid": parent,
                "isSidechain": False,
                "userType": "external",
                "cwd": f"/home/dev/{repo}",
                "sessionId": sid,
                "version": "2.0.74",
                "gitBranch": "main",
                "type": role,
                "message": message,
                "uuid": record_uuid,
                "timestamp": f"2026-03-0{1 + seq % 9}T10:00:{seq:02d}.000Z",
            }
        )
        parent = record_uuid
    path = folder / f"{sid}.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(line) for line in lines) + b"\n")
    return path


def write_corpus(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    return {key: write_session(folder, key, repo, turns) for key, (repo, turns) in SESSIONS.items()}
