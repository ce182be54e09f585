"""Imports deferred to first use, so that `quarry --help` and a search load only what they run
(issue 13): `render = lazy_module("quarry.cli.render")` imports the module at the first
`render.<name>`; `stdout()` and `stderr()` make the command's rich consoles when first printed to."""

from __future__ import annotations

import functools
import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


class _LazyModule:
    """Stands for a module until an attribute is read from it, then imports it."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(importlib.import_module(self._name), attribute)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}>"


def lazy_module(name: str) -> ModuleType:
    """The module `name`, imported when one of its attributes is first read."""
    return _LazyModule(name)  # type: ignore[return-value]


@functools.cache
def stdout() -> Console:
    """The console commands print to (it writes to whatever sys.stdout is when printing). Emoji codes
    are off: a title or snippet holding `:smile:` is printed as written, and rich's table of the codes
    is not loaded by every command that prints."""
    from rich.console import Console

    return Console(emoji=False)


@functools.cache
def stderr() -> Console:
    """The console for progress, notes and errors."""
    from rich.console import Console

    return Console(stderr=True, emoji=False)


def escape(markup: str) -> str:
    """rich.markup.escape, imported when first used."""
    from rich.markup import escape

    return escape(markup)
