"""Listings printed as lines of styled parts, with rich only on a terminal.

A search's and a unit query's plain listing (what agents and scripts read most) is built as lines of
parts, each plain text or (text, rich style). On a terminal rich prints them styled
(`rich.text.Text.assemble`: no markup to parse, so nothing in a title or snippet needs escaping);
anywhere else (a pipe, a file, an agent's subprocess) the texts are written as they are, unwrapped,
and rich (~25 ms of a command's start, issue 13) is never imported. The characters are the same
either way (tests/client/test_lines.py).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Protocol, TextIO

if TYPE_CHECKING:
    from rich.console import Console

Part = str | tuple[str, str]  # text, or (text, rich style)


class Lines(Protocol):
    def line(self, *parts: Part, wrap: bool = False) -> None:
        """Print one line; `wrap`: a terminal may wrap it at its width (headers, notes), else it is
        one line however long (a hit's id, title and snippet)."""


class PlainLines:
    """Lines as text, for a stream that is not a terminal (sys.stdout when printing, by default)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream

    def line(self, *parts: Part, wrap: bool = False) -> None:
        stream = self._stream or sys.stdout
        stream.write("".join(part if isinstance(part, str) else part[0] for part in parts) + "\n")


class RichLines:
    """Lines styled by a rich console."""

    def __init__(self, console: Console) -> None:
        self._console = console

    def line(self, *parts: Part, wrap: bool = False) -> None:
        from rich.text import Text

        self._console.print(Text.assemble(*parts), soft_wrap=not wrap)


def on_terminal(stream: TextIO) -> bool:
    """Whether output to `stream` is styled: a terminal, or FORCE_COLOR set (as rich decides)."""
    return bool(os.environ.get("FORCE_COLOR")) or stream.isatty()


def stdout_lines() -> Lines:
    """The lines a command prints its listing to."""
    if on_terminal(sys.stdout):
        from quarry.cli.lazy import stdout

        return RichLines(stdout())
    return PlainLines()
