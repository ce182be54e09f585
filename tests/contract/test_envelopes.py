"""The public envelopes carry the fields seed 000's contracts name, under those names."""

from __future__ import annotations

from quarry.v1 import errors_pb2, query_pb2


def field_names(message) -> set[str]:
    return {f.name for f in message.DESCRIPTOR.fields}


def test_session_search_match_has_the_seed_payload_fields():
    assert {
        "rank",
        "score",
        "score_kind",
        "score_components",
        "matched_terms",
        "snippet",
        "match_surface",
        "message_id",
        "target_ref",
    } <= field_names(query_pb2.SessionSearchMatch)
    # score is absent (null) for unranked hits, not 0.0
    assert query_pb2.SessionSearchMatch.DESCRIPTOR.fields_by_name["score"].has_presence


def test_search_envelope_has_the_seed_envelope_fields():
    assert {
        "hits",
        "retrieval_lane",
        "ranking_policy",
        "ranking_policy_version",
        "next_cursor",
        "caveats",
    } <= field_names(query_pb2.SearchEnvelope)


def test_query_unit_envelope_rows_are_typed_units():
    row_kinds = {f.name for f in query_pb2.QueryUnitRow.DESCRIPTOR.oneofs_by_name["row"].fields}
    assert row_kinds == {
        "message",
        "action",
        "block",
        "file",
        "assertion",
        "run",
        "observed_event",
        "context_snapshot",
        "delegation",
    }  # the nine unit sources of seed 000
    aggregate = field_names(query_pb2.QueryUnitEnvelope)
    assert {"aggregate", "group_by", "groups"} <= aggregate  # the aggregate envelope's fields


def test_error_detail_carries_code_position_and_token():
    assert {"code", "message", "position", "token", "parameter", "expected"} <= field_names(errors_pb2.ErrorDetail)
    assert {"offset", "line", "column"} == field_names(errors_pb2.QueryPosition)
    codes = set(errors_pb2.ErrorCode.keys())
    assert {"INVALID_QUERY", "UNKNOWN_FIELD", "BAD_VALUE", "UNSUPPORTED_FORM", "SEMANTIC_UNAVAILABLE"} <= codes
