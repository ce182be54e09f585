"""QueryService.Usage (docs/usage.md): what the assistant replies of a time window used and cost, per day,
model, origin or repo and in all, computed from aggregate unit queries (docs/query-language.md#aggregate-functions-agg)
that the report names, so that a reader can run them and find the same numbers.

The queries, all over `messages where role:assistant` in the window and the scopes asked for (each runs as
QueryUnits does, within the caller's scopes):

1. the total: `| agg count, sessions, sum:<tokens>, sum:cost_usd`;
2. the rows: the same `| group by day | model | session.origin | session.repo`;
3. the replies without a recorded cost (`cost_usd = 0`), `| group by model`: the tokens to estimate, priced
   per model with the price table (prices.py);
4. unless the rows are models: those replies grouped as the rows are, and then, for each priced model (at
   most MAX_PRICED_MODELS, most tokens first), the model's own (`model:"…"`) grouped as the rows are.

A reply whose source recorded a cost (cost_usd > 0) counts as recorded; the others are estimated from their
model's price, or, where the table has no price for their model, counted as unpriced (their tokens apart),
never priced at 0.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal

from quarry.core.tokens import SCOPE_PATTERN
from quarry.dsl.comparisons import DATE_FORMS, BadComparisonValue, date_interval
from quarry.query.limits import MAX_LIMIT, MAX_OFFSET, invalid
from quarry.query.partial import missing_partitions
from quarry.query.prices import MAX_MODEL_CHARS, PRICE_TABLE, PriceTable, Tokens
from quarry.query.root import Coordinator
from quarry.v1 import query_pb2

# UsageRequest.by -> the field the rows group by
GROUPINGS = {"day": "day", "model": "model", "origin": "session.origin", "repo": "session.repo"}
MAX_PRICED_MODELS = 16  # per-model queries a report by day, origin or repo runs at most
MAX_SCOPES = 64
_TOKEN_SUMS = ("sum:input_tokens", "sum:output_tokens", "sum:cache_read_tokens", "sum:cache_write_tokens")
_FIGURES = "agg count, sessions, " + ", ".join(_TOKEN_SUMS) + ", sum:cost_usd"
_TOKENS = "agg count, " + ", ".join(_TOKEN_SUMS)
_DATE_TEXT = re.compile(r"[0-9A-Za-z:+.\-]{1,40}")  # what a date form is spelled with, and nothing else
_DAY_MS = 86_400_000


@dataclass
class Sums:
    """What a group of replies sums to."""

    messages: int = 0
    sessions: int = 0
    tokens: Tokens = field(default_factory=Tokens)
    cost_usd: float = 0.0

    @classmethod
    def of(cls, group: query_pb2.AggregateCount) -> Sums:
        values = {v.name: (0.0 if v.empty else v.value) for v in group.values}
        tokens = Tokens(*(int(values.get(name, 0)) for name in _TOKEN_SUMS))
        return cls(group.count, int(values.get("sessions", 0)), tokens, values.get("sum:cost_usd", 0.0))


@dataclass
class Estimate:
    """The replies without a recorded cost, split into those priced (and what they cost) and those not."""

    cost: Decimal = Decimal(0)
    messages: int = 0
    unpriced_messages: int = 0
    unpriced_tokens: int = 0

    def add(self, sums: Sums, table: PriceTable, model: str) -> None:
        rates = table.rates(model)
        if rates is None:
            self.unpriced_messages += sums.messages
            self.unpriced_tokens += sums.tokens.total
        else:
            self.cost += rates.cost(sums.tokens, sums.messages)
            self.messages += sums.messages


@dataclass(frozen=True)
class Window:
    """The replies a report covers: its time bounds as the query language states them, and its scopes."""

    since: str
    until: str
    scopes: tuple[str, ...]

    @classmethod
    def of(cls, request: query_pb2.UsageRequest, now_ms: int) -> Window:
        since, start = _bound(request.since, now_ms, "since", end=False)
        until, end = _bound(request.until, now_ms, "until", end=True)
        if start is not None and end is not None and start > end:
            raise invalid("since", f"since {request.since!r} is after until {request.until!r}")
        return cls(since, until, _scopes(request.scopes))

    def query(self, stage: str, group: str = "", unrecorded: bool = False, model: str = "") -> str:
        """The unit query of the window's replies: of `model` only, without a recorded cost only, grouped."""
        clauses = ["role:assistant"]
        clauses += [f"since:{self.since}"] if self.since else []
        clauses += [f"until:{self.until}"] if self.until else []
        clauses += [f"session.scope:({'|'.join(self.scopes)})"] if self.scopes else []
        clauses += ["cost_usd = 0"] if unrecorded else []
        clauses += [f"model:{_quoted(model)}"] if model else []
        grouped = f" | group by {group}" if group else ""
        return f"messages where {' AND '.join(clauses)}{grouped} | {stage}"


