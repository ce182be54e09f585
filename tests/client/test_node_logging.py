"""A node's log: every line with its time, level and logger (lines of several nodes can be lined up),
at the level `--log-level` / $QUARRY_LOG_LEVEL asks for; an unknown level is a typed error."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from quarry.cli.main import app
from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2

EMIT = (
    "import logging, sys\n"
    "from quarry.cli.node import node_logging\n"
    "node_logging(sys.argv[1])\n"
    "logging.getLogger('quarry.index.replica').info('partition 3 moved away')\n"
    "logging.getLogger('quarry.index.replica').warning('heartbeat failed')\n"
)


def node_log(level: str) -> str:
    return subprocess.run([sys.executable, "-c", EMIT, level], capture_output=True, text=True, check=True).stderr


def test_each_line_carries_its_time_level_and_logger() -> None:
    lines = node_log("info").splitlines()
    stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}"
    assert re.fullmatch(stamp + r" INFO quarry\.index\.replica: partition 3 moved away", lines[0])
    assert re.fullmatch(stamp + r" WARNING quarry\.index\.replica: heartbeat failed", lines[1])


def test_an_unknown_level_is_a_typed_error_naming_the_option() -> None:
    result = CliRunner().invoke(app, ["node", "--log-level", "loud", "index"])
    assert isinstance(result.exception, QuarryError)
    assert (result.exception.code, result.exception.parameter) == (errors_pb2.INVALID_REQUEST, "--log-level")


@pytest.mark.parametrize(("level", "logged"), [("debug", 2), ("Info", 2), ("WARNING", 1), ("error", 0)])
def test_levels_are_read_in_any_case(level: str, logged: int) -> None:
    assert len(node_log(level).splitlines()) == logged
