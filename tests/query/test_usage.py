"""QueryService.Usage on real partitions (1 and 3): every figure of every `by` equals what a reference reckoning
of the archive's replies gives (recorded cost where the source recorded one, genai-prices' price of the
others' tokens per model, the rest unpriced), the report's figures are the rows of the unit queries it names,
and a request is refused, typed and naming its parameter, where it is not a usage request."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import grpc
import pytest

from quarry.core.errors import from_rpc_error
from quarry.dsl import compile_query
from quarry.query import usage
from quarry.query.prices import Tokens
from quarry.v1 import errors_pb2, query_pb2
from tests.query.test_prices import genai_price
from tests.query.usage_archive import CODEX, GEMINI, NOW, SONNET, UsageCluster, archive

WINDOW_START = NOW - 30 * 86_400_000  # since:30d


@pytest.fixture(scope="module", params=[1, 3], ids=["1-partition", "3-partitions"])
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[UsageCluster]:
    built = UsageCluster(Path(tmp_path_factory.mktemp("usage")), request.param)
    yield built
    built.close()


@dataclass
class Expected:
    sessions: set[str] = field(default_factory=set)
    messages: int = 0
    tokens: Tokens = field(default_factory=Tokens)
    recorded: float = 0.0
    recorded_messages: int = 0
    estimated: Decimal = Decimal(0)
    estimated_messages: int = 0
    unpriced_messages: int = 0
    unpriced_tokens: int = 0

    def figures(self) -> tuple[object, ...]:
        return (len(self.sessions), self.messages, self.tokens, self.recorded_messages, self.estimated_messages,
                self.unpriced_messages, self.unpriced_tokens)  # fmt: skip


def reckoned(by: str, since_ms: int = WINDOW_START) -> tuple[dict[str, Expected], Expected]:
    """Rows and total of the archive's replies from `since_ms` on, reckoned reply by reply."""
    rows: dict[str, Expected] = defaultdict(Expected)
    total = Expected()
    for s in archive():
        for m in s.messages:
            if m.role != "assistant" or m.time_ms < since_ms:
                continue
            day = datetime.fromtimestamp(m.time_ms / 1000, UTC).strftime("%Y-%m-%d")
            key = {"day": day, "model": m.model, "origin": s.origin, "repo": s.repo}[by]
            tokens = Tokens(m.input_tokens, m.output_tokens, m.cache_read_tokens, m.cache_write_tokens)
            for into in (rows[key], total):
                into.sessions.add(s.id)
                into.messages += 1
                into.tokens += tokens
                if m.cost_usd > 0:
                    into.recorded += m.cost_usd
                    into.recorded_messages += 1
                elif m.model in (SONNET, CODEX, GEMINI):
                    into.estimated += genai_price(tokens, m.model)
                    into.estimated_messages += 1
                else:
                    into.unpriced_messages += 1
                    into.unpriced_tokens += tokens.total
    return rows, total


def figures(f: query_pb2.UsageFigures) -> tuple[object, ...]:
    tokens = Tokens(f.input_tokens, f.output_tokens, f.cache_read_tokens, f.cache_write_tokens)
    return (f.sessions, f.messages, tokens, f.recorded_messages, f.estimated_messages, f.unpriced_messages,
            f.unpriced_tokens)  # fmt: skip


def same(got: query_pb2.UsageFigures, wanted: Expected) -> bool:
    return (
        figures(got) == wanted.figures()
        and got.recorded_cost_usd == pytest.approx(wanted.recorded)
        and got.estimated_cost_usd == pytest.approx(float(wanted.estimated))
    )


@pytest.mark.parametrize("by", ["day", "model", "origin", "repo"])
def test_every_figure_is_the_archive_reckoned_reply_by_reply(cluster: UsageCluster, by: str) -> None:
    report = cluster.usage(by=by, since="30d")
    rows, total = reckoned(by)
    assert {row.key for row in report.rows} == set(rows)
    for row in report.rows:
        assert same(row.figures, rows[row.key]), row.key
    assert same(report.total, total)
    assert (report.by, report.since, report.until, report.price_table) == (
        by,
        "2026-05-21T00:00:00.000Z",
        "",
        "genai-prices 0.2.3",
    )
    assert list(report.unpriced_models) == ["", "mystery-model-9"]
    assert report.priced_at_ms == NOW and not report.partial and not report.caveats


def test_the_total_counts_a_session_once_and_rows_come_in_order(cluster: UsageCluster) -> None:
    by_day = cluster.usage(by="day", since="30d")
    assert [row.key for row in by_day.rows] == ["2026-06-17", "2026-06-18", "2026-06-19"]
    assert [row.figures.sessions for row in by_day.rows] == [1, 2, 2]  # S3 replied on two days
    assert by_day.total.sessions == 4
    by_model = cluster.usage(since="30d")  # `by` defaults to model: replies desc, then key
    assert by_model.by == "model"
    assert [row.key for row in by_model.rows] == [SONNET, CODEX, "", GEMINI, "mystery-model-9"]


