"""Unit rows of a plan (any of the nine units): filtered, in time order, the first `limit` of them;
or, for a `group by FIELD | count` pipeline, every group's count on this partition.

Order: time ascending, or descending when the plan's last `sort` stage says so; ties break on the
row id, ascending, in both directions, in the natural order of quarry.core.id_order (`…:m2` before
`…:m10`, so the messages of a log without times list in their source order). `sort by seq` (messages)
orders by the message's seq instead of its time. `sort_time_ms` / `sort_id` carry that key (the seq
under `sort by seq`) for the global merge and the cursors' anchors.

Two strategies:
- text-led, when the top of `where` is an AND holding fts leaves over messages or blocks (`messages
  where role:assistant AND text:timeout`): Tantivy returns the matching messages in time order (the
  `time` fast field), page by page; SQL checks the other clauses and the session scope on each page's
  rows only (blocks then check their own text). Paging stops once `limit` rows are known and the pages
  have moved past their last time. Work grows with the pages read, not with every match. When the
  other clauses reject nearly every candidate, after a bounded number of hits every text match is
  collected at once and the SQL condition runs on them.
- SQL, for every other shape: the whole predicate lowered to SQL with fts leaves evaluated to ordinal
  sets first, then ORDER BY time, id LIMIT. The derived units and assertions always take this path
  (their text is a substring filter), reading the row's proto (or assertion columns) in the same
  statement.

Aggregates: `SELECT key, COUNT(*) ... GROUP BY key` over the same condition, joined with the owning
session for session.origin / session.repo keys (a `day` key is the row time's UTC day; `agg sessions`
adds the distinct owning sessions); no rows, every group (the query node sums, sorts and limits them
across partitions).

This module and predicates.py are the compilers that build SQL from plans (store.py): the statements
built here run on the store's reader(); fixed lookups are the store's.
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson
import tantivy
from tantivy import Order

from quarry.core import id_order
from quarry.core.errors import QuarryError
from quarry.core.row_fields import ROW_KINDS
from quarry.index.lexical import fts, schema
from quarry.index.lexical.assertions import COLUMNS as ASSERTION_COLUMNS
from quarry.index.lexical.assertions import from_row as assertion_from_row
from quarry.index.lexical.fulltext import FullText, all_values, block_candidates, matching_blocks
from quarry.index.lexical.predicates import MESSAGE_PROTO_NUMBERS, Lowering, Sql
from quarry.index.lexical.row_codec import action_from_row
from quarry.index.lexical.store import Store
from quarry.index.lexical.store_schema import ACTION_COLUMNS, json_list
from quarry.index.lexical.unit_tables import TABLES, UnitTable
from quarry.v1 import errors_pb2, index_pb2, plan_pb2, units_pb2

_FIRST_PAGE = 64
_MAX_PAGED_HITS = 20_000
_ACTION_SELECT = ", ".join(f"u.{c.strip()}" for c in ACTION_COLUMNS.split(","))
_INDEXED_UNITS = ("messages", "actions", "blocks")
_SESSION_GROUPS = ("session.origin", "session.repo", "session.host", "session.pusher")
# `group by` a field a row holds several values of: (unit, field) -> (SQL key, the join giving one row
# per (row, value)), so a row counts once in each of its values' groups.
_GROUP_JOINS = {
    ("messages", "type"): (
        "t.type",
        "(SELECT DISTINCT message_ord, lower(type) AS type FROM blocks) t ON t.message_ord = u.ord",
    ),
}


def by_seq(plan: plan_pb2.QueryPlan) -> bool:
    """Whether the last `sort` stage orders by seq (messages) rather than by time."""
    sorts = [stage.sort.key for stage in plan.stages if stage.WhichOneof("stage") == "sort"]
    return bool(sorts) and sorts[-1] == "seq"


def _sort_key(unit: str, seq: bool) -> str:
    """The SQL of a row's sort key: its time, or a message's seq (`sort by seq`)."""
    return "quarry_seq(u.id)" if seq else f"u.{TABLES[unit].time}"


def descending(plan: plan_pb2.QueryPlan) -> bool:
    """The direction of the last `sort` stage (ascending when there is none)."""
    result = False
    for stage in plan.stages:
        if stage.WhichOneof("stage") == "sort":
            result = stage.sort.descending
    return result


def group_field(plan: plan_pb2.QueryPlan) -> str:
    """The field of the plan's `group by` stage ("" when it has none)."""
    return next((s.group_by for s in plan.stages if s.WhichOneof("stage") == "group_by"), "")


