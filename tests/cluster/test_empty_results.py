"""An empty search tells the user which of seed 000's empty-result diagnostics apply."""

from __future__ import annotations

import pytest

from quarry.cli.synthetic import generate_sessions
from quarry.client.client import QuarryClient

pytestmark = pytest.mark.cluster


def test_an_empty_archive_says_so_then_a_miss_gets_its_hints(light_client: QuarryClient) -> None:
    empty = light_client.search("sqlite locking")
    assert not empty.hits
    assert list(empty.caveats) == ["the archive is empty: no session is stored yet (ingest logs with `quarry ingest`)"]

    light_client.ingest_sessions(generate_sessions(300, seed=5))
    missed = light_client.search("zzyzxquuxnothere since:2020-01-01")
    assert not missed.hits
    assert any("bounded in time" in c for c in missed.caveats)
    filtered = light_client.search("sqlite repo:no-such-repo")
    assert not filtered.hits and filtered.reading == "query"
    assert any("repo:no-such-repo left them all out" in c for c in filtered.caveats)
    every_word = light_client.search("sqlite AND zzyzxquuxnothere")
    assert not every_word.hits
    assert any(c.startswith("read as prose") for c in every_word.caveats)
    assert light_client.search("sqlite zzyzxquuxnothere").hits  # prose: any of its words
    other_origin = light_client.search("sqlite origin:gemini-cli-session")
    assert not other_origin.hits
    assert "the archive holds no session of origin gemini-cli-session" in other_origin.caveats[0]
    assert "origins stored: claude-code-session)" in other_origin.caveats[0]
    found = light_client.search("sqlite")
    assert found.hits and not any("archive is empty" in c for c in found.caveats)
