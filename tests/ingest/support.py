"""Shared helpers of the ingest tests: where our fixtures live and compact views of a session and its units."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from google.protobuf.message import Message

from quarry.v1 import units_pb2

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def roles(session: units_pb2.Session, surface: str | None = "current") -> dict[str, int]:
    """Messages per role, on one surface (None: every surface)."""
    return dict(Counter(m.role for m in session.messages if surface is None or m.surface == surface))


def categories(session: units_pb2.Session) -> dict[str, int]:
    return dict(Counter(a.category for a in session.actions))


def failed_actions(session: units_pb2.Session) -> int:
    return sum(a.failed for a in session.actions)


def row(unit: Message) -> dict[str, Any]:
    """The fields of a unit that are set (not default), maps as dicts: an exact, readable row."""
    return {
        field.name: dict(value) if field.message_type and field.message_type.GetOptions().map_entry else value
        for field, value in unit.ListFields()
    }


def rows(units: Iterable[Message]) -> list[dict[str, Any]]:
    return [row(unit) for unit in units]
