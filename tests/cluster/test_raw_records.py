"""Through a real 2-partition cluster: `quarry sessions read ID --raw` of a Claude Code log holding an image
block, a thinking signature and a 4,000-character DNA-like message prints the file byte for byte, whether
the ingest node read the file or a client parsed and pushed it, and on the NATS log (whose Session
records are all its replicas receive); a window of events stays compact (the payloads' placeholders); a
pushed session whose payloads cannot give back its records is refused."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from quarry.cli.local import LocalCluster
from quarry.client.client import QuarryClient
from quarry.ingest.parse import parse_bytes
from tests import held_logs

pytestmark = pytest.mark.cluster

PUSHED_UUID = "0c6a3f5e-1d2b-4a7c-9e8f-5b4d3c2a1f0e"
FORGED_UUID = "e3b1a9d7-6c5f-4e2d-8a1b-9f0e7d6c5b4a"


def _raw_read(home: Path, session_id: str) -> bytes:
    result = subprocess.run(
        [sys.executable, "-m", "quarry.cli", "--home", str(home), "sessions", "read", session_id, "--raw"],
        capture_output=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout


def test_the_raw_read_of_an_ingested_file_is_the_file(light_home: Path, light_client: QuarryClient) -> None:
    log = light_home / "archive" / "genome.jsonl"  # under the cluster's home: a path it may ingest
    log.parent.mkdir()
    log.write_bytes(held_logs.log_bytes())
    report = list(light_client.ingest_paths([log]))[-1].report
    assert report.sessions_written == 1 and not report.issues, report
    assert _raw_read(light_home, held_logs.SESSION_ID) == log.read_bytes()
    header, events = light_client.sessions.read(held_logs.SESSION_ID)
    assert header.id == held_logs.SESSION_ID and not header.held_payloads  # the header is a summary
    assert [e.raw_json for e in events] == held_logs.lines() and not any(e.held for e in events)
    window = light_client.sessions.event(held_logs.SESSION_ID, 3, before=1)  # the image and its neighbour
    image = window.target
    marker = orjson.loads(image.raw_json[image.held[0].start : image.held[0].end])
    assert (marker["held_apart"], marker["media_type"]) == ("media", "image/png")
    assert len(image.raw_json) < len(held_logs.lines()[3]) // 4


def test_a_pushed_session_travels_with_its_payloads(light_home: Path, light_client: QuarryClient) -> None:
    (session,) = parse_bytes(held_logs.log_bytes(PUSHED_UUID), "/laptop/genome.jsonl").sessions
    report = light_client.ingest_sessions([session])
    assert report.sessions_written == 1 and not report.issues, report
    assert _raw_read(light_home, session.id) == held_logs.log_bytes(PUSHED_UUID)


def test_a_pushed_session_missing_a_payload_is_refused(light_client: QuarryClient) -> None:
    (session,) = parse_bytes(held_logs.log_bytes(FORGED_UUID), "/laptop/forged.jsonl").sessions
    del session.held_payloads[0]
    report = light_client.ingest_sessions([session])
    assert report.sessions_written == 0
    [issue] = report.issues
    assert issue.code == "invalid_record" and "which the session lacks" in issue.reason


@pytest.fixture(scope="module")
def log_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A cluster on the NATS log: its index nodes receive sessions only as Session records of the log."""
    home = tmp_path_factory.mktemp("quarry-raw-log")
    local = LocalCluster(home, embedder="none", log="nats", index_nodes=2, replicas=2, partitions=4, nats_servers=1)
    local.start()
    yield home
    local.stop()


def test_on_the_log_the_payloads_travel_with_the_session(log_home: Path) -> None:
    log = log_home / "archive" / "genome.jsonl"
    log.parent.mkdir()
    log.write_bytes(held_logs.log_bytes())
    with QuarryClient.for_home(log_home) as client:
        report = list(client.ingest_paths([log]))[-1].report
        assert report.sessions_written == 1 and not report.issues, report
    assert _raw_read(log_home, held_logs.SESSION_ID) == log.read_bytes()
