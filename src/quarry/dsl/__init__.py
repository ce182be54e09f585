"""The Quarry query language: Lark grammar -> typed AST -> QueryPlan.

parse(text) -> ast.Query             syntax only; raises QuarryError(INVALID_QUERY, …)
compile_query(text, now_ms=None) -> CompiledQuery   parse, validate fields and values, lower to a plan
explain(text, now_ms=None) -> ExplainResponse     the typed AST (JSON) and the plan with ordered stages
render(query) -> str                 canonical text; parse(render(q)) == q
plain_text_query(text) -> str        prose as a query of its words (no operators, fields or keywords)

The names are imported on first use (PEP 562), so that a light submodule (`quarry.dsl.shell`, what the
CLI's search needs) does not load Lark and the compiler (issue 13: CLI start). `render` and `explain`
are also submodule names: the first read of either imports its submodule and binds the function here,
so `from quarry.dsl import render` gives the function (import them from the package, not the submodule).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from quarry.dsl import ast
    from quarry.dsl.compile import UNIT_SOURCES, CompiledQuery, compile_query
    from quarry.dsl.explain import ast_json, explain
    from quarry.dsl.fields import FIELDS_BY_UNIT, FieldKind, FieldSpec
    from quarry.dsl.parser import MAX_DEPTH, MAX_QUERY_CHARS, parse
    from quarry.dsl.plain import plain_text_query
    from quarry.dsl.render import render

_SOURCES = {
    "UNIT_SOURCES": "compile",
    "CompiledQuery": "compile",
    "compile_query": "compile",
    "ast_json": "explain",
    "explain": "explain",
    "FIELDS_BY_UNIT": "fields",
    "FieldKind": "fields",
    "FieldSpec": "fields",
    "MAX_DEPTH": "parser",
    "MAX_QUERY_CHARS": "parser",
    "parse": "parser",
    "plain_text_query": "plain",
    "render": "render",
}

__all__ = [
    "FIELDS_BY_UNIT",
    "MAX_DEPTH",
    "MAX_QUERY_CHARS",
    "UNIT_SOURCES",
    "CompiledQuery",
    "FieldKind",
    "FieldSpec",
    "ast",
    "ast_json",
    "compile_query",
    "explain",
    "parse",
    "plain_text_query",
    "render",
]


def __getattr__(name: str) -> Any:
    if name == "ast":
        return importlib.import_module("quarry.dsl.ast")
    if name not in _SOURCES:
        raise AttributeError(f"module 'quarry.dsl' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"quarry.dsl.{_SOURCES[name]}"), name)
    globals()[name] = value  # over the submodule the import bound to `render` / `explain`
    return value
