"""What the usage report needs of the query language, on real partitions (1 and 3, so sums cross them): a
message's `model` (a filter, case-insensitive, and a grouping), `group by day` (the UTC day of a row's time,
on every dated unit) and `agg sessions` (the distinct sessions of a group's rows, counted once however many
partitions or rows hold them). Expected answers are read off tests/query/usage_archive.py by hand."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from quarry.core.errors import from_rpc_error
from quarry.v1 import errors_pb2
from tests.query.usage_archive import UsageCluster


@pytest.fixture(scope="module", params=[1, 3], ids=["1-partition", "3-partitions"])
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[UsageCluster]:
    built = UsageCluster(Path(tmp_path_factory.mktemp("usage-groups")), request.param)
    yield built
    built.close()


def groups(cluster: UsageCluster, query: str) -> list[tuple[str, int, dict[str, float]]]:
    return [(g.key, g.count, {v.name: v.value for v in g.values}) for g in cluster.units(query).groups]


def test_replies_group_by_model_with_their_distinct_sessions(cluster: UsageCluster) -> None:
    query = "messages where role:assistant | group by model | agg count, sessions, sum:input_tokens"
    assert groups(cluster, query) == [
        ("claude-sonnet-4-5", 4, {"count": 4, "sessions": 3, "sum:input_tokens": 1114}),
        ("gpt-5-codex", 2, {"count": 2, "sessions": 1, "sum:input_tokens": 1100}),
        ("", 1, {"count": 1, "sessions": 1, "sum:input_tokens": 7}),  # a reply whose source named no model
        ("gemini-2.5-pro", 1, {"count": 1, "sessions": 1, "sum:input_tokens": 2000}),
        ("mystery-model-9", 1, {"count": 1, "sessions": 1, "sum:input_tokens": 300}),
    ]


def test_sessions_count_a_session_once_over_all_its_rows(cluster: UsageCluster) -> None:
    assert groups(cluster, "messages where role:assistant | agg count, sessions") == [
        ("", 9, {"count": 9, "sessions": 5})
    ]
    assert groups(cluster, "messages where model:nobody | agg sessions") == [("", 0, {"sessions": 0})]


def test_model_filters_case_insensitively_and_negates(cluster: UsageCluster) -> None:
    assert groups(cluster, "messages where model:CLAUDE-Sonnet-4-5 | agg count, sessions") == [
        ("", 4, {"count": 4, "sessions": 3})
    ]
    assert groups(cluster, "messages where role:assistant AND -model:claude-sonnet-4-5 | count") == [("", 5, {})]
    assert groups(cluster, 'messages where model:("gpt-5-codex"|gemini-2.5-pro) | count') == [("", 3, {})]


def test_group_by_day_is_the_utc_day_of_each_row(cluster: UsageCluster) -> None:
    # S3's two replies fall on two days: the session counts in each day's sessions
    query = "messages where role:assistant | group by day | agg count, sessions, sum:cost_usd | sort by key"
    assert groups(cluster, query) == [
        ("2026-05-01", 1, {"count": 1, "sessions": 1, "sum:cost_usd": 0}),
        ("2026-06-17", 2, {"count": 2, "sessions": 1, "sum:cost_usd": 0}),
        ("2026-06-18", 3, {"count": 3, "sessions": 2, "sum:cost_usd": 0.25}),
        ("2026-06-19", 3, {"count": 3, "sessions": 2, "sum:cost_usd": 0.5}),
    ]
    assert groups(
        cluster, "messages where role:assistant AND since:2026-06-18 | group by day | count | sort by key"
    ) == [
        ("2026-06-18", 3, {}),
        ("2026-06-19", 3, {}),
    ]


def test_group_by_day_on_another_dated_unit(cluster: UsageCluster) -> None:
    # every message here holds one text block: the user's question and each reply
    assert groups(cluster, "blocks where type:text | group by day | count | sort by key desc") == [
        ("2026-06-19", 4, {}),
        ("2026-06-18", 5, {}),
        ("2026-06-17", 3, {}),
        ("2026-05-01", 2, {}),
    ]


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ("files where path:src | group by day | count", errors_pb2.UNKNOWN_FIELD),  # files have no time of their own
        ("messages where role:assistant | agg sessions:model", errors_pb2.INVALID_QUERY),
        ("messages where role:assistant | agg sessions, sessions", errors_pb2.UNSUPPORTED_FORM),
    ],
)
def test_what_the_new_forms_refuse(cluster: UsageCluster, query: str, code: int) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        cluster.units(query)
    assert from_rpc_error(raised.value).code == code
