"""Unit rows (messages, actions, blocks) matching a plan, in time order, scoped by their sessions."""

from __future__ import annotations

import pytest

from quarry.core.errors import QuarryError
from quarry.index.lexical.partition import LexicalPartition
from quarry.v1 import errors_pb2, plan_pb2
from tests.index import plans as p
from tests.index.conftest import HOUR, sid
from tests.index.sessions import BASE_MS, Msg, session


def row_ids(partition: LexicalPartition, request) -> list[str]:
    return [r.sort_id for r in partition.query_units(request).rows]


def test_messages_by_role_and_text_in_time_order(loaded: LexicalPartition) -> None:
    rows = loaded.query_units(p.units("messages", p.all_(p.field("role", "assistant"), p.text("locking")))).rows
    assert [r.sort_id for r in rows] == [f"{sid('lock-same')}:m1", f"{sid('lock-split', 'codex-session')}:m1"]
    first = rows[0]
    assert first.session_id == sid("lock-same")
    assert first.message.role == "assistant" and first.message.blocks[0].text.startswith("The sqlite")
    assert first.sort_time_ms == first.message.time_ms == BASE_MS + 2 * HOUR + 60_000
    # folded like session search
    assert row_ids(loaded, p.units("messages", p.text("lodz"))) == [f"{sid('polish')}:m0"]


def test_sort_descending_and_limit(loaded: LexicalPartition) -> None:
    ascending = row_ids(loaded, p.units("messages", p.field("role", "user")))
    descending = row_ids(loaded, p.units("messages", p.field("role", "user"), descending=True))
    assert descending == list(reversed(ascending))
    assert row_ids(loaded, p.units("messages", p.field("role", "user"), descending=True, limit=2)) == descending[:2]
    times = [r.sort_time_ms for r in loaded.query_units(p.units("messages", p.field("role", "user"))).rows]
    assert times == sorted(times)


def test_session_scope_and_session_scoped_clauses(loaded: LexicalPartition) -> None:
    scoped = p.units("messages", p.field("role", "user"), scope=p.field("repo", "other"))
    assert row_ids(loaded, scoped) == [f"{sid('lock-split', 'codex-session')}:m0"]
    # `sessions where ~"sqlite locking" | messages where role:assistant`
    by_text = p.units("messages", p.field("role", "assistant"), scope=p.text("sqlite", "locking"))
    assert row_ids(loaded, by_text) == [f"{sid('lock-same')}:m1", f"{sid('lock-user')}:m1"]
    inline = p.all_(p.field("origin", "codex-session", session_scoped=True), p.field("role", "user"))
    assert row_ids(loaded, p.units("messages", inline)) == [f"{sid('lock-split', 'codex-session')}:m0"]


def test_actions_fields(loaded: LexicalPartition) -> None:
    shell = loaded.query_units(p.units("actions", p.field("tool", "bash"))).rows
    assert [r.action.tool for r in shell] == ["Bash"]
    assert shell[0].action.command == "pytest -x tests/test_pool.py" and shell[0].action.failed
    assert shell[0].session_id == sid("tools")
    assert row_ids(loaded, p.units("actions", p.field("command", "PYTEST"))) == [f"{sid('tools')}:action:0"]
    assert row_ids(loaded, p.units("actions", p.field("output", "failed"))) == [f"{sid('tools')}:action:0"]
    assert row_ids(loaded, p.units("actions", p.field("action", "file_edit"))) == [f"{sid('tools')}:action:1"]
    assert row_ids(loaded, p.units("actions", p.field("path", "db/connection_profile.py"))) == [
        f"{sid('tools')}:action:1"
    ]
    # text: searches the raw input JSON too (the Edit body that full-text search leaves out)
    body = p.all_(p.field("tool", "edit"), p.text("SECRETBODY"))
    assert row_ids(loaded, p.units("actions", body)) == [f"{sid('tools')}:action:1"]
    assert row_ids(loaded, p.units("actions", p.not_(p.field("tool", "bash")))) == [f"{sid('tools')}:action:1"]


def test_blocks_by_type_and_text(loaded: LexicalPartition) -> None:
    code = loaded.query_units(p.units("blocks", p.field("type", "code"))).rows
    assert [r.block.type for r in code] == ["code"]
    assert code[0].block.text.startswith("def connect")
    assert code[0].sort_id == code[0].block.id and code[0].session_id == sid("tools")
    # the text must be in the block itself, not elsewhere in its message
    assert row_ids(loaded, p.units("blocks", p.all_(p.field("type", "code"), p.text("pool")))) == [code[0].sort_id]
    assert row_ids(loaded, p.units("blocks", p.all_(p.field("type", "code"), p.text("fixed")))) == []
    tool_use = row_ids(loaded, p.units("blocks", p.all_(p.field("tool", "edit"), p.field("type", "tool_use"))))
    assert len(tool_use) == 1


def test_messages_by_tool_and_time_range(loaded: LexicalPartition) -> None:
    # the call and the message carrying its result both name the tool
    assert row_ids(loaded, p.units("messages", p.field("tool", "edit"))) == [f"{sid('tools')}:m1", f"{sid('tools')}:m3"]
    window = p.field("date", str(BASE_MS + 8 * HOUR), str(BASE_MS + 9 * HOUR), op=plan_pb2.BETWEEN)
    assert row_ids(loaded, p.units("messages", window)) == [f"{sid('zebra-lo')}:m0", f"{sid('zebra-hi')}:m0"]
    since = p.field("since", str(BASE_MS + 9 * HOUR))
    assert row_ids(loaded, p.units("messages", since)) == [f"{sid('zebra-hi')}:m0"]


def test_unit_errors(loaded: LexicalPartition) -> None:
    with pytest.raises(QuarryError) as unit:
        loaded.query_units(p.units("sessions"))
    assert unit.value.code == errors_pb2.INVALID_REQUEST
    with pytest.raises(QuarryError) as field:
        loaded.query_units(p.units("blocks", p.field("command", "x")))
    assert field.value.code == errors_pb2.UNKNOWN_FIELD
    with pytest.raises(QuarryError) as value:
        loaded.query_units(p.units("messages", p.field("input_tokens", "many", op=plan_pb2.GE)))
    assert value.value.code == errors_pb2.BAD_VALUE


def test_equal_times_break_on_the_id_ascending_in_both_directions(fresh: LexicalPartition) -> None:
    # three sessions starting together: their messages share times (m0 at BASE_MS, m1 a minute later)
    fresh.upsert([session(n, [Msg("user", "same time"), Msg("assistant", "also same")]) for n in ("c", "a", "b")])
    first = [f"{sid(n)}:m0" for n in ("a", "b", "c")]
    second = [f"{sid(n)}:m1" for n in ("a", "b", "c")]
    assert row_ids(fresh, p.units("messages")) == first + second
    assert row_ids(fresh, p.units("messages", descending=True)) == second + first
    assert row_ids(fresh, p.units("messages", descending=True, limit=4)) == [*second, first[0]]
    blocks = row_ids(fresh, p.units("blocks", p.field("type", "text"), descending=True))
    assert blocks == [f"{i}:0" for i in second + first]
