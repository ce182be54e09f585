"""Plan predicates lowered to SQL over the store's tables.

Session predicates use the alias `s` (sessions); unit predicates use `u` (messages, actions or
blocks). Full-text leaves are not SQL: the `FullText` the caller passes evaluates them in Tantivy to
ordinal sets, injected as `ord IN (SELECT value FROM json_each(?))`.

Message-level grouping: inside one `all`, the `fts` leaves and `role` clauses (and negated role
clauses) must hold in the same message; the group becomes one message-level condition.

Field values are alternatives (OR). Closed-vocabulary fields compare case-insensitively (NOCASE
columns); path, title, command and output are substring tests (title folded like the index).
Times accept epoch milliseconds or ISO dates/datetimes (UTC); a bare date covers its whole day.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Protocol

from quarry.core.errors import QuarryError
from quarry.index.lexical import analyzer, fts
from quarry.index.lexical.store import COUNT_FIELDS, json_list
from quarry.v1 import errors_pb2, plan_pb2

Comparison = plan_pb2.Comparison
TRUE = "1"
FALSE = "0"


@dataclass
class Sql:
    text: str
    params: list[object] = field(default_factory=list)


@dataclass(frozen=True)
class RoleClause:
    clause: plan_pb2.FieldClause
    negated: bool = False


def _role_clause(pred: plan_pb2.Predicate) -> RoleClause | None:
    kind = pred.WhichOneof("node")
    if kind == "field" and pred.field.field == "role" and not pred.field.session_scoped:
        return RoleClause(pred.field)
    if kind == "negate" and pred.negate.WhichOneof("node") == "field" and pred.negate.field.field == "role":
        return RoleClause(pred.negate.field, negated=True)
    return None


def split_group(
    items: Sequence[plan_pb2.Predicate],
) -> tuple[list[plan_pb2.FtsExpr], list[RoleClause], list[plan_pb2.Predicate]]:
    """An `all` group's message-level parts (fts leaves, role clauses) and its session-level rest."""
    exprs: list[plan_pb2.FtsExpr] = []
    roles: list[RoleClause] = []
    others: list[plan_pb2.Predicate] = []
    for item in items:
        role = _role_clause(item)
        if role is not None:
            roles.append(role)
        elif item.WhichOneof("node") == "fts":
            exprs.append(item.fts)
        else:
            others.append(item)
    return exprs, roles, others


class FullText(Protocol):
    """Evaluates full-text leaves in Tantivy for the lowering."""

    def sessions(self, exprs: Sequence[plan_pb2.FtsExpr], roles: Sequence[RoleClause]) -> Collection[int]:
        """Ordinals of the sessions with one message matching every expression and role clause."""
        ...

    def units(self, unit: str, expr: plan_pb2.FtsExpr) -> Collection[int]:
        """Ordinals of the unit rows (messages or blocks) whose text matches the expression."""
        ...


def _bad(code: int, message: str, token: str = "") -> QuarryError:
    return QuarryError(code, message, token=token)


def _in(column: str, values: Sequence[object]) -> Sql:
    if len(values) == 1:
        return Sql(f"{column} = ?", [values[0]])
    return Sql(f"{column} IN ({', '.join('?' * len(values))})", list(values))


def _any(parts: Sequence[Sql]) -> Sql:
    if not parts:
        return Sql(FALSE)
    if len(parts) == 1:
        return parts[0]
    return Sql("(" + " OR ".join(p.text for p in parts) + ")", [x for p in parts for x in p.params])


def _all(parts: Sequence[Sql]) -> Sql:
    if not parts:
        return Sql(TRUE)
    if len(parts) == 1:
        return parts[0]
    return Sql("(" + " AND ".join(p.text for p in parts) + ")", [x for p in parts for x in p.params])


def _exists(table: str, link: str, condition: Sql) -> Sql:
    """A correlated EXISTS: one index seek per outer row, so ORDER BY ... LIMIT scans stop early and
    checking a few candidate sessions costs a few seeks."""
    return Sql(f"EXISTS (SELECT 1 FROM {table} WHERE {link} AND {condition.text})", condition.params)


def _contains(column: str, values: Sequence[str], transform: Callable[[str], str] = str.lower) -> Sql:
    return _any([Sql(f"instr({column}, ?) > 0", [transform(v)]) for v in values])


def _int(value: str, clause: plan_pb2.FieldClause) -> int:
    try:
        return int(value)
    except ValueError:
        raise _bad(errors_pb2.BAD_VALUE, f"{clause.field} expects an integer, got {value!r}", value) from None


def _bool(value: str, clause: plan_pb2.FieldClause) -> int:
    lowered = value.lower()
    if lowered in ("true", "yes", "1"):
        return 1
    if lowered in ("false", "no", "0"):
        return 0
    raise _bad(errors_pb2.BAD_VALUE, f"{clause.field} expects true or false, got {value!r}", value)


