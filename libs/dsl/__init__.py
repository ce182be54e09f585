"""The Quarry query language: Lark grammar -> typed AST -> QueryPlan.

parse(text) -> ast.Query             syntax only; raises QuarryError(INVALID_QUERY, …)
compile_query(text, now_ms=None) -> CompiledQuery   parse, validate fields and values, lower to a plan
explain(text, now_ms=None) -> ExplainResponse     the typed AST (JSON) and the plan with ordered stages
render(query) -> str                 canonical text; parse(render(q)) == q
plain_text_query(text) -> str        prose as a query of its words (no operators, fields or keywords)
"""

from quarry.dsl import ast
from quarry.dsl.compile import UNIT_SOURCES, CompiledQuery, compile_query
from quarry.dsl.explain import ast_json, explain
from quarry.dsl.fields import FIELDS_BY_UNIT, FieldKind, FieldSpec
from quarry.dsl.parser import MAX_DEPTH, MAX_QUERY_CHARS, parse
from quarry.dsl.plain import plain_text_query
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
    "ast_json",
    "compile_query",
    "explain",
    "parse",
    "plain_text_query",
    "render",
]
