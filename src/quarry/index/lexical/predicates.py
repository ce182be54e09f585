"""Plan predicates lowered to SQL over the store's tables.

Session predicates use the alias `s` (sessions); unit predicates use `u` (messages, actions or
blocks). Full-text leaves are not SQL: the `FullText` the caller passes evaluates them in Tantivy to
ordinal sets, injected as `ord IN (SELECT value FROM json_each(?))`. On actions, whose text is an
unindexed filter by contract (it covers Write/Edit bodies that full-text leaves out), a full-text
leaf is a case-insensitive substring test over command, path, output and input JSON instead.

Message-level grouping: inside one `all`, the `fts` leaves and `role` clauses (and negated role
clauses) must hold in the same message; the group becomes one message-level condition.

Fields follow quarry.dsl.fields. Values are alternatives (OR). Keyword fields compare
case-insensitively (NOCASE columns); title, command and output are case-insensitive substring
tests (title folded like the index); path is a case-sensitive substring of the normalized path.
The count and time fields the compiler lists as planned are evaluated too: counts and
`duration_ms` compare integers; `date` / `since` / `until` compare the session's update time (a
unit's own time), with values in epoch ms or ISO dates / datetimes (UTC, a bare date is its day);
`since` defaults to >= and `until` to <=.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Protocol

from quarry.core.errors import QuarryError
from quarry.index.lexical import analyzer, fts
from quarry.index.lexical.store_schema import COUNT_FIELDS, IN_JSON, json_list
from quarry.index.lexical.unit_tables import UnitTable, table
from quarry.v1 import errors_pb2, plan_pb2

Comparison = plan_pb2.Comparison
TRUE = "1"
FALSE = "0"
_TIME_FIELDS = ("date", "since", "until")
_MESSAGE_NUMBERS = ("duration_ms", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
# Message numbers read from the row's proto, by the names a query gives them.
MESSAGE_PROTO_NUMBERS = {"words": "words", "word_count": "words", "cost_usd": "cost_usd"}
DECIMALS = frozenset({"cost_usd"})  # fields compared exactly, decimals allowed (`_compare_decimal`)
_ACTION_TEXT_COLUMNS = ("u.command", "u.path", "u.output", "u.input_json")


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
    """An `all` group's text leaves, its role clauses (which hold in the message a text leaf matches)
    and its session-level rest."""
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


# ---- SQL building blocks -------------------------------------------------------------------------


def _in(column: str, values: Sequence[object]) -> Sql:
    if len(values) == 1:
        return Sql(f"{column} = ?", [values[0]])
    return Sql(f"{column} IN ({', '.join('?' * len(values))})", list(values))


def _joined(joiner: str, empty: str, parts: Sequence[Sql]) -> Sql:
    if not parts:
        return Sql(empty)
    if len(parts) == 1:
        return parts[0]
    return Sql("(" + f" {joiner} ".join(p.text for p in parts) + ")", [x for p in parts for x in p.params])


def _any(parts: Sequence[Sql]) -> Sql:
    return _joined("OR", FALSE, parts)


def _all(parts: Sequence[Sql]) -> Sql:
    return _joined("AND", TRUE, parts)


def _not(inner: Sql) -> Sql:
    return Sql(f"NOT {inner.text}", inner.params)


def _exists(table: str, link: str, condition: Sql) -> Sql:
    """A correlated EXISTS: one index seek per outer row, so ORDER BY ... LIMIT scans stop early and
    checking a few candidate sessions costs a few seeks."""
    return Sql(f"EXISTS (SELECT 1 FROM {table} WHERE {link} AND {condition.text})", condition.params)


def _contains(column: str, values: Sequence[str], transform: Callable[[str], str]) -> Sql:
    return _any([Sql(f"instr({column}, ?) > 0", [transform(v)]) for v in values])


def _in_set(column: str, values: Collection[object]) -> Sql:
    return Sql(f"{column} {IN_JSON}", [json_list(values)])


def scope_condition(visible: Collection[str] | None, column: str = "s.scope") -> Sql:
    """A condition on the sessions' scope column admitting the `visible` scopes ("1": every scope, when
    nothing limits the call; lexical.visibility)."""
    return Sql("1") if visible is None else _in_set(column, sorted(visible))


def _bad_value(clause: plan_pb2.FieldClause, message: str, value: str = "") -> QuarryError:
    return QuarryError(errors_pb2.BAD_VALUE, f"{clause.field}: {message}", token=value or clause.field)


def _values(clause: plan_pb2.FieldClause) -> list[str]:
    """The alternatives of an equality clause (keyword, contains and path fields)."""
    if clause.op != Comparison.COMPARISON_UNSPECIFIED:
        raise QuarryError(
            errors_pb2.UNSUPPORTED_FORM, f"{clause.field} does not support comparisons", token=clause.field
        )
    if not clause.values:
        raise _bad_value(clause, "needs a value")
    return list(clause.values)


def _path(column: str, clause: plan_pb2.FieldClause) -> Sql:
    return _contains(column, _values(clause), analyzer.normalize_path)


# ---- numbers and times ---------------------------------------------------------------------------


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
        raise _bad_value(clause, f"expects a date or epoch ms, got {value!r}", value) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    ms = _ms(moment)
    return ms, ms + 1


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def _number_span(value: str, clause: plan_pb2.FieldClause) -> tuple[int, int]:
    try:
        n = int(value)
    except ValueError:
        raise _bad_value(clause, f"expects an integer, got {value!r}", value) from None
    return n, n + 1


def _compare(column: str, clause: plan_pb2.FieldClause, *, is_time: bool = False) -> Sql:
    """A comparison on an integer column. Each value is a span [start, end) (one unit wide for numbers,
    a whole day for a bare date), and every operator is read against the span."""
    if not clause.values:
        raise _bad_value(clause, "needs a value")
    parse = time_span if is_time else _number_span
    spans = [parse(v, clause) for v in clause.values]
    op = clause.op
    if op == Comparison.COMPARISON_UNSPECIFIED and is_time:
        op = {"since": Comparison.GE, "until": Comparison.LE}.get(clause.field, op)
    if op == Comparison.BETWEEN:
        if len(spans) != 2:
            raise _bad_value(clause, "between needs two bounds")
        return Sql(f"({column} >= ? AND {column} < ?)", [spans[0][0], spans[1][1]])
    start, end = spans[0]
    bound = {
        Comparison.GT: (">=", end),
        Comparison.GE: (">=", start),
        Comparison.LT: ("<", start),
        Comparison.LE: ("<", end),
    }.get(op)
    if bound is not None:
        return Sql(f"{column} {bound[0]} ?", [bound[1]])
    return _any([Sql(f"({column} >= ? AND {column} < ?)", [s, e]) for s, e in spans])


def _compare_decimal(column: str, clause: plan_pb2.FieldClause) -> Sql:
    """A comparison on a decimal value, read exactly: `> 0.25` is more than 0.25 (no span of one unit)."""
    try:
        values = [float(v) for v in clause.values]
    except ValueError:
        raise _bad_value(clause, f"expects a number, got {list(clause.values)!r}") from None
    if not values:
        raise _bad_value(clause, "needs a value")
    if clause.op == Comparison.BETWEEN:
        if len(values) != 2:
            raise _bad_value(clause, "between needs two bounds")
        return Sql(f"({column} >= ? AND {column} <= ?)", values)
    sign = {Comparison.GT: ">", Comparison.GE: ">=", Comparison.LT: "<", Comparison.LE: "<="}.get(clause.op)
    if sign is not None:
        return Sql(f"{column} {sign} ?", values[:1])
    return _any([Sql(f"{column} = ?", [value]) for value in values])


# ---- the lowering --------------------------------------------------------------------------------


class Lowering:
    """`assertions`: whether the reader connection has the assertions database attached
    (unit_tables.prepare); without it the assertions unit has no rows."""

    def __init__(self, full_text: FullText, *, assertions: bool = False) -> None:
        self.full_text = full_text
        self.assertions = assertions
        self._correlated = 0  # inside a correlated EXISTS: see _unit_text

    # sessions

    def session(self, pred: plan_pb2.Predicate | None) -> Sql:
        kind = pred.WhichOneof("node") if pred is not None else None
        if kind is None:
            return Sql(TRUE)
        if kind == "all":
            return self._group(list(pred.all.items))
        if kind == "any":
            return _any([self.session(p) for p in pred.any.items])
        if kind == "negate":
            return _not(self.session(pred.negate))
        if kind == "fts" or (kind == "field" and pred.field.field == "role"):
            return self._group([pred])
        if kind == "field":
            return self._session_field(pred.field)
        if kind == "session_ids":
            return _in_set("s.id", pred.session_ids.ids)
        if kind == "exists":
            return self._exists(pred.exists)
        if kind == "seq":
            return self._seq(pred.seq)
        if kind == "lineage":
            return _lineage(pred.lineage)
        raise _semantic()

    def _exists(self, exists: plan_pb2.ExistsPredicate) -> Sql:
        """A correlated EXISTS over the unit's rows of the session (one index seek per session); for
        assertions, which have no index by session, the set of their sessions computed once."""
        unit = _unit_table(exists.unit)
        where = exists.where if exists.HasField("where") else None
        if unit.unit == "assertions" and not self.assertions:
            return Sql(FALSE)
        self._correlated += 1
        try:
            condition = self.unit(unit.unit, where)
        finally:
            self._correlated -= 1
        if unit.unit == "assertions":
            return Sql(f"s.id IN (SELECT u.session_id FROM {unit.table} u WHERE {condition.text})", condition.params)
        if unit.unit == "blocks":  # blocks are indexed by message: reach a session's blocks through them
            return _exists("messages m JOIN blocks u ON u.message_ord = m.ord", "m.session_ord = s.ord", condition)
        return _exists(f"{unit.table} u", unit.session_link(), condition)

    def _seq(self, seq: plan_pb2.SeqPredicate) -> Sql:
        """Steps on an ordered subsequence of the session's actions, matched greedily: the first
        action passing step 1, then the first after it passing step 2, and so on (the earliest
        match of each step leaves the most room for the rest, so greedy finds a match whenever one
        exists). Each step is a MIN(seq) subquery nesting the previous one: one range seek on
        actions_session (session_ord, seq) per step and session."""
        if len(seq.steps) < 1:
            raise QuarryError(errors_pb2.BAD_VALUE, "seq needs steps", token="seq")
        earliest: Sql | None = None
        for step in seq.steps:
            condition = self.unit("actions", step)
            after = Sql(f"u.seq > {earliest.text} AND ", earliest.params) if earliest is not None else Sql("")
            earliest = Sql(
                f"(SELECT MIN(u.seq) FROM actions u WHERE u.session_ord = s.ord AND {after.text}{condition.text})",
                [*after.params, *condition.params],
            )
        assert earliest is not None
        return Sql(f"{earliest.text} IS NOT NULL", earliest.params)

    def _group(self, items: Sequence[plan_pb2.Predicate]) -> Sql:
        exprs, roles, others = split_group(items)
        parts: list[Sql] = []
        if exprs:  # each text leaf: some message of the session matches it (with the group's roles)
            parts.extend(_in_set("s.ord", self.full_text.sessions([e], roles)) for e in exprs)
        elif roles:
            parts.append(_exists("messages m", "m.session_ord = s.ord", _all([_role(r) for r in roles])))
        parts.extend(self.session(o) for o in others)
        return _all(parts)

    def _session_field(self, clause: plan_pb2.FieldClause) -> Sql:
        name = clause.field
        if name in COUNT_FIELDS or name == "duration_ms":
            return _compare(f"s.{name}", clause)
        if name in _TIME_FIELDS:
            return _compare("s.updated_ms", clause, is_time=True)
        if name in ("tool", "action", "path"):
            return _exists("actions a", "a.session_ord = s.ord", _action_field(clause, "a"))
        if name in ("repo", "origin", "scope", "host", "pusher"):
            return _in(f"s.{name}", _values(clause))
        if name == "project":  # the peer's name for the repository
            return _in("s.repo", _values(clause))
        if name == "root":
            return _any([_below(root) for root in _values(clause)])
        if name == "session":
            return _in("s.id", _values(clause))
        if name == "title":
            return _contains("s.title_folded", _values(clause), analyzer.fold)
        if name == "cwd":
            return _contains("lower(s.cwd)", _values(clause), str.lower)
        if name == "tag":
            return _exists("session_tags t", "t.session_ord = s.ord", _in("t.tag", _values(clause)))
        if name == "contains":
            return _any([self._holding(text) for text in _values(clause)])
        raise _unknown("sessions", name)

    def _holding(self, text: str) -> Sql:
        """The session has a message whose dialogue text holds `text` literally (quarry_holds). Its inner
        words (those with whitespace on both sides) are whole words of any text holding it, so the index
        narrows the messages to check to those holding them all; a literal of one or two words may be
        part of a longer word, and every message is checked, first by a byte search of its stored row
        (which holds its text verbatim) for the literal's longest ASCII word, in SQLite, so that only the
        messages holding that word are decoded (quarry_has_bytes)."""
        inner = [word for word in text.split()[1:-1] if any(c.isalnum() for c in word)]
        check = Sql("quarry_holds(m.proto, ?)", [text])
        ascii_words = [word for word in text.split() if word.isascii()]
        if ascii_words:  # bytes fold ASCII only: a necessary condition for ASCII words
            longest = max(ascii_words, key=len).lower()
            check = Sql(f"quarry_has_bytes(m.body, ?) AND {check.text}", [longest, *check.params])
        if inner:
            words = plan_pb2.FtsExpr(all=plan_pb2.FtsList(items=[plan_pb2.FtsExpr(term=w) for w in inner]))
            candidates = json_list(self.full_text.units("messages", words))
            check = Sql(f"m.ord IN (SELECT value FROM json_each(?)) AND {check.text}", [candidates, *check.params])
        return Sql(f"s.ord IN (SELECT m.session_ord FROM messages m WHERE {check.text})", check.params)

    # unit rows

    def unit(self, unit: str, pred: plan_pb2.Predicate | None) -> Sql:
        kind = pred.WhichOneof("node") if pred is not None else None
        if kind is None:
            return Sql(TRUE)
        if kind in ("all", "any"):
            parts = [self.unit(unit, p) for p in getattr(pred, kind).items]
            return _all(parts) if kind == "all" else _any(parts)
        if kind == "negate":
            return _not(self.unit(unit, pred.negate))
        if kind == "fts":
            return self._unit_text(unit, pred.fts)
        if kind in ("session_ids", "exists", "seq", "lineage"):
            return self.owning_session(pred, unit)
        if kind == "field" and pred.field.session_scoped:
            return self.owning_session(pred, unit)
        if kind == "field":
            return self._unit_field(unit, pred.field)
        raise _semantic()

    def owning_session(self, pred: plan_pb2.Predicate, unit: str = "messages") -> Sql:
        """The unit row `u`'s owning session passes the session predicate."""
        inner = self.session(pred)
        spec = _unit_table(unit)
        if spec.session_ord:
            return Sql(f"u.session_ord IN (SELECT s.ord FROM sessions s WHERE {inner.text})", inner.params)
        return Sql(f"u.session_id IN (SELECT s.id FROM sessions s WHERE {inner.text})", inner.params)

    def _unit_text(self, unit: str, expr: plan_pb2.FtsExpr) -> Sql:
        if unit in ("messages", "blocks"):
            # In a correlated EXISTS the session's rows come first from their index and the text
            # matches are a membership test (`+` keeps SQLite from walking the whole set per session).
            return _in_set("+u.ord" if self._correlated else "u.ord", self.full_text.units(unit, expr))
        node = fts.compile_fts(expr)
        if node is None:
            return Sql(FALSE)
        if unit == "actions":
            columns = _ACTION_TEXT_COLUMNS
        elif unit == "assertions":
            columns = ("u.body",)
        else:
            columns = (f"quarry_text('{unit}', u.proto)",)
        text, params = fts.substring_sql(node, columns)
        return Sql(text, params)

    def _unit_field(self, unit: str, clause: plan_pb2.FieldClause) -> Sql:
        name = clause.field
        spec = _unit_table(unit)
        if name in _TIME_FIELDS:
            return _compare(f"u.{spec.time}", clause, is_time=True)
        if unit == "actions":
            return _action_field(clause, "u")
        if unit == "messages":
            return _message_field(clause)
        if unit == "blocks":
            return _block_field(clause)
        return _derived_field(spec, clause)