def aggregate(plan: plan_pb2.QueryPlan) -> bool:
    """Whether the plan aggregates rows (`| count` or `| agg …`, alone or after `group by`) rather
    than lists them."""
    return any(s.WhichOneof("stage") in ("count", "agg") for s in plan.stages)


_PERCENTILES = ("p50", "p90", "p99")


def aggregated_fields(plan: plan_pb2.QueryPlan) -> dict[str, bool]:
    """The fields an `agg` stage aggregates, each with whether a percentile of it is asked for (then
    every value travels: percentiles do not merge)."""
    fields: dict[str, bool] = {}
    for stage in plan.stages:
        if stage.WhichOneof("stage") == "agg":
            for function in stage.agg.functions:
                if function.field:
                    fields[function.field] = fields.get(function.field, False) or function.function in _PERCENTILES
    return fields


def _number_expr(unit: str, field: str) -> str:
    """The SQL value of an aggregable field of a unit row `u` (a flag as 0 / 1)."""
    spec = TABLES[unit]
    if unit == "actions" and field == "is_error":
        return "u.failed"
    if unit == "actions" and field == "exit_code":
        return "u.exit_code"
    if field in spec.proto_numbers or field in spec.proto_decimals or field in spec.proto_flags:  # a flag: 0 / 1
        return f"quarry_field('{unit}', u.proto, '{field}')"
    if unit == "messages" and field in MESSAGE_PROTO_NUMBERS:
        return f"quarry_field('messages', u.proto, '{MESSAGE_PROTO_NUMBERS[field]}')"
    if unit == "messages":
        return f"u.{field}"  # the message's other numbers are columns
    raise QuarryError(errors_pb2.UNKNOWN_FIELD, f"{unit} cannot aggregate {field!r}", token=field)


def _field_partials(unit: str, field: str, values: bool) -> list[str]:
    expr = _number_expr(unit, field)
    parts = [f"COUNT({expr})", f"TOTAL({expr})", f"MIN({expr})", f"MAX({expr})"]
    return [*parts, f"json_group_array({expr})"] if values else parts


def counts_sessions(plan: plan_pb2.QueryPlan) -> bool:
    """Whether an `agg` stage asks for `sessions`: the distinct sessions of each group's rows."""
    return any(f.function == "sessions" for s in plan.stages if s.WhichOneof("stage") == "agg" for f in s.agg.functions)


def _day_key(unit: str) -> str:
    """The UTC day of a row's time, YYYY-MM-DD ("" for a row without a recorded time)."""
    time = f"u.{TABLES[unit].time}"
    return f"CASE WHEN {time} > 0 THEN strftime('%Y-%m-%d', {time} / 1000, 'unixepoch') ELSE '' END"


def _aggregate_row(row: Sequence[object], fields: dict[str, bool], sessions: bool) -> index_pb2.AggregateRow:
    key, count, *rest = row
    out = index_pb2.AggregateRow(key=key, count=count)  # type: ignore[arg-type]
    if sessions:  # the distinct sessions come right after the count
        out.sessions = rest[0]  # type: ignore[assignment]
        rest = rest[1:]
    for field, values in fields.items():
        width = 5 if values else 4
        n, total, least, greatest, *listed = rest[:width]
        rest = rest[width:]
        partial = out.fields.add(field=field, count=n, sum=total)  # type: ignore[arg-type]
        if n:
            partial.min, partial.max = least, greatest  # type: ignore[assignment]
        if values:
            partial.values.extend(v for v in orjson.loads(listed[0]) if v is not None)  # type: ignore[arg-type]
    return out