def time_span(value: str, clause: plan_pb2.FieldClause) -> tuple[int, int]:
    """[start, end) in epoch ms of a time value: an integer ms, an ISO date (its day), or a datetime."""
    text = value.strip()
    if text.lstrip("-").isdigit():
        ms = int(text)
        return ms, ms + 1
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            start = datetime(day.year, day.month, day.day, tzinfo=UTC)
            return _ms(start), _ms(start + timedelta(days=1))
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise _bad(errors_pb2.BAD_VALUE, f"{clause.field} expects a date or epoch ms, got {value!r}", value) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    ms = _ms(moment)
    return ms, ms + 1


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def _numeric(column: str, clause: plan_pb2.FieldClause, *, is_time: bool = False) -> Sql:
    """Comparison of an integer column; for times each value is a span and bounds follow the span."""
    values = list(clause.values)
    if not values:
        raise _bad(errors_pb2.BAD_VALUE, f"{clause.field} needs a value")
    if is_time:
        spans = [time_span(v, clause) for v in values]
    else:
        spans = [(n, n + 1) for n in (_int(v, clause) for v in values)]
    op = clause.op
    if op == Comparison.BETWEEN:
        if len(spans) != 2:
            raise _bad(errors_pb2.BAD_VALUE, f"{clause.field} between needs two bounds")
        return Sql(f"({column} >= ? AND {column} < ?)", [spans[0][0], spans[1][1]])
    start, end = spans[0]
    if op == Comparison.GT:
        return Sql(f"{column} >= ?", [end])
    if op == Comparison.GE:
        return Sql(f"{column} >= ?", [start])
    if op == Comparison.LT:
        return Sql(f"{column} < ?", [start])
    if op == Comparison.LE:
        return Sql(f"{column} < ?", [end])
    if not is_time:
        return _in(column, [s for s, _ in spans])
    return _any([Sql(f"({column} >= ? AND {column} < ?)", [s, e]) for s, e in spans])


def _require_equality(clause: plan_pb2.FieldClause) -> list[str]:
    if clause.op != Comparison.COMPARISON_UNSPECIFIED:
        raise _bad(errors_pb2.UNSUPPORTED_FORM, f"{clause.field} does not support comparisons", clause.field)
    if not clause.values:
        raise _bad(errors_pb2.BAD_VALUE, f"{clause.field} needs a value", clause.field)
    return list(clause.values)


def action_clause(clause: plan_pb2.FieldClause, alias: str) -> Sql | None:
    """A condition on one action row, or None when the field is not an action field."""
    name = clause.field
    if name in ("seq",):
        return _numeric(f"{alias}.seq", clause)
    if name in ("time", "date", "since", "until"):
        return _numeric(f"{alias}.time_ms", clause, is_time=True)
    if name not in ("tool", "action", "path", "command", "output", "text", "failed"):
        return None
    values = _require_equality(clause)
    if name == "tool":
        return _in(f"{alias}.tool", values)
    if name == "action":
        return _in(f"{alias}.category", values)
    if name == "path":
        return _contains(f"{alias}.path_norm", values, analyzer.normalize_path)
    if name == "failed":
        return _in(f"{alias}.failed", [_bool(v, clause) for v in values])
    columns = {
        "command": ("command",),
        "output": ("output",),
        "text": ("command", "path", "output", "input_json"),
    }[name]
    return _any([_contains(f"lower({alias}.{c})", values) for c in columns])


