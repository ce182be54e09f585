"""A query's forms that read stored text row by row are held to a cost budget, checked when the query
compiles: a few KB of valid query (600 × `contains:e` cost 5 s of a partition's CPU) is refused with
QUERY_TOO_COSTLY at the part that went past the budget, saying the budget, before any partition is asked;
ordinary queries stay well inside it."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator

import pytest
import uvicorn

from quarry.client.client import QuarryClient
from quarry.core.errors import QuarryError
from quarry.dsl import FIELDS_BY_UNIT, compile_query, cost
from quarry.index.lexical.predicates import MESSAGE_PROTO_NUMBERS
from quarry.index.lexical.unit_tables import TABLES
from quarry.query.embedding import EmbeddingOps
from quarry.query.http_api import build_app
from quarry.query.http_hosts import AllowedHosts
from quarry.query.root import Coordinator
from quarry.query.topology import StaticTopology
from quarry.v1 import errors_pb2, query_pb2
from tests.cluster.test_http_api import free_port
from tests.query.inprocess import Cluster

CONTAINS = "contains:e"
FLOOD = " ".join([CONTAINS] * 600)  # 6.6 KB of valid query
SCOPED_FLOOD = " AND ".join([f"session.{CONTAINS}"] * 400)


def refusal(query: str) -> QuarryError:
    with pytest.raises(QuarryError) as caught:
        compile_query(query)
    assert caught.value.code == errors_pb2.QUERY_TOO_COSTLY, caught.value
    assert f"budget of {cost.BUDGET}" in caught.value.message
    return caught.value


def test_a_flood_of_literal_scans_is_refused_at_the_part_past_the_budget() -> None:
    error = refusal(FLOOD)
    first_over = cost.BUDGET // cost.LITERAL_SCAN  # the literals before it fit the budget exactly
    clause_at = first_over * (len(CONTAINS) + 1)
    assert FLOOD[error.offset : error.offset + 1] == "e" and clause_at <= error.offset < clause_at + len(CONTAINS)
    assert (error.line, error.column, error.token) == (1, error.offset + 1, CONTAINS)


@pytest.mark.parametrize(
    ("query", "costly"),
    [
        ("actions where " + " AND ".join(f"output:o{i}" for i in range(70)), "output:o64"),
        ("actions where " + " OR ".join(f"text:t{i}" for i in range(70)), "text:t64"),
        ("runs where " + " AND ".join(f'~"r{i}"' for i in range(70)), "r64"),
        ("messages where " + " AND ".join(f"words >= {i}" for i in range(70)), "words"),
        ("delegations where instruction:(" + "|".join(f"i{i}" for i in range(70)) + ")", "instruction:i64"),
        ("messages where " + " AND ".join(f"session.contains:m{i}" for i in range(9)), "session.contains:m8"),
        ("sessions where " + " AND ".join(f"exists action(command:c{i})" for i in range(70)), "command:c64"),
        ("repo:ledger with actions[" + ", ".join(f"output:p{i}" for i in range(70)) + "]", "output:p64"),
    ],
)
def test_every_form_that_reads_stored_text_counts(query: str, costly: str) -> None:
    error = refusal(query)
    assert error.token == costly
    written = costly.split(":", 1)[-1]
    assert query[error.offset :].startswith(written), (query[error.offset : error.offset + 20], costly)


@pytest.mark.parametrize(
    "query",
    [
        'contains:"retry the write"',
        "repo:ledger -contains:TODO",
        'messages where session.contains:"busy_timeout = 5000"',
        "contains:(TODO|FIXME|XXX) repo:ledger",
        "messages where role:user AND word_count >= 200",
        "runs where model:claude-opus AND tool_uses >= 3",
        "context-snapshots where branch:main AND tokens_before > 100000",
        "sessions where seq(action:file_edit -> action:shell AND output:failed -> action:file_edit)",
        'actions where tool:write AND text:"needle"',
        " ".join(["sqlite locking timeout retry"] * 100),  # words run on the index: free of the budget
        "sessions where " + " AND ".join(['~"null pointer"'] * 100),
    ],
)
def test_ordinary_queries_stay_well_inside_the_budget(query: str) -> None:
    compile_query(query)


def test_every_field_a_partition_reads_from_stored_rows_is_priced() -> None:
    """The budget's table follows the partitions: a field read from each row's stored record costs."""
    for unit, spec in TABLES.items():
        decoded = {*spec.proto_keywords, *spec.proto_contains, *spec.proto_numbers, *spec.proto_decimals}
        decoded |= set(spec.proto_flags)
        for name, field in FIELDS_BY_UNIT[unit].items():
            if (field.alias_of or name) in decoded:
                assert cost.field_weight(unit, field.alias_of or name) > 0, (unit, name)
        if spec.text_fields and "text" in FIELDS_BY_UNIT[unit]:
            assert cost.text_weight(unit) > 0, unit
    for name in MESSAGE_PROTO_NUMBERS:
        assert cost.field_weight("messages", name) > 0, name


def test_the_budget_is_checked_before_any_partition_is_asked() -> None:
    """Over an index node that is not there: refused as too costly, not as unavailable."""
    coordinator = Coordinator(StaticTopology.index_nodes(["127.0.0.1:9"]), None, None)
    try:
        for call, request in (
            (coordinator.search, query_pb2.SearchRequest(query=FLOOD)),
            (coordinator.query_units, query_pb2.QueryUnitsRequest(query="messages where " + SCOPED_FLOOD)),
            (coordinator.facets.facets, query_pb2.FacetsRequest(query=FLOOD)),
        ):
            with pytest.raises(QuarryError) as caught:
                call(request)
            assert caught.value.code == errors_pb2.QUERY_TOO_COSTLY, caught.value
    finally:
        coordinator.cluster.close()


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, str]]:
    cluster = Cluster(tmp_path_factory.mktemp("cost"), 2)
    coordinator = cluster.coordinator
    port = free_port()
    app = build_app(coordinator, EmbeddingOps(coordinator.cluster, None, ""), AllowedHosts.of("127.0.0.1"))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    yield cluster, f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)
    cluster.close()


def test_grpc_and_http_answer_the_typed_error_with_its_position(http: tuple[Cluster, str]) -> None:
    cluster, base = http
    with QuarryClient(cluster.query_address) as client, pytest.raises(QuarryError) as caught:
        client.search(FLOOD)
    detail = caught.value
    assert detail.code == errors_pb2.QUERY_TOO_COSTLY and detail.offset == refusal(FLOOD).offset
    try:
        urllib.request.urlopen(f"{base}/api/sessions?{urllib.parse.urlencode({'query': FLOOD})}", timeout=30)
        raise AssertionError("the flood was served")
    except urllib.error.HTTPError as error:
        status, body = error.code, json.loads(error.read())
    assert status == 422
    assert body["error"]["code"] == "QUERY_TOO_COSTLY" and body["error"]["position"]["offset"] == detail.offset