def listing_sql(unit: str, condition: Sql, desc: bool, limit: int, select: str = "u.ord", seq: bool = False) -> Sql:
    """The first `limit` rows of `unit` (alias `u`) passing the condition, in (time, id) order, or
    (seq, id) with `seq`. The time indexes hold the time alone: SQLite walks one in either direction
    and sorts each run of equal times by id."""
    direction = "DESC" if desc else "ASC"
    return Sql(
        f"SELECT {select} FROM {TABLES[unit].table} u WHERE {condition.text} "
        f"ORDER BY {_sort_key(unit, seq)} {direction}, u.id COLLATE {id_order.COLLATION} ASC LIMIT ?",
        [*condition.params, limit],
    )


def after_anchor(unit: str, after: index_pb2.UnitAnchor, desc: bool, seq: bool = False) -> Sql:
    """The rows that follow `after` in the listing's order: later (earlier, descending) times (seqs),
    and on the same one the greater ids (ties break on the id ascending in both directions)."""
    key = _sort_key(unit, seq)
    later = "<" if desc else ">"
    return Sql(
        f"({key} {later} ? OR ({key} = ? AND u.id > ? COLLATE {id_order.COLLATION}))",
        [after.time_ms, after.time_ms, after.id],
    )


class UnitRows:
    """Runs one unit-row plan on a searcher snapshot and the store."""

    def __init__(self, searcher: tantivy.Searcher, sch: tantivy.Schema, store: Store) -> None:
        self.searcher = searcher
        self.schema = sch
        self.store = store
        self.assertions = store.ready_for_units()
        self.lowering = Lowering(FullText(searcher, sch, store), assertions=self.assertions)

    def groups(self, plan: plan_pb2.QueryPlan) -> list[index_pb2.AggregateRow]:
        """Every group of `group by FIELD | count` on this partition, with its row count (`count` alone:
        one group, keyed "", of every row)."""
        unit, name = plan.unit, group_field(plan)
        spec = TABLES[unit]
        if not name:
            key, source = "''", f"{spec.table} u"
        elif name in _SESSION_GROUPS:
            key = f"lower(s.{name.split('.', 1)[1]})"
            source = f"{spec.table} u JOIN sessions s ON {spec.session_link()}"
        elif name in spec.group_fields:
            key, source = spec.group_fields[name], f"{spec.table} u"
        elif name == "day" and unit != "files":
            key, source = _day_key(unit), f"{spec.table} u"
        elif (unit, name) in _GROUP_JOINS:  # a field of several values per row: the row counts in each group
            key, joined = _GROUP_JOINS[unit, name]
            source = f"{spec.table} u JOIN {joined}"
        else:
            raise QuarryError(errors_pb2.UNKNOWN_FIELD, f"{unit} cannot be grouped by {name!r}", token=name)
        if unit == "assertions" and not self.assertions:
            return []
        condition = self._filter(unit, [plan.where] if plan.HasField("where") else [], plan)
        fields, sessions = aggregated_fields(plan), counts_sessions(plan)
        columns = f", COUNT(DISTINCT u.{'session_ord' if spec.session_ord else 'session_id'})" if sessions else ""
        columns += "".join(", " + ", ".join(_field_partials(unit, field, values)) for field, values in fields.items())
        rows = self.store.reader().execute(
            f"SELECT {key}, COUNT(*){columns} FROM {source} WHERE {condition.text} GROUP BY 1", condition.params
        )
        return [_aggregate_row(row, fields, sessions) for row in rows]

    def run(
        self, plan: plan_pb2.QueryPlan, limit: int, after: index_pb2.UnitAnchor | None = None
    ) -> list[index_pb2.UnitRow]:
        """The first `limit` rows in the listing's order; with `after` (a cursor's page), the first
        `limit` that follow that row."""
        unit = plan.unit
        where = plan.where if plan.HasField("where") else None
        desc, seq = descending(plan), by_seq(plan)
        if unit not in _INDEXED_UNITS:
            return self._derived(plan, where, desc, limit, after)
        exprs, others = _top_text(where) if unit in ("messages", "blocks") else ([], [])
        node = fts.combine("all", (fts.compile_fts(e) for e in exprs))
        if exprs and node is None:
            return []  # text that analyzes to no token matches nothing
        if node is None:
            condition = self._filter(unit, [where] if where is not None else [], plan, after)
            return self._materialize(unit, self._sql(unit, condition, desc, limit, seq), seq)
        condition = self._filter(unit, others, plan, after)
        # Tantivy pages text matches in time order only: in seq order, every match is checked at once
        ords = None if seq else self._text_led(unit, node, condition, desc, limit)
        if ords is None:  # a selective condition: check it against every text match at once instead
            ords = self._every_text_match(unit, node, condition, desc, limit, seq)
        return self._materialize(unit, ords, seq)

    def per_session(
        self, plan: plan_pb2.QueryPlan, wanted: index_pb2.PerSession, limit: int, partition: int
    ) -> index_pb2.PartitionUnitsResponse:
        """A projection's rows: of each named session held here, its first `limit` rows of the plan in
        time order (its last, in time order too, when `wanted.last`), and how many it has in all. The
        plan's session scope (the caller's visibility) still applies."""
        response = index_pb2.PartitionUnitsResponse(partition=partition)
        for session_id in self.store.stored_ids(list(wanted.session_ids)):
            one = plan_pb2.QueryPlan()
            one.CopyFrom(plan)
            named = plan_pb2.Predicate(session_ids=plan_pb2.SessionIdSet(ids=[session_id]))
            if plan.HasField("session_scope"):
                named = plan_pb2.Predicate(all=plan_pb2.PredicateList(items=[plan.session_scope, named]))
            one.session_scope.CopyFrom(named)
            del one.stages[:]
            counted = self.groups(_counting(one))
            total = counted[0].count if counted else 0
            response.session_rows[session_id] = total
            response.rows.extend(self._last(one, limit, total) if wanted.last else self.run(one, limit))
        return response

    def _last(self, plan: plan_pb2.QueryPlan, limit: int, total: int) -> list[index_pb2.UnitRow]:
        """The last `limit` rows of the listing, in its (time, id) order. The descending listing finds
        the earliest time among them; rows sharing that time break their tie on the id ascending in both
        directions, so the rows from that time on are listed again ascending and the last ones kept."""
        if total <= limit:
            return self.run(plan, limit)
        newest = plan_pb2.QueryPlan()
        newest.CopyFrom(plan)
        newest.stages.append(plan_pb2.PipelineStage(sort=plan_pb2.SortStage(key="time", descending=True)))
        boundary = self.run(newest, limit)[-1].sort_time_ms
        from_boundary = self.run(plan, total, index_pb2.UnitAnchor(time_ms=boundary, id=""))
        return from_boundary[-limit:]

    def _filter(
        self,
        unit: str,
        preds: Sequence[plan_pb2.Predicate],
        plan: plan_pb2.QueryPlan,
        after: index_pb2.UnitAnchor | None = None,
    ) -> Sql:
        parts = [self.lowering.unit(unit, plan_pb2.Predicate(all=plan_pb2.PredicateList(items=preds)))]
        if plan.HasField("session_scope"):
            parts.append(self.lowering.owning_session(plan.session_scope, unit))
        if after is not None:
            parts.append(after_anchor(unit, after, descending(plan), by_seq(plan)))
        return Sql(" AND ".join(p.text for p in parts), [x for p in parts for x in p.params])

    def _derived(
        self,
        plan: plan_pb2.QueryPlan,
        where: plan_pb2.Predicate | None,
        desc: bool,
        limit: int,
        after: index_pb2.UnitAnchor | None,
    ) -> list[index_pb2.UnitRow]:
        """Rows of files, assertions, runs, observed events, context snapshots or delegations."""
        unit = plan.unit
        if unit == "assertions" and not self.assertions:
            return []
        spec = TABLES[unit]
        condition = self._filter(unit, [where] if where is not None else [], plan, after)
        is_assertion = unit == "assertions"
        select = ", ".join(f"u.{c}" for c in ASSERTION_COLUMNS) if is_assertion else f"u.{spec.time}, u.proto"
        statement = listing_sql(unit, condition, desc, limit, select)
        rows = self.store.reader().execute(statement.text, statement.params)
        if unit == "assertions":
            return [_assertion_row(assertion_from_row(row)) for row in rows]
        return [_derived_row(spec, time_ms, blob) for time_ms, blob in rows]

    def _sql(self, unit: str, condition: Sql, desc: bool, limit: int, seq: bool = False) -> list[int]:
        statement = listing_sql(unit, condition, desc, limit, seq=seq)
        return [r[0] for r in self.store.reader().execute(statement.text, statement.params)]

    def _every_text_match(
        self, unit: str, node: fts.Fts, condition: Sql, desc: bool, limit: int, seq: bool = False
    ) -> list[int]:
        if unit == "messages":
            matches = all_values(self.searcher, fts.to_query(node, self.schema, schema.TEXT), schema.MESSAGE_ORD)
            in_matches = Sql("u.ord IN (SELECT value FROM json_each(?))", [json_list(matches)])
            both = Sql(f"{in_matches.text} AND {condition.text}", [*in_matches.params, *condition.params])
            return self._sql(unit, both, desc, limit, seq)
        candidates = block_candidates(self.schema, node)
        if candidates is None:
            return []
        message_ords = all_values(self.searcher, candidates, schema.MESSAGE_ORD)
        found = matching_blocks(self.store, node, message_ords, condition)
        return [row_ord for row_ord, _ in _ordered(found, desc)[:limit]]

    def _text_led(self, unit: str, node: fts.Fts, condition: Sql, desc: bool, limit: int) -> list[int] | None:
        """Row ordinals in order, or None when the condition is too selective to page through."""
        if unit == "messages":
            query = fts.to_query(node, self.schema, schema.TEXT)
        else:
            query = block_candidates(self.schema, node)
            if query is None:
                return []
        order = Order.Desc if desc else Order.Asc
        found: dict[int, tuple[int, str]] = {}
        offset = 0
        page = max(_FIRST_PAGE, 4 * limit)
        while True:
            hits = self.searcher.search(
                query, limit=page, offset=offset, count=False, order_by_field=schema.TIME, order=order
            ).hits
            message_ords = self.searcher.fast_field_values(schema.MESSAGE_ORD, [a for _, a in hits])
            found.update(self._page(unit, node, message_ords, condition))
            offset += len(hits)
            if len(hits) < page:
                break
            if len(found) >= limit:
                last_time = _ordered(found, desc)[limit - 1][1][0]
                if (hits[-1][0] < last_time) if desc else (hits[-1][0] > last_time):
                    break
            if offset >= _MAX_PAGED_HITS:
                return None
            page = min(page * 4, _MAX_PAGED_HITS - offset)
        return [row_ord for row_ord, _ in _ordered(found, desc)[:limit]]

    def _page(self, unit: str, node: fts.Fts, message_ords: list[int], condition: Sql) -> dict[int, tuple[int, str]]:
        """(time, id) by ordinal of the rows of these candidate messages that pass the condition."""
        if unit == "blocks":
            return matching_blocks(self.store, node, message_ords, condition)
        rows = self.store.reader().execute(
            "SELECT u.ord, u.time_ms, u.id FROM messages u "
            f"WHERE u.ord IN (SELECT value FROM json_each(?)) AND {condition.text}",
            [json_list(message_ords), *condition.params],
        )
        return {row_ord: (time_ms, row_id) for row_ord, time_ms, row_id in rows}

    def _materialize(self, unit: str, ords: list[int], seq: bool = False) -> list[index_pb2.UnitRow]:
        """The rows of these ordinals, in this order; a message's sort key is its seq with `seq`."""
        conn = self.store.reader()
        wanted = json_list(ords)
        by_ord: dict[int, index_pb2.UnitRow] = {}
        if unit == "messages":
            for row_ord, proto in conn.execute(
                "SELECT ord, proto FROM messages WHERE ord IN (SELECT value FROM json_each(?))", (wanted,)
            ):
                m = units_pb2.Message.FromString(proto)
                by_ord[row_ord] = index_pb2.UnitRow(
                    message=m, session_id=m.session_id, sort_time_ms=m.seq if seq else m.time_ms, sort_id=m.id
                )
        elif unit == "actions":
            for row in conn.execute(
                f"SELECT u.ord, {_ACTION_SELECT}, s.id FROM actions u JOIN sessions s ON s.ord = u.session_ord "
                "WHERE u.ord IN (SELECT value FROM json_each(?))",
                (wanted,),
            ):
                a = action_from_row(row[1:-1], row[-1])
                by_ord[row[0]] = index_pb2.UnitRow(
                    action=a, session_id=a.session_id, sort_time_ms=a.time_ms, sort_id=a.id
                )
        else:
            for row_ord, block_id, time_ms, proto in conn.execute(
                "SELECT u.ord, u.id, u.time_ms, m.proto FROM blocks u JOIN messages m ON m.ord = u.message_ord "
                "WHERE u.ord IN (SELECT value FROM json_each(?))",
                (wanted,),
            ):
                m = units_pb2.Message.FromString(proto)
                block = next((b for b in m.blocks if b.id == block_id), units_pb2.Block(id=block_id))
                by_ord[row_ord] = index_pb2.UnitRow(
                    block=block, session_id=m.session_id, sort_time_ms=time_ms, sort_id=block_id
                )
        return [by_ord[o] for o in ords if o in by_ord]


