"""The `quarry` CLI against a real query node and partitions in this process: unit queries typed on the
command line come back as rows in every format, and --explain prints the query's plan."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
import yaml
from typer.testing import CliRunner

from quarry.cli.main import app, with_default_command
from tests.query.inprocess import Cluster

QUERY = "messages where role:user | sort by time desc | limit 4"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    cluster = Cluster(tmp_path_factory.mktemp("cluster"), 2)
    home = tmp_path_factory.mktemp("home")
    cluster.record(home)
    yield home
    cluster.close()


def quarry(home: Path, *args: str) -> str:
    result = CliRunner().invoke(app, with_default_command(["--home", str(home), *args]))
    assert result.exit_code == 0, result.output
    return result.output


def test_unit_rows_in_every_format(home: Path) -> None:
    envelope = orjson.loads(quarry(home, "--format", "json", QUERY))
    refs = [row["ref"] for row in envelope["rows"]]
    assert len(refs) == 4 and all(ref.startswith("message:") for ref in refs)
    as_yaml = yaml.safe_load(quarry(home, "--format", "yaml", QUERY))
    # the query's `| limit 4` cut the listing: each answer has a cursor for the rest (minted with its
    # own clock, so the tokens differ)
    assert envelope.pop("hasMore") and envelope.pop("nextCursor") and as_yaml.pop("nextCursor")
    assert as_yaml.pop("hasMore") and as_yaml == envelope
    assert [orjson.loads(line)["ref"] for line in quarry(home, "--format", "ndjson", QUERY).splitlines()] == refs
    records = list(csv.DictReader(io.StringIO(quarry(home, "--format", "csv", QUERY))))
    assert [r["ref"] for r in records] == refs and {r["role"] for r in records} == {"user"}
    plain = quarry(home, QUERY)
    assert "4 messages" in plain and all(ref in plain for ref in refs)
    assert plain.splitlines()[-1].startswith(f"next: quarry search '{QUERY}' --limit 4 --cursor ")


def test_explain_prints_the_plan(home: Path) -> None:
    explained = orjson.loads(quarry(home, "--explain", "--format", "json", QUERY))
    assert (explained["kind"], explained["unitSource"]) == ("units", "messages")
    assert [next(k for k, v in stage.items() if v is not None) for stage in explained["plan"]["stages"]] == [
        "sort",
        "limit",
    ]
