"""Every origin a parser writes is one the ingest node accepts: a parser whose origin is missing from
`vocab.ORIGINS` would have every session it reads refused by validation (INVALID_ARGUMENT on `origin`)."""

from __future__ import annotations

import importlib
import pkgutil

import quarry.ingest.sources as sources
from quarry.core import vocab


def parser_origins() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for module_info in pkgutil.iter_modules(sources.__path__):
        module = importlib.import_module(f"{sources.__name__}.{module_info.name}")
        named = {module.ORIGIN} if isinstance(getattr(module, "ORIGIN", None), str) else set()
        named |= (
            set(getattr(module, "ORIGINS", {}).values())
            if isinstance(getattr(module, "ORIGINS", None), dict)
            else set()
        )
        if named:
            found[module_info.name] = named
    return found


def test_every_parser_origin_is_accepted_on_ingest() -> None:
    origins = parser_origins()
    assert len(origins) >= 20  # the parsers were found
    unknown = {
        name: sorted(named - set(vocab.ORIGINS)) for name, named in origins.items() if named - set(vocab.ORIGINS)
    }
    assert unknown == {}