def _role(role: RoleClause) -> Sql:
    condition = _in("m.role", _values(role.clause))
    return _not(condition) if role.negated else condition


def _action_field(clause: plan_pb2.FieldClause, alias: str) -> Sql:
    name = clause.field
    if name == "tool":
        return _in(f"{alias}.tool", _values(clause))
    if name == "action":
        return _in(f"{alias}.category", _values(clause))
    if name == "path":
        return _path(f"{alias}.path_norm", clause)
    if name in ("command", "output"):
        return _contains(f"lower({alias}.{name})", _values(clause), str.lower)
    if name == "is_error":
        return _in(f"{alias}.failed", [1 if value == "true" else 0 for value in _values(clause)])
    if name == "exit_code":  # rows without a recorded status (NULL) match no comparison
        return _compare(f"{alias}.exit_code", clause)
    if name == "followup_class":
        return _in(f"{alias}.followup", _values(clause))
    raise _unknown("actions", name)


def _message_field(clause: plan_pb2.FieldClause) -> Sql:
    name = clause.field
    if name in _MESSAGE_NUMBERS:
        return _compare(f"u.{name}", clause)
    if name in MESSAGE_PROTO_NUMBERS:
        compare = _compare_decimal if name in DECIMALS else _compare
        return compare(f"quarry_field('messages', u.proto, '{MESSAGE_PROTO_NUMBERS[name]}')", clause)
    if name == "role":
        return _in("u.role", _values(clause))
    if name == "model":  # as recorded, compared case-insensitively (group keys are lowercased)
        return _in("lower(quarry_field('messages', u.proto, 'model'))", [v.lower() for v in _values(clause)])
    if name in ("tool", "type"):
        return _exists("blocks b", "b.message_ord = u.ord", _in(f"b.{name}", _values(clause)))
    if name == "path":
        return _exists("blocks b", "b.message_ord = u.ord", _path("b.path_norm", clause))
    raise _unknown("messages", name)


