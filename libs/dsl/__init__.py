"""The Quarry query language: Lark grammar -> typed AST -> QueryPlan.

parse(text) -> ast.Query             syntax only; raises QuarryError(INVALID_QUERY, …)
compile_query(text) -> CompiledQuery parse, validate fields and values, lower to a plan
render(query) -> str                 canonical text; parse(render(q)) == q
"""

from quarry.dsl import ast
from quarry.dsl.compile import UNIT_SOURCES, CompiledQuery, compile_query
from quarry.dsl.fields import FIELDS_BY_UNIT, FieldKind, FieldSpec
from quarry.dsl.parser import MAX_DEPTH, MAX_QUERY_CHARS, parse
from quarry.dsl.render import render

__all__ = [
    "FIELDS_BY_UNIT",
    "MAX_DEPTH",
    "MAX_QUERY_CHARS",
    "UNIT_SOURCES",
    "CompiledQuery",
    "FieldKind",
    "FieldSpec",
    "ast",
    "compile_query",
    "parse",
    "render",
]
