"""Lowering of predicates over one unit: fields validated against the unit's table (docs/query-language.md#fields,
#field-reference), comparisons of counts, numbers and dates, full text, semantic leaves and the session
predicates (`exists`, `seq`, `lineage:id:`, `near:id:`), each as a plan predicate.

A full-text expression's negation stays inside an FtsExpr only within an `all` with a positive sibling; any
other (`-foo` alone, `a OR -b`) is lifted to the Predicate's `negate` / `any` (docs/query-language.md#negation).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from quarry.core import session_ids
from quarry.core.vocab import ORIGINS
from quarry.dsl import ast, comparisons, cost
from quarry.dsl.errors import BAD_VALUE, UNKNOWN_FIELD, UNSUPPORTED_FORM, UNSUPPORTED_NEGATION, query_error
from quarry.dsl.fields import (
    EXISTS_UNITS,
    SESSION_FIELDS,
    SESSION_SCOPE_NAMES,
    FieldKind,
    FieldSpec,
    canonical_value,
    unit_fields,
)
from quarry.dsl.reading import slip_of
from quarry.v1 import plan_pb2

# `near:x` / `lineage:x` without `id:` / `text:`: what the user meant to write.
_PREFIX_FIELDS = {
    "near": 'near: takes near:"free text", near:text:… or near:id:<session id>',
    "lineage": "lineage: takes lineage:id:<session id>",
}


@dataclass
class Context:
    """What the lowerings of one query share: the time relative dates are anchored to, the semantic leaves
    found so far (a query holds one) and the cost budget."""

    now_ms: int
    semantic: list[ast.Semantic] = field(default_factory=list)
    meter: cost.Meter = field(default_factory=cost.Meter)  # the query's cost budget (cost.py)


class Lowering:
    """Lowers one predicate over one unit, validating fields as it goes.

    `unit` is `sessions` for session predicates (where exists / seq / lineage / near are allowed);
    `inner` names where the predicate sits for error messages ("a seq step", "an exists body"; "" at the top).
    """

    def __init__(
        self,
        unit: str,
        context: Context,
        *,
        in_session_scope: bool = False,
        inner: str = "",
    ) -> None:
        self.unit = unit
        self.fields = unit_fields(unit)
        self.context = context
        self.in_session_scope = in_session_scope
        self.inner = inner  # "" at the top of a query, else "an exists body" / "a seq step"

    def predicate(self, node: ast.Predicate, negated: bool = False) -> plan_pb2.Predicate:
        match node:
            case ast.And(items):
                return _joined("all", [self.predicate(item, negated) for item in items])
            case ast.Or(items):
                return _joined("any", [self.predicate(item, negated) for item in items])
            case ast.Not(item):
                return plan_pb2.Predicate(negate=self.predicate(item, not negated))
            case ast.FreeText(expr) | ast.FtsLeaf(expr):
                self.charge_text(expr)
                return _fts_predicate(expr)
            case ast.Field():
                return self.field(node, negated)
            case ast.Comparison():
                return self.comparison(node)
            case ast.Semantic():
                return self.semantic_leaf(node, negated)
            case ast.Exists():
                return self.exists(node)
            case ast.Seq():
                return self.seq(node)
            case ast.Lineage(session_id):
                self.session_level(node, "lineage:id:")
                return plan_pb2.Predicate(lineage=_session_id(session_id, node.span))
            case ast.NearSession(session_id):
                self.session_level(node, "near:id:")
                if negated:
                    raise query_error(UNSUPPORTED_NEGATION, "near:id: cannot be negated", node.span, "near:id")
                if self.in_session_scope:
                    raise query_error(
                        UNSUPPORTED_FORM,
                        "near:id: is a vector leaf: not supported in a `sessions where … |` scope stage",
                        node.span,
                        "near:id",
                    )
                return plan_pb2.Predicate(near_session=_session_id(session_id, node.span))
        raise TypeError(f"not a predicate: {node!r}")

    # ------------------------------------------------------------ session predicates

    def session_level(self, node: ast.Predicate, written: str) -> None:
        """Refuse a session predicate where the predicate is over unit rows."""
        if self.unit == "sessions":
            return
        where = self.inner or f"`{self.unit} where …`"
        raise query_error(
            UNSUPPORTED_FORM,
            f"{written} is a session predicate, not allowed in {where}: scope the unit query with "
            f"`sessions where {written}… | {self.unit} where …`",
            node.span,
            written.rstrip(":("),
        )

    def exists(self, node: ast.Exists) -> plan_pb2.Predicate:
        self.session_level(node, "exists")
        unit = EXISTS_UNITS.get(node.unit)
        if unit is None:
            hint = ""
            singular = next((name for name, plural in EXISTS_UNITS.items() if plural == node.unit), None)
            if singular is not None:
                hint = f" (exists names the unit in the singular: exists {singular}(…))"
            raise query_error(
                UNSUPPORTED_FORM,
                f"exists {node.unit}(…): not a unit{hint}; units: {', '.join(EXISTS_UNITS)}",
                node.span,
                node.unit,
                tuple(EXISTS_UNITS),
                fix=(f"{node.unit}(", f"{singular}(") if singular is not None else None,
            )
        body = Lowering(unit, self.context, inner="an exists body").predicate(node.predicate)
        return plan_pb2.Predicate(exists=plan_pb2.ExistsPredicate(unit=unit, where=body))

    def seq(self, node: ast.Seq) -> plan_pb2.Predicate:
        self.session_level(node, "seq(")
        lowering = Lowering("actions", self.context, inner="a seq step")
        steps = [lowering.predicate(step) for step in node.steps]
        return plan_pb2.Predicate(seq=plan_pb2.SeqPredicate(steps=steps))

    def semantic_leaf(self, node: ast.Semantic, negated: bool) -> plan_pb2.Predicate:
        if negated:
            raise query_error(UNSUPPORTED_NEGATION, "a semantic leaf cannot be negated", node.span, semantic_name(node))
        if self.in_session_scope or self.inner:
            where = self.inner or "a `sessions where … |` scope stage"
            raise query_error(
                UNSUPPORTED_FORM,
                f"semantic leaves are not supported in {where}",
                node.span,
                semantic_name(node),
            )
        if not node.text.strip():
            raise query_error(BAD_VALUE, "a semantic leaf needs text", node.span, semantic_name(node))
        self.context.semantic.append(node)
        return plan_pb2.Predicate(semantic=node.text)

    # ------------------------------------------------------------ fields

    def field(self, node: ast.Field, negated: bool) -> plan_pb2.Predicate:
        spec = self.spec(node.name, node.session_scoped, node.span)
        if negated and not spec.negatable:
            raise query_error(
                UNSUPPORTED_NEGATION,
                f"{_name(node)} cannot be negated (negatable: {', '.join(_negatable(self.fields))})",
                node.span,
                _name(node),
                _negatable(self.fields),
            )
        for value in node.values:
            if not value.text.strip():
                raise query_error(BAD_VALUE, f"{_name(node)} needs a value", value.span, _name(node))
        if spec.kind is FieldKind.FTS:
            expr = [_text_value(value) for value in node.values]
            for value in node.values:
                self.context.meter.charge(cost.text_weight(self.unit), f"{_name(node)}:{value.text}", value.span)
            return _fts_predicate(expr[0] if len(expr) == 1 else ast.FtsOr(tuple(expr)))
        if spec.compared:
            if len(node.values) != 1:
                raise query_error(
                    UNSUPPORTED_FORM,
                    f"{_name(node)} compares one value: write {_name(node)}:>=a AND {_name(node)}:<=b for a range",
                    node.values[1].span,
                    _name(node),
                )
            value = node.values[0]
            op, raw = comparisons.split_compact(value.text)
            if spec.name in ("since", "until") and op != "=":
                raise query_error(
                    BAD_VALUE,
                    f"{spec.name}: takes a date without an operator (write date:{op}…)",
                    value.span,
                    value.text,
                )
            return self.compared(spec, op, [raw], node.session_scoped, value.span)
        values = [_checked_value(spec, node, value) for value in node.values]
        weight = cost.field_weight("sessions" if node.session_scoped else self.unit, spec.alias_of or spec.name)
        for value in node.values:
            self.context.meter.charge(weight, f"{_name(node)}:{value.text}", value.span)
        if spec.name == "has":
            features = [_feature(value, node.session_scoped) for value in values]
            return features[0] if len(features) == 1 else _joined("any", features)
        clause = plan_pb2.FieldClause(
            field=spec.alias_of or spec.name, values=values, session_scoped=node.session_scoped
        )
        return plan_pb2.Predicate(field=clause)

    def comparison(self, node: ast.Comparison) -> plan_pb2.Predicate:
        spec = self.spec(node.field, node.session_scoped, node.span)
        if not spec.compared:
            raise query_error(BAD_VALUE, f"{node.field} is not compared with {node.op}", node.span, node.field)
        return self.compared(spec, node.op, list(node.values), node.session_scoped, node.span)

    def compared(
        self, spec: FieldSpec, op: str, raw: list[str], scoped: bool, span: ast.Span | None
    ) -> plan_pb2.Predicate:
        """A number or date comparison -> FieldClause with op (see quarry.dsl.comparisons)."""
        self.context.meter.charge(cost.field_weight("sessions" if scoped else self.unit, spec.name), spec.name, span)
        try:
            if spec.kind is FieldKind.NUMBER:
                numbers = [comparisons.number(value, spec.decimal) for value in raw]
                bounds, clause_op, name = numbers, comparisons.OPS[op], spec.name
            else:
                intervals = [comparisons.date_interval(value, self.context.now_ms) for value in raw]
                if spec.name != "date":
                    op = ">=" if spec.name == "since" else "<="
                clause_op, bounds = comparisons.date_clause(op, intervals)
                name = "date"
        except comparisons.BadComparisonValue as error:
            raise query_error(BAD_VALUE, f"{spec.name}: {error}", span, " ".join(raw)) from None
        if clause_op == plan_pb2.BETWEEN and bounds[0] > bounds[1]:
            raise query_error(BAD_VALUE, f"{spec.name} between: the low bound is above the high one", span)
        clause = plan_pb2.FieldClause(
            field=name, op=clause_op, values=[str(bound) for bound in bounds], session_scoped=scoped
        )
        return plan_pb2.Predicate(field=clause)

    def spec(self, name: str, session_scoped: bool, span: ast.Span | None) -> FieldSpec:
        written = f"session.{name}" if session_scoped else name
        if not session_scoped:
            spec = self.fields.get(name)
            if spec is not None:
                return spec
            if name in _PREFIX_FIELDS:
                raise query_error(BAD_VALUE, _PREFIX_FIELDS[name], span, name, ("near:id:", "near:text:"))
            if name == "lane":
                raise query_error(
                    UNSUPPORTED_FORM,
                    "lane: chooses a compact query's search lane, at its top level (`lane:hybrid sqlite locking`)",
                    span,
                    name,
                )
            scoped = "id" if name == "session" else name
            hint = ""
            fix = None
            if name in SESSION_FIELDS and self.unit != "sessions" and scoped in SESSION_SCOPE_NAMES:
                hint = f"; for the owning session write session.{scoped}:"
                fix = (f"{name}:", f"session.{scoped}:")
            elif (slip := slip_of(name)) is not None and slip in self.fields:
                hint = f"; did you mean {slip}:?"
                fix = (f"{name}:", f"{slip}:")
            names = sorted(self.fields)
            raise query_error(
                UNKNOWN_FIELD,
                f"{self.unit} have no field {name!r}{self._in()} (fields: {', '.join(names)}){hint}",
                span,
                name,
                names,
                fix=fix,
            )
        if self.unit == "sessions":
            raise query_error(
                UNSUPPORTED_FORM,
                f"session.<field> qualifies fields of a unit query; in a sessions query write {name}:",
                span,
                written,
            )
        if self.inner == "a seq step":
            raise query_error(
                UNSUPPORTED_FORM,
                "a seq step is an action predicate: session.<field> goes beside the seq, outside it",
                span,
                written,
            )
        target = SESSION_SCOPE_NAMES.get(name)
        if target is not None:
            return SESSION_FIELDS[target]
        if name == "text":
            raise query_error(
                UNSUPPORTED_FORM,
                'session.text is not supported: scope by session text with `sessions where ~"…" | <unit> where …`',
                span,
                written,
            )
        names = sorted(f"session.{scoped}" for scoped in SESSION_SCOPE_NAMES)
        raise query_error(
            UNKNOWN_FIELD,
            f"sessions have no field session.{name} here (fields: {', '.join(names)})",
            span,
            written,
            names,
        )

    def _in(self) -> str:
        return f" in {self.inner}" if self.inner else ""

    def charge_text(self, expr: ast.Fts) -> None:
        """Charge each word of a full-text leaf on a unit without a full-text index (cost.py)."""
        weight = cost.text_weight(self.unit)
        for leaf in _fts_words(expr) if weight else ():
            self.context.meter.charge(weight, leaf.text, leaf.span)


def _session_id(text: str, span: ast.Span | None) -> str:
    if not session_ids.well_formed(text):
        raise query_error(
            BAD_VALUE,
            f"a session id is [<scope>@]<origin>:<native id>, the origin in lower-case words joined by - (read here: "
            f"{', '.join(ORIGINS)})",
            span,
            text,
            ORIGINS,
        )
    return text


def _checked_value(spec: FieldSpec, node: ast.Field, value: ast.Value) -> str:
    canonical = canonical_value(spec, value.text)
    if canonical is None:
        raise query_error(
            BAD_VALUE,
            f"{_name(node)}:{value.text} is not a known {spec.name} (one of: {', '.join(spec.allowed)})",
            value.span,
            value.text,
            spec.allowed,
        )
    if spec.kind is FieldKind.SESSION_ID:
        return _session_id(canonical, value.span)
    if spec.name == "contains" and not canonical.strip():
        raise query_error(BAD_VALUE, "contains: needs some text to find", value.span, value.text)
    return canonical


# `has:FEATURE` lowered onto what records the feature (fields.FEATURES): a count above zero, or a row.
_FEATURE_COUNTS = {"tools": "tool_use_messages", "thinking": "thinking_messages", "paste": "paste_messages"}
_FEATURE_ROWS = {
    "images": ("blocks", "type", "image"),
    "errors": ("actions", "is_error", "true"),
    "subagents": ("runs", "role", "subagent"),
    "compaction": ("context-snapshots", "boundary", "compaction"),
}


def _feature(name: str, scoped: bool) -> plan_pb2.Predicate:
    """One feature as a session predicate (`scoped`: of a unit row's owning session)."""
    if name in _FEATURE_COUNTS:
        clause = plan_pb2.FieldClause(field=_FEATURE_COUNTS[name], op=plan_pb2.GT, values=["0"], session_scoped=scoped)
        return plan_pb2.Predicate(field=clause)
    unit, field, value = _FEATURE_ROWS[name]
    row = plan_pb2.Predicate(field=plan_pb2.FieldClause(field=field, values=[value]))
    return plan_pb2.Predicate(exists=plan_pb2.ExistsPredicate(unit=unit, where=row))


def _text_value(value: ast.Value) -> ast.Fts:
    if value.quoted:
        return ast.Phrase(value.text)
    if value.text.endswith("*"):
        stem = value.text.rstrip("*")
        if not stem:
            raise query_error(BAD_VALUE, "a prefix needs a word before the `*`", value.span, value.text)
        return ast.Prefix(stem)
    return ast.Term(value.text)


def _name(node: ast.Field) -> str:
    return f"session.{node.name}" if node.session_scoped else node.name


def semantic_name(node: ast.Semantic) -> str:
    return "semantic" if node.via == "semantic" else "near:text"


def _negatable(fields: dict[str, FieldSpec]) -> list[str]:
    return sorted(name for name, spec in fields.items() if spec.negatable)


def _joined(kind: Literal["all", "any"], items: list[plan_pb2.Predicate]) -> plan_pb2.Predicate:
    """`all` / `any` of `items`, absorbing children of the same kind."""
    out = plan_pb2.Predicate()
    target = getattr(out, kind).items
    for item in items:
        target.extend(getattr(item, kind).items if item.WhichOneof("node") == kind else [item])
    return out


# ---------------------------------------------------------------- full text


def _fts_ok(expr: ast.Fts, negation_allowed: bool = False) -> bool:
    """Whether `expr` is a valid FtsExpr: every negation inside an AND with a positive sibling."""
    match expr:
        case ast.FtsNot(item):
            return negation_allowed and _fts_ok(item)
        case ast.FtsAnd(items):
            has_positive = any(not isinstance(item, ast.FtsNot) for item in items)
            return has_positive and all(_fts_ok(item, negation_allowed=True) for item in items)
        case ast.FtsOr(items):
            return all(_fts_ok(item) for item in items)
    return True


def _fts_predicate(expr: ast.Fts) -> plan_pb2.Predicate:
    if _fts_ok(expr):
        return plan_pb2.Predicate(fts=_fts_expr(expr))
    match expr:
        case ast.FtsNot(item):
            return plan_pb2.Predicate(negate=_fts_predicate(item))
        case ast.FtsAnd(items) if all(isinstance(item, ast.FtsNot) for item in items):
            # `-a -b` is NOT (a OR b): one full-text leaf instead of one per word.
            either = ast.FtsOr(tuple(item.item for item in items))  # type: ignore[union-attr]
            return plan_pb2.Predicate(negate=_fts_predicate(either))
        case ast.FtsAnd(items):
            return _joined("all", [_fts_predicate(item) for item in items])
        case ast.FtsOr(items):
            return _joined("any", [_fts_predicate(item) for item in items])
    raise AssertionError(f"a leaf is always valid: {expr!r}")


def _fts_words(expr: ast.Fts) -> list[ast.Term | ast.Phrase | ast.Prefix]:
    """The words, phrases and prefixes of a full-text expression, in order."""
    match expr:
        case ast.FtsAnd(items) | ast.FtsOr(items):
            return [leaf for item in items for leaf in _fts_words(item)]
        case ast.FtsNot(item):
            return _fts_words(item)
    return [expr]


def _fts_expr(expr: ast.Fts) -> plan_pb2.FtsExpr:
    match expr:
        case ast.Term(text):
            return plan_pb2.FtsExpr(term=text)
        case ast.Phrase(text):
            return plan_pb2.FtsExpr(phrase=text)
        case ast.Prefix(text):
            return plan_pb2.FtsExpr(prefix=text)
        case ast.FtsAnd(items):
            return plan_pb2.FtsExpr(all=plan_pb2.FtsList(items=[_fts_expr(item) for item in items]))
        case ast.FtsOr(items):
            return plan_pb2.FtsExpr(any=plan_pb2.FtsList(items=[_fts_expr(item) for item in items]))
        case ast.FtsNot(item):
            return plan_pb2.FtsExpr(negate=_fts_expr(item))
    raise TypeError(f"not a full-text node: {expr!r}")
