"""A small corpus in a real partition (Tantivy + SQLite under tmp_path), shared by the read-only tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from quarry.index.lexical.partition import LexicalPartition
from quarry.v1 import units_pb2
from tests.index.sessions import BASE_MS, Msg, Tool, session

HOUR = 3_600_000


def corpus() -> list[units_pb2.Session]:
    return [
        session(
            "polish",
            [
                Msg("user", "Zrobiłem migrację bazy w Łódź, działa łatwo"),
                Msg("assistant", "Great, the migration works now."),
            ],
            title="Migracja bazy: Łódź",
            repo="maps",
            start_ms=BASE_MS + 1 * HOUR,
        ),
        session(
            "lock-same",
            [
                Msg("user", "sqlite locking keeps failing under load"),
                Msg("assistant", "The sqlite database is in WAL mode; locking happens on every write."),
            ],
            title="SQLite locking",
            tags=("active", "db"),
            start_ms=BASE_MS + 2 * HOUR,
        ),
        session(
            "lock-split",
            [Msg("user", "why do we use sqlite at all?"), Msg("assistant", "locking is handled by the pool")],
            origin="codex-session",
            repo="other",
            tags=("stale",),
            start_ms=BASE_MS + 3 * HOUR,
        ),
        session(
            "lock-user",
            [Msg("user", "question about sqlite locking from me"), Msg("assistant", "Ask me later.")],
            start_ms=BASE_MS + 4 * HOUR,
        ),
        session(
            "tools",
            [
                Msg("user", "run the tests for the pool please"),
                Msg(
                    "assistant",
                    "Running them now.",
                    tools=[
                        Tool(
                            "Bash",
                            "shell",
                            command="pytest -x tests/test_pool.py",
                            output="3 failed, 2 passed in 0.41s",
                            failed=True,
                        ),
                        Tool(
                            "Edit",
                            "file_edit",
                            path="src/db/connection_profile.py",
                            input_json='{"old_string": "a", "new_string": "SECRETBODY marker"}',
                            output="edited",
                        ),
                    ],
                ),
                Msg("assistant", "Fixed the connection profile.", code="def connect():\n    return pool.get()"),
            ],
            title="Fix pool tests",
            start_ms=BASE_MS + 5 * HOUR,
        ),
        # Identical text: identical BM25; ties must break on session id, whatever the insertion order.
        session("tie-b", [Msg("user", "kangaroo habitat notes")], start_ms=BASE_MS + 6 * HOUR),
        session("tie-a", [Msg("user", "kangaroo habitat notes")], start_ms=BASE_MS + 7 * HOUR),
        session("zebra-lo", [Msg("user", "zebra " + "filler words about grassland " * 8)], start_ms=BASE_MS + 8 * HOUR),
        session("zebra-hi", [Msg("user", "zebra zebra zebra stripes")], start_ms=BASE_MS + 9 * HOUR),
    ]


def sid(native_id: str, origin: str = "claude-code-session") -> str:
    return f"{origin}:{native_id}"


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LexicalPartition]:
    partition = LexicalPartition(Path(tmp_path_factory.mktemp("lexical")), 0)
    partition.upsert(corpus())
    yield partition
    partition.close()


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[LexicalPartition]:
    partition = LexicalPartition(tmp_path, 0)
    yield partition
    partition.close()