def _block_field(clause: plan_pb2.FieldClause) -> Sql:
    name = clause.field
    if name in ("type", "tool"):
        return _in(f"u.{name}", _values(clause))
    if name == "path":
        return _path("u.path_norm", clause)
    raise _unknown("blocks", name)


def _derived_field(spec: UnitTable, clause: plan_pb2.FieldClause) -> Sql:
    """A field of files, assertions, runs, observed events, context snapshots or delegations."""
    name = clause.field
    if name in spec.columns:
        return _in(f"u.{spec.columns[name]}", _values(clause))
    if spec.unit == "files" and name == "path":
        return _path("u.path_norm", clause)
    if spec.unit == "files" and name == "action":  # `categories`: the path's categories, space-separated
        return _any([Sql("instr(' ' || u.categories || ' ', ?) > 0", [f" {v.lower()} "]) for v in _values(clause)])
    decoded = f"quarry_field('{spec.unit}', u.proto, '{name}')"
    if name in spec.proto_numbers:
        return _compare(decoded, clause)
    if name in spec.proto_decimals:
        return _compare_decimal(decoded, clause)
    if name in spec.proto_keywords:
        return _in(f"lower({decoded})", [v.lower() for v in _values(clause)])
    if name in spec.proto_contains:
        return _contains(f"lower({decoded})", _values(clause), str.lower)
    if name in spec.proto_flags:
        return _in(decoded, [1 if value == "true" else 0 for value in _values(clause)])
    raise _unknown(spec.unit, name)


def _lineage(session_id: str) -> Sql:
    """The family of the session: its lineage root (the id before the first `/`: a child session's
    id is `<parent id>/<…>`) and every session below the root, as a range on the unique id index."""
    if not session_id:
        raise QuarryError(errors_pb2.BAD_VALUE, "lineage needs a session id", token="lineage")
    return _below(session_id.split("/", 1)[0])


def _below(session_id: str) -> Sql:
    """The session and every session below it (`<id>/…`), as a range on the unique id index."""
    return Sql("(s.id = ? OR (s.id >= ? AND s.id < ?))", [session_id, session_id + "/", session_id + "0"])


def _unit_table(unit: str) -> UnitTable:
    spec = table(unit)
    if spec is None:
        raise QuarryError(errors_pb2.BAD_VALUE, f"no unit {unit!r}", token=unit)
    return spec


def _unknown(unit: str, name: str) -> QuarryError:
    return QuarryError(errors_pb2.UNKNOWN_FIELD, f"{unit} have no field {name!r}", token=name)


def _semantic() -> QuarryError:
    return QuarryError(
        errors_pb2.UNSUPPORTED_FORM, "semantic leaves are resolved by the query node, not by a partition"
    )
