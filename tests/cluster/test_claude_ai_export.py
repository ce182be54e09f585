"""A Claude.ai export through a real cluster (2 partitions): its sessions are found by a word only it holds,
its recorded tool errors by a unit query, its origin by `origin:`, and its branch is read back with the
session API (seed 002)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from quarry.cli.local import LocalCluster
from quarry.client.client import QuarryClient
from tests.shared_paths import INGEST_ROOTS, REAL_LOGS, needs_shared

pytestmark = [pytest.mark.cluster, needs_shared, pytest.mark.shared]

EXPORT = REAL_LOGS / "claude_ai" / "Artem-SCM-AI__life-builder-os__conversations.subset.json"
BRANCHED = "claude-ai-export:708bbea4-fccf-46ff-9802-d33be25f7198"
DOLLY = "claude-ai-export:1cc74f94-0ebc-4659-a465-eee098839a3f"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[QuarryClient]:
    cluster = LocalCluster(
        tmp_path_factory.mktemp("quarry-claude-ai"), partitions=2, embedder="none", ingest_roots=INGEST_ROOTS
    )
    cluster.start()
    try:
        info = cluster.info()
        with QuarryClient(info.query, info.ingest) as quarry:
            report = list(quarry.ingest_paths([EXPORT, REAL_LOGS / "chatgpt"]))[-1].report
            assert report.sessions_written >= 8, report
            yield quarry
    finally:
        cluster.stop()


def test_a_word_only_the_export_holds_finds_its_session_first(client: QuarryClient) -> None:
    # grep -ril dolly ../shared/real-logs: only the export; jq: in one conversation ("Trash can dolly explained")
    hits = client.search("dolly", limit=5).hits
    assert hits and hits[0].session.id == DOLLY and hits[0].session.title == "Trash can dolly explained"


def test_origin_and_failed_tool_calls(client: QuarryClient) -> None:
    assert len(client.search("origin:claude-ai-export", limit=50).hits) == 8
    failed = client.query_units("actions where is_error:true AND session.origin:claude-ai-export", limit=50).rows
    assert len(failed) == 6  # jq '[… .content[] | select(.type=="tool_result" and .is_error==true)] | length'


def test_the_branch_is_read_back_with_its_surfaces(client: QuarryClient) -> None:
    # the export's order: the first prompt, its edit, the reply to the edit
    header, events = client.sessions.read(BRANCHED)
    assert header.title == "Meeting request to finalize pricing"
    assert [e.surface for e in sorted(events, key=lambda e: e.seq)] == ["shadowed", "current", "current"]
    rows = client.query_units(f"messages where session.id:{BRANCHED}").rows
    assert [(r.message.role, r.message.surface) for r in rows] == [
        ("user", "shadowed"),
        ("user", "current"),
        ("assistant", "current"),
    ]