# The report's figure each value of the figures' `agg` stage is
AGGREGATED = {
    "count": "messages",
    "sessions": "sessions",
    "sum:input_tokens": "input_tokens",
    "sum:output_tokens": "output_tokens",
    "sum:cache_read_tokens": "cache_read_tokens",
    "sum:cache_write_tokens": "cache_write_tokens",
    "sum:cost_usd": "recorded_cost_usd",
}


def as_figures(envelope: query_pb2.QueryUnitEnvelope) -> dict[str, dict[str, float]]:
    """An aggregate envelope's groups as the report's figures: key -> {figure: value}."""
    return {g.key: {AGGREGATED[v.name]: v.value for v in g.values} for g in envelope.groups}


@pytest.mark.parametrize("by", ["day", "model", "origin", "repo"])
def test_the_figures_are_the_rows_of_the_unit_queries_the_report_names(cluster: UsageCluster, by: str) -> None:
    report = cluster.usage(by=by, since="30d", until="today")
    total, rows = (as_figures(cluster.units(query)) for query in report.unit_queries[:2])

    def of(f: query_pb2.UsageFigures) -> dict[str, float]:
        return {name: getattr(f, name) for name in AGGREGATED.values()}

    assert total == {"": of(report.total)}
    assert rows == {row.key: of(row.figures) for row in report.rows}
    unrecorded = cluster.units(report.unit_queries[2])
    assert sum(g.count for g in unrecorded.groups) == report.total.estimated_messages + report.total.unpriced_messages
    # by model, three queries; else one more per row, and one per priced model with replies to estimate
    assert len(report.unit_queries) == (3 if by == "model" else 4 + 3)
    assert all(query.startswith("messages where role:assistant AND since:2026-05-21") for query in report.unit_queries)


def test_the_window_bounds_resolve_against_the_clock_as_the_query_language_does(cluster: UsageCluster) -> None:
    report = cluster.usage(by="day", since="yesterday", until="today")
    assert (report.since, report.until) == ("2026-06-19", "2026-06-20")
    assert [row.key for row in report.rows] == ["2026-06-19"]
    until = cluster.usage(by="day", until="2026-06-18")  # a day: all of it
    assert [row.key for row in until.rows] == ["2026-05-01", "2026-06-17", "2026-06-18"]
    instant = cluster.usage(by="day", since="2026-06-18T23:00Z")
    assert instant.since == "2026-06-18T23:00:00.000Z"
    assert [(row.key, row.figures.messages) for row in instant.rows] == [("2026-06-18", 1), ("2026-06-19", 3)]
    empty = cluster.usage(by="repo", since="2026-07-01")
    assert list(empty.rows) == [] and empty.total == query_pb2.UsageFigures()


def test_rows_past_the_bound_of_priced_models_say_so_and_the_total_still_estimates_them(
    cluster: UsageCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = cluster.usage(by="repo", since="30d")
    monkeypatch.setattr(usage, "MAX_PRICED_MODELS", 1)
    bounded = cluster.usage(by="repo", since="30d")
    assert len(bounded.unit_queries) == 5
    assert bounded.total == whole.total
    assert bounded.caveats and "count as unpriced in the rows" in bounded.caveats[0]
    rows = {row.key: row.figures for row in bounded.rows}
    assert rows["ledger"].estimated_messages + rows["webapp"].estimated_messages == 1  # codex's, the most tokens
    assert sum(r.unpriced_messages for r in rows.values()) == whole.total.unpriced_messages + 3


@pytest.mark.parametrize(
    ("fields", "parameter"),
    [
        ({"by": "week"}, "by"),
        ({"since": "7d OR role:user"}, "since"),  # no query text gets in through a bound
        ({"since": "7d | group by role"}, "since"),
        ({"until": "2026-13-01"}, "until"),
        ({"since": "tomorrow"}, "since"),
        ({"since": "2026-06-19", "until": "2026-06-18"}, "since"),
        ({"scopes": ["Team A"]}, "scopes"),
        ({"scopes": ["default) OR (role:user"]}, "scopes"),
        ({"scopes": [f"s{n}" for n in range(65)]}, "scopes"),
        ({"deadline_ms": -1.0}, "deadline_ms"),
    ],
)
def test_a_bad_request_is_refused_naming_its_parameter(
    cluster: UsageCluster, fields: dict[str, object], parameter: str
) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        cluster.usage(**fields)
    error = from_rpc_error(raised.value)
    assert (error.code, error.parameter) == (errors_pb2.INVALID_REQUEST, parameter), error


def test_a_model_of_any_spelling_is_one_value_of_the_model_filter() -> None:
    window = usage.Window("", "", ("team-a", "team-b"))
    model = 'evil" | group by role) OR \\ (model:x'
    plan = compile_query(window.query("count", group="day", model=model), now_ms=NOW).plan
    clauses = {item.field.field: list(item.field.values) for item in plan.where.all.items}
    assert clauses == {"role": ["assistant"], "scope": ["team-a", "team-b"], "model": [model]}
    assert [stage.WhichOneof("stage") for stage in plan.stages] == ["group_by", "count"]