class UnitQueries:
    """Runs a report's unit queries through the coordinator, as QueryUnits would, and keeps what they were
    and which partitions any of them missed."""

    def __init__(self, coordinator: Coordinator, request: query_pb2.UsageRequest) -> None:
        self.coordinator = coordinator
        self.deadline_ms = request.deadline_ms
        self.require_complete = request.require_complete
        self.queries: list[str] = []
        self.missing: dict[int, str] = {}
        self.caveats: list[str] = []

    def groups(self, query: str) -> dict[str, Sums]:
        """Every group of an aggregate query, by key (pages of MAX_LIMIT groups, as far as MAX_OFFSET)."""
        self.queries.append(query)
        out: dict[str, Sums] = {}
        offset = 0
        while True:
            request = query_pb2.QueryUnitsRequest(
                query=query,
                limit=MAX_LIMIT,
                offset=offset,
                deadline_ms=self.deadline_ms,
                require_complete=self.require_complete,
            )
            envelope = self.coordinator.query_units(request)
            self.missing.update((m.partition, m.reason) for m in envelope.missing)
            out.update((group.key, Sums.of(group)) for group in envelope.groups)
            offset += len(envelope.groups)
            if not envelope.has_more:
                return out
            if offset > MAX_OFFSET:
                self.caveats.append(f"{query!r} has {envelope.groups_total} groups: the first {offset} are reported")
                return out


def usage_report(coordinator: Coordinator, request: query_pb2.UsageRequest) -> query_pb2.UsageReport:
    """The report the request asks for (the module docstring says how it is computed)."""
    by = request.by or "model"
    if by not in GROUPINGS:
        raise invalid("by", f"by {request.by[:40]!r} is not one of {', '.join(GROUPINGS)}")
    now_ms = coordinator.clock() if coordinator.clock else int(time.time() * 1000)
    window = Window.of(request, now_ms)
    run = UnitQueries(coordinator, request)
    table = PriceTable(now_ms)
    total_sums = run.groups(window.query(_FIGURES)).get("", Sums())
    row_sums = run.groups(window.query(_FIGURES, group=GROUPINGS[by]))
    by_model = run.groups(window.query(_TOKENS, group="model", unrecorded=True))
    total = _estimate_of(by_model.items(), table)
    if by == "model":
        estimates = {model: _estimate_of([(model, sums)], table) for model, sums in by_model.items()}
    else:
        estimates = _row_estimates(run, window, GROUPINGS[by], by_model, table)
    report = query_pb2.UsageReport(
        by=by,
        since=window.since,
        until=window.until,
        scopes=window.scopes,
        total=_figures(total_sums, total),
        unit_queries=run.queries,
        price_table=PRICE_TABLE,
        unpriced_models=sorted(m for m in by_model if table.rates(m) is None),
        priced_at_ms=now_ms,
    )
    keys = sorted(row_sums) if by == "day" else sorted(row_sums, key=lambda k: (-row_sums[k].messages, k))
    report.rows.extend(query_pb2.UsageRow(key=k, figures=_figures(row_sums[k], estimates.get(k))) for k in keys)
    report.caveats.extend(run.caveats)
    report.partial = bool(run.missing)
    report.missing.extend(missing_partitions(run.missing))
    return report