def _counting(plan: plan_pb2.QueryPlan) -> plan_pb2.QueryPlan:
    """The plan's rows counted (`| count`), its order dropped."""
    counted = plan_pb2.QueryPlan()
    counted.CopyFrom(plan)
    del counted.stages[:]
    counted.stages.append(plan_pb2.PipelineStage(count=True))
    return counted


def _assertion_row(a: units_pb2.Assertion) -> index_pb2.UnitRow:
    return index_pb2.UnitRow(assertion=a, session_id=a.session_id, sort_time_ms=a.created_ms, sort_id=a.id)


def _derived_row(spec: UnitTable, time_ms: int, blob: bytes) -> index_pb2.UnitRow:
    assert spec.proto is not None
    unit = spec.proto.FromString(blob)
    row = index_pb2.UnitRow(session_id=unit.session_id, sort_time_ms=time_ms, sort_id=unit.id)  # type: ignore[attr-defined]
    getattr(row, ROW_KINDS[spec.unit]).CopyFrom(unit)
    return row


def _ordered(found: dict[int, tuple[int, str]], desc: bool) -> list[tuple[int, tuple[int, str]]]:
    """Rows by (time, id), time descending when asked; ids always ascending (quarry.core.id_order)."""
    sign = -1 if desc else 1
    return sorted(found.items(), key=lambda item: (sign * item[1][0], id_order.key(item[1][1])))


def _top_text(
    where: plan_pb2.Predicate | None,
) -> tuple[list[plan_pb2.FtsExpr], list[plan_pb2.Predicate]]:
    """The fts leaves at the top AND of `where`, and its other clauses."""
    if where is None:
        return [], []
    kind = where.WhichOneof("node")
    items = list(where.all.items) if kind == "all" else [where]
    exprs = [i.fts for i in items if i.WhichOneof("node") == "fts"]
    return exprs, [i for i in items if i.WhichOneof("node") != "fts"]
