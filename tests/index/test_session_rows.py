"""The one-pass decomposition of a session builds exactly the texts and rows the reference functions define
(the texts with their Chinese words segmented, as every indexed text is)."""

from __future__ import annotations

import orjson

from quarry.cli.synthetic import generate_sessions
from quarry.index.lexical import schema, session_rows
from quarry.index.lexical.analyzer import segment
from quarry.v1 import units_pb2
from tests.index.conftest import corpus
from tests.index.sessions import Msg, Tool, session


def _sessions() -> list[units_pb2.Session]:
    command_only_in_action = session(
        "hidden-command",
        [Msg("assistant", "deploying", tools=[Tool("Bash", "shell", summary="run it", command="make deploy-prod")])],
    )
    chinese = session(
        "chinese",
        [Msg("user", "我们的数据库连接超时了", tools=[Tool("Bash", "shell", summary="查看日志", command="tail log")])],
    )
    return [*corpus(), command_only_in_action, chinese, *generate_sessions(400, seed=3)]


def test_documents_carry_the_reference_texts_of_every_message_with_text() -> None:
    for s in _sessions():
        commands = {a.block_id: a.command for a in s.actions if a.block_id and a.command}
        ords = range(100, 100 + len(s.messages))
        built = session_rows.decompose(s, 7, ords, "sha256:x")
        expected = [
            (o, segment(schema.dialogue_text(m)), segment(schema.action_text(m, commands)), m.role.lower(), m.time_ms)
            for o, m in zip(ords, s.messages, strict=True)
            if schema.dialogue_text(m) or schema.action_text(m, commands)
        ]
        docs = [orjson.loads(d) for d in built.documents]
        got = [(d[schema.MESSAGE_ORD], d[schema.TEXT], d[schema.ACTIONS], d[schema.ROLE], d[schema.TIME]) for d in docs]
        assert got == expected
        assert all(d[schema.TEXT_STEM] == d[schema.TEXT] for d in docs)  # one text, two analyzers
        assert all(d[schema.SESSION_ORD] == 7 and d[schema.REPO] == s.repo.lower() for d in docs)
        assert built.session_row is not None and built.session_row[-3] == len(docs)  # doc_count


def test_rows_cover_every_message_block_and_action_and_the_summary_drops_only_them() -> None:
    for s in _sessions():
        built = session_rows.decompose(s, 3, range(1, 1 + len(s.messages)), "sha256:x")
        assert [r[1] for r in built.messages] == [m.id for m in s.messages]
        assert [units_pb2.Message.FromString(r[-1]) for r in built.messages] == list(s.messages)
        assert [r[0] for r in built.blocks] == [b.id for m in s.messages for b in m.blocks]
        assert [r[0] for r in built.actions] == [a.id for a in s.actions]
        summary = units_pb2.Session.FromString(built.session_row[-1])  # type: ignore[index]
        expected = units_pb2.Session()
        expected.CopyFrom(s)
        for name in ("messages", "actions", "files", "runs", "events", "snapshots", "delegations"):
            expected.ClearField(name)
        assert summary == expected


def test_documents_only_skips_the_rows() -> None:
    s = corpus()[4]
    only = session_rows.decompose(s, 1, range(1, 1 + len(s.messages)), rows=False)
    full = session_rows.decompose(s, 1, range(1, 1 + len(s.messages)))
    assert only.documents == full.documents
    assert only.session_row is None and not only.messages and not only.blocks and not only.actions
