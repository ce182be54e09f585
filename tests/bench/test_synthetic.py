"""The synthetic archive generator: deterministic, well-formed, realistic enough, and readable back."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from quarry.cli import synthetic
from quarry.core import refs, vocab
from quarry.ingest.parse import parse_file
from quarry.ingest.validate import session_problems
from quarry.v1 import units_pb2


@pytest.fixture(scope="module")
def sessions() -> list[units_pb2.Session]:
    return list(synthetic.generate_sessions(2000, seed=5))


def _bytes(sessions: list[units_pb2.Session]) -> list[bytes]:
    return [s.SerializeToString(deterministic=True) for s in sessions]


def test_the_same_seed_gives_the_same_bytes_and_another_seed_does_not(sessions):
    assert _bytes(list(synthetic.generate_sessions(2000, seed=5))) == _bytes(sessions)
    other = list(synthetic.generate_sessions(2000, seed=6))
    assert {s.id for s in other}.isdisjoint(s.id for s in sessions)


@pytest.mark.parametrize("total", [1, 3, 4, 7, 61, 62, 63, 2003])
def test_sessions_hold_exactly_the_requested_messages_in_4_to_60(total):
    sizes = [len(s.messages) for s in synthetic.generate_sessions(total, seed=1)]
    assert sum(sizes) == total
    if total >= 4:
        assert all(4 <= n <= 60 for n in sizes)


def test_session_lengths_are_long_tailed():
    sizes = synthetic.session_sizes(100_000, np.random.default_rng(7))
    assert np.median(sizes) < np.mean(sizes) < np.percentile(sizes, 90)
    assert max(sizes) == 60 and min(sizes) == 4


def test_every_session_is_valid_canonical_with_ids_counts_and_hash(sessions):
    for s in sessions:
        assert session_problems(s) == []
        assert s.id == f"{synthetic.ORIGIN}:{s.native_id}"
        assert s.repo and s.cwd.endswith("/" + s.repo) and s.branch and s.title
        for seq, m in enumerate(s.messages):
            assert m.id == refs.message_id(s.id, seq) and m.session_id == s.id
            assert [b.id for b in m.blocks] == [refs.block_id(m.id, i) for i in range(len(m.blocks))]
        assert [a.id for a in s.actions] == [refs.action_id(s.id, i) for i in range(len(s.actions))]
        roles = Counter(m.role for m in s.messages)
        assert s.counts.messages == len(s.messages)
        assert (s.counts.user_messages, s.counts.assistant_messages) == (roles["user"], roles["assistant"])
        assert s.counts.words == sum(m.words for m in s.messages) > 0
        times = [m.time_ms for m in s.messages]
        assert times == sorted(times) and (s.created_ms, s.updated_ms) == (times[0], times[-1])
        unhashed = units_pb2.Session()
        unhashed.CopyFrom(s)
        unhashed.content_hash = ""
        assert s.content_hash == hashlib.sha256(unhashed.SerializeToString(deterministic=True)).hexdigest()


def test_sessions_span_about_eighteen_months_and_a_few_dozen_repos(sessions):
    starts = [s.created_ms for s in sessions]
    assert (max(starts) - min(starts)) / (24 * 3600 * 1000) > 300
    assert 15 <= len({s.repo for s in sessions}) <= 40


def test_turns_alternate_like_an_agent_session_and_every_tool_call_has_its_result(sessions):
    for s in sessions:
        first = s.messages[0]
        assert first.role == "user" and first.authored
        uses = {b.tool_use_id: b for m in s.messages for b in m.blocks if b.type == "tool_use"}
        for prev, m in zip(s.messages, s.messages[1:], strict=False):
            results = [b for b in m.blocks if b.type == "tool_result"]
            if results:  # a tool result row answers the assistant message right before it
                assert m.role == "user" and not m.authored and prev.role == "assistant"
                assert {b.tool_use_id for b in results} <= {b.tool_use_id for b in prev.blocks}
        assert len(s.actions) == len(uses)
        for a in s.actions:
            assert a.category in vocab.ACTION_CATEGORIES and a.tool
    categories = Counter(a.category for s in sessions for a in s.actions)
    assert {"file_read", "file_edit", "shell", "search"} <= set(categories)
    assert any(a.failed for s in sessions for a in s.actions)


def test_text_mixes_programming_terms_english_polish_code_and_thinking():
    sessions = list(synthetic.generate_sessions(8000, seed=3))
    texts = [b.text for s in sessions for m in s.messages for b in m.blocks if b.type == "text"]
    blocks = Counter(b.type for s in sessions for m in s.messages for b in m.blocks)
    assert blocks["thinking"] > 0.05 * blocks["text"]
    polish = sum(1 for t in texts if re.search("[łŁąęśćżźóń]", t))
    assert 0.002 < polish / len(texts) < 0.03
    assert any(b.type == "code" and b.language == "python" for s in sessions for m in s.messages for b in m.blocks)
    words = Counter(w.lower() for t in texts for w in t.split())
    assert words.most_common(1)[0][0] == "the"
    assert all(words[w] > 0 for w in ("sqlite", "locking", "timeout", "retry", "pytest", "refactor", "schema"))
    assert any("db/pool.py" in t for t in texts) and any("connection_profile.py" in t for t in texts)
    # Zipf: a long tail of words seen once or twice next to a few very frequent ones.
    counts = sorted(words.values(), reverse=True)
    assert counts[0] > 50 * counts[len(counts) // 2]


def test_the_claude_code_archive_reads_back_into_the_same_sessions(tmp_path: Path, sessions):
    paths = synthetic.write_claude_code_archive(sessions[:40], tmp_path)
    assert len(paths) == 40
    for session, path in zip(sessions[:40], paths, strict=True):
        assert path.parent.parent == tmp_path and path.name == f"{session.native_id}.jsonl"
        records = [json.loads(line) for line in path.read_text().splitlines()]
        chain = [r for r in records if r["type"] in ("user", "assistant")]
        assert [r["parentUuid"] for r in chain[1:]] == [r["uuid"] for r in chain[:-1]]
        assert all(r["sessionId"] == session.native_id and r["cwd"] == session.cwd for r in chain)
        parsed = parse_file(path)
        assert parsed.format == "claude-code" and not parsed.issues
        (got,) = parsed.sessions
        assert got.source_path == str(path)
        assert [e.line for e in got.log_events] == list(range(1, len(records) + 1))  # one event per line
        got.source_path = got.content_hash = ""
        got.ClearField("log_events")
        got.ClearField("title_snapshot")
        want = units_pb2.Session()
        want.CopyFrom(session)
        want.content_hash = ""
        assert got == want