class Lowering:
    def __init__(self, full_text: FullText) -> None:
        self.full_text = full_text

    # ---- sessions ------------------------------------------------------------------------------

    def session(self, pred: plan_pb2.Predicate | None) -> Sql:
        kind = pred.WhichOneof("node") if pred is not None else None
        if kind is None:
            return Sql(TRUE)
        if kind == "all":
            return self._group(list(pred.all.items))
        if kind == "any":
            return _any([self.session(p) for p in pred.any.items])
        if kind == "negate":
            inner = self.session(pred.negate)
            return Sql(f"NOT {inner.text}", inner.params)
        if kind == "fts" or (kind == "field" and pred.field.field == "role"):
            return self._group([pred])
        if kind == "field":
            return self.session_field(pred.field)
        if kind == "session_ids":
            return Sql("s.id IN (SELECT value FROM json_each(?))", [json_list(pred.session_ids.ids)])
        raise _bad(errors_pb2.UNSUPPORTED_FORM, "semantic leaves are resolved by the query node, not a shard")

    def _group(self, items: Sequence[plan_pb2.Predicate]) -> Sql:
        exprs, roles, others = split_group(items)
        parts: list[Sql] = []
        if exprs:
            ords = self.full_text.sessions(exprs, roles)
            parts.append(Sql("s.ord IN (SELECT value FROM json_each(?))", [json_list(ords)]))
        elif roles:
            role_sql = _all([self._role(r) for r in roles])
            parts.append(_exists("messages m", "m.session_ord = s.ord", role_sql))
        parts.extend(self.session(o) for o in others)
        return _all(parts)

    @staticmethod
    def _role(role: RoleClause) -> Sql:
        condition = _in("m.role", _require_equality(role.clause))
        return Sql(f"NOT {condition.text}", condition.params) if role.negated else condition

    def session_field(self, clause: plan_pb2.FieldClause) -> Sql:
        name = clause.field
        if name in COUNT_FIELDS or name == "duration_ms":
            return _numeric(f"s.{name}", clause)
        if name in ("date", "updated", "since", "until"):
            return _numeric("s.updated_ms", clause, is_time=True)
        if name == "created":
            return _numeric("s.created_ms", clause, is_time=True)
        if name == "role":
            return self._group([plan_pb2.Predicate(field=clause)])
        action = action_clause(clause, "a")
        if action is not None:
            return _exists("actions a", "a.session_ord = s.ord", action)
        values = _require_equality(clause)
        if name in ("origin", "repo", "branch", "model"):
            return _in(f"s.{name}", values)
        if name in ("session", "id"):
            return _in("s.id", values)
        if name == "parent":
            return _in("s.parent_id", values)
        if name == "title":
            return _contains("s.title_folded", values, analyzer.fold)
        if name == "cwd":
            return _contains("s.cwd", values, str)
        if name in ("tag", "tags"):
            return _exists("session_tags t", "t.session_ord = s.ord", _in("t.tag", values))
        raise _bad(errors_pb2.UNKNOWN_FIELD, f"sessions have no field {name!r}", name)

    # ---- units ---------------------------------------------------------------------------------

    def unit(self, unit: str, pred: plan_pb2.Predicate | None) -> Sql:
        kind = pred.WhichOneof("node") if pred is not None else None
        if kind is None:
            return Sql(TRUE)
        if kind in ("all", "any"):
            parts = [self.unit(unit, p) for p in getattr(pred, kind).items]
            return _all(parts) if kind == "all" else _any(parts)
        if kind == "negate":
            inner = self.unit(unit, pred.negate)
            return Sql(f"NOT {inner.text}", inner.params)
        if kind == "fts":
            return self._unit_text(unit, pred.fts)
        if kind == "session_ids":
            return Sql(
                "u.session_ord IN (SELECT ord FROM sessions WHERE id IN (SELECT value FROM json_each(?)))",
                [json_list(pred.session_ids.ids)],
            )
        if kind == "field":
            if pred.field.session_scoped:
                return self.owning_session(plan_pb2.Predicate(field=pred.field))
            return self._unit_field(unit, pred.field)
        raise _bad(errors_pb2.UNSUPPORTED_FORM, "semantic leaves are resolved by the query node, not a shard")

    def owning_session(self, pred: plan_pb2.Predicate) -> Sql:
        inner = self.session(pred)
        return Sql(f"u.session_ord IN (SELECT s.ord FROM sessions s WHERE {inner.text})", inner.params)

    def _unit_text(self, unit: str, expr: plan_pb2.FtsExpr) -> Sql:
        if unit == "actions":
            node = fts.compile_fts(expr)
            if node is None:
                return Sql(FALSE)
            text, params = fts.substring_sql(node, ("u.command", "u.path", "u.output", "u.input_json"))
            return Sql(text, params)
        ords = self.full_text.units(unit, expr)
        return Sql("u.ord IN (SELECT value FROM json_each(?))", [json_list(ords)])

    def _unit_field(self, unit: str, clause: plan_pb2.FieldClause) -> Sql:
        name = clause.field
        if name == "session":
            return self.owning_session(plan_pb2.Predicate(field=clause))
        if name == "text" and unit != "actions":
            values = _require_equality(clause)
            expr = plan_pb2.FtsExpr(any=plan_pb2.FtsList(items=[plan_pb2.FtsExpr(term=v) for v in values]))
            return self._unit_text(unit, expr)
        if name in ("time", "date", "since", "until"):
            return _numeric("u.time_ms", clause, is_time=True)
        if unit == "actions":
            found = action_clause(clause, "u")
            if found is None:
                raise _bad(errors_pb2.UNKNOWN_FIELD, f"actions have no field {name!r}", name)
            return found
        if unit == "messages":
            return self._message_field(clause)
        return self._block_field(clause)

    def _message_field(self, clause: plan_pb2.FieldClause) -> Sql:
        name = clause.field
        if name in (
            "seq",
            "words",
            "duration_ms",
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
        ):
            return _numeric(f"u.{name}", clause)
        values = _require_equality(clause)
        if name in ("role", "surface", "model"):
            return _in(f"u.{name}", values)
        if name == "authored":
            return _in("u.authored", [_bool(v, clause) for v in values])
        if name == "tool":
            inner = _in("b.tool", values)
        elif name == "path":
            inner = _contains("b.path_norm", values, analyzer.normalize_path)
        else:
            raise _bad(errors_pb2.UNKNOWN_FIELD, f"messages have no field {name!r}", name)
        return _exists("blocks b", "b.message_ord = u.ord", inner)

    @staticmethod
    def _block_field(clause: plan_pb2.FieldClause) -> Sql:
        name = clause.field
        values = _require_equality(clause)
        if name == "type":
            return _in("u.type", values)
        if name == "tool":
            return _in("u.tool", values)
        if name == "path":
            return _contains("u.path_norm", values, analyzer.normalize_path)
        if name == "is_error":
            return _in("u.is_error", [_bool(v, clause) for v in values])
        raise _bad(errors_pb2.UNKNOWN_FIELD, f"blocks have no field {name!r}", name)