def _row_estimates(
    run: UnitQueries, window: Window, group: str, by_model: dict[str, Sums], table: PriceTable
) -> dict[str, Estimate]:
    """Per row: the estimate of each priced model's replies there (one query per model), and the rest of the
    row's replies without a recorded cost as unpriced."""
    unrecorded = run.groups(window.query(_TOKENS, group=group, unrecorded=True))
    priced = [m for m in by_model if table.rates(m) is not None and len(m) <= MAX_MODEL_CHARS]
    priced.sort(key=lambda m: (-by_model[m].tokens.total, m))
    if len(priced) > MAX_PRICED_MODELS:
        left = priced[MAX_PRICED_MODELS:]
        run.caveats.append(
            f"rows estimate the {MAX_PRICED_MODELS} priced models with the most tokens; the replies of "
            f"{', '.join(left)} count as unpriced in the rows (the total estimates them)"
        )
        priced = priced[:MAX_PRICED_MODELS]
    per_model = {m: run.groups(window.query(_TOKENS, group=group, unrecorded=True, model=m)) for m in priced}
    estimates: dict[str, Estimate] = {}
    for key, sums in unrecorded.items():
        parts = [(m, rows[key]) for m, rows in per_model.items() if key in rows]
        # what no priced model's query holds (floored at 0: replies ingested between the queries)
        rest = Sums(
            max(0, sums.messages - sum(p.messages for _, p in parts)),
            tokens=(sums.tokens - sum((p.tokens for _, p in parts), Tokens())).floored(),
        )
        estimates[key] = _estimate_of([*parts, ("", rest)], table)
    return estimates


def _estimate_of(parts: Iterable[tuple[str, Sums]], table: PriceTable) -> Estimate:
    estimate = Estimate()
    for model, sums in parts:
        estimate.add(sums, table, model)
    return estimate


def _figures(sums: Sums, estimate: Estimate | None) -> query_pb2.UsageFigures:
    estimate = estimate or Estimate()
    unrecorded = estimate.messages + estimate.unpriced_messages
    return query_pb2.UsageFigures(
        sessions=sums.sessions,
        messages=sums.messages,
        input_tokens=sums.tokens.input,
        output_tokens=sums.tokens.output,
        cache_read_tokens=sums.tokens.cache_read,
        cache_write_tokens=sums.tokens.cache_write,
        recorded_cost_usd=sums.cost_usd,
        recorded_messages=sums.messages - unrecorded,
        estimated_cost_usd=float(estimate.cost),
        estimated_messages=estimate.messages,
        unpriced_messages=estimate.unpriced_messages,
        unpriced_tokens=estimate.unpriced_tokens,
    )


def _bound(value: str, now_ms: int, parameter: str, end: bool) -> tuple[str, int | None]:
    """A window bound as the unit queries state it (a relative date resolved against `now_ms`: a day stays
    a day, anything else becomes an instant) and its epoch ms (a day's start, or with `end` its end)."""
    if not value:
        return "", None
    try:
        if not _DATE_TEXT.fullmatch(value):
            raise BadComparisonValue(f"{value[:60]!r} is not a date")
        start, stop = date_interval(value, now_ms)
    except BadComparisonValue as error:
        raise invalid(parameter, f"{parameter}: {error} (forms: {', '.join(DATE_FORMS)})") from None
    moment = datetime.fromtimestamp(start / 1000, UTC)
    if stop - start == _DAY_MS - 1:
        return moment.strftime("%Y-%m-%d"), stop if end else start
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{start % 1000:03d}Z", start


def _scopes(scopes: Iterable[str]) -> tuple[str, ...]:
    """The scope names asked for, each spelled as a scope is (which the caller may read, compiling the queries
    checks: PERMISSION_DENIED otherwise)."""
    names = tuple(dict.fromkeys(scopes))
    if len(names) > MAX_SCOPES:
        raise invalid("scopes", f"at most {MAX_SCOPES} scopes, not {len(names)}")
    for name in names:
        if not SCOPE_PATTERN.fullmatch(name):
            raise invalid(
                "scopes",
                f"{name[:80]!r} is not a scope name (1 to 63 of a-z 0-9 . _ -, starting with a letter or digit)",
            )
    return names


def _quoted(value: str) -> str:
    """A value of the query language in double quotes, whatever it holds."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
