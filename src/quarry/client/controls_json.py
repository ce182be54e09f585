"""Search controls as JSON (docs/search-api.md#search-controls), parsed strictly into SearchControls,
and back.

    {"admission": {"lexical_coverage": 0.5, "lexical_min_matched_terms": 2, "min_semantic_similarity": 0.3},
     "fusion": {"method": "rrf", "params": {"rank_constant": 60, "weights": {"text": 2}}},
     "min_score": 0.2, "include_scores": true}

Omit a field for its default. Rejected, as INVALID_REQUEST naming the path (`controls.fusion.params.x`):
unknown keys, duplicate keys, explicit null, numeric strings, booleans in numeric fields, non-integers
(1.5 or 60.0) in integer fields, NaN / Infinity, a non-boolean include_scores. Ranges and channel rules
are the query node's to check (it knows the lane), so a value a newer server accepts is not refused here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2, query_pb2

ROOT = "controls"
_INT32 = (-(2**31), 2**31 - 1)

# field -> its kind: a nested object's schema, or number | integer | string | boolean | weights
_SCHEMA: dict[str, Any] = {
    "admission": {
        "lexical_coverage": "number",
        "lexical_min_matched_terms": "integer",
        "min_semantic_similarity": "number",
    },
    "fusion": {"method": "string", "params": {"rank_constant": "integer", "weights": "weights"}},
    "min_score": "number",
    "include_scores": "boolean",
}


def controls_from_json(source: str | bytes | Mapping[str, Any]) -> query_pb2.SearchControls:
    """The controls a JSON text (or an already parsed object) describes."""
    document = _load(source) if isinstance(source, str | bytes) else source
    checked = _checked(document, _SCHEMA, ROOT)
    controls = query_pb2.SearchControls()
    admission = checked.get("admission", {})
    for name, value in admission.items():
        setattr(controls.admission, name, value)
    if "admission" in checked:
        controls.admission.SetInParent()
    fusion = checked.get("fusion")
    if fusion is not None:
        controls.fusion.SetInParent()
        controls.fusion.method = fusion.get("method", "")
        params = fusion.get("params")
        if params is not None:
            controls.fusion.params.SetInParent()
            if "rank_constant" in params:
                controls.fusion.params.rank_constant = params["rank_constant"]
            controls.fusion.params.weights.update(params.get("weights", {}))
    if "min_score" in checked:
        controls.min_score = checked["min_score"]
    if "include_scores" in checked:
        controls.include_scores = checked["include_scores"]
    return controls


def controls_to_json(controls: query_pb2.SearchControls) -> dict[str, Any]:
    """The JSON object of controls: the fields they carry, in the shape controls_from_json reads."""
    out: dict[str, Any] = {}
    admission = {f.name: v for f, v in controls.admission.ListFields()}
    if admission:
        out["admission"] = admission
    fusion: dict[str, Any] = {}
    if controls.fusion.method:
        fusion["method"] = controls.fusion.method
    params: dict[str, Any] = {}
    if controls.fusion.params.HasField("rank_constant"):
        params["rank_constant"] = controls.fusion.params.rank_constant
    if controls.fusion.params.weights:
        params["weights"] = dict(sorted(controls.fusion.params.weights.items()))
    if params:
        fusion["params"] = params
    if fusion:
        out["fusion"] = fusion
    if controls.HasField("min_score"):
        out["min_score"] = controls.min_score
    if controls.HasField("include_scores"):
        out["include_scores"] = controls.include_scores
    return out


def with_flags(document: Mapping[str, Any], flags: Mapping[tuple[str, ...], tuple[str, Any]]) -> dict[str, Any]:
    """`document` with each flag's value set at its path (path -> (flag name, value)); a flag naming a
    field the document already sets is a contradiction, INVALID_REQUEST naming the flag."""
    merged = json.loads(json.dumps(document))  # a deep copy of plain JSON values
    for path, (flag, value) in flags.items():
        node = merged
        for depth, key in enumerate(path[:-1]):
            child = node.setdefault(key, {})
            if not isinstance(child, dict):
                raise _invalid(f"{'.'.join((ROOT, *path[: depth + 1]))} must be an object", ".".join((ROOT, *path)))
            node = child
        if path[-1] in node:
            raise QuarryError(
                errors_pb2.INVALID_REQUEST,
                f"{flag} sets {'.'.join((ROOT, *path))}, which --controls sets too: give it once",
                parameter=flag,
            )
        node[path[-1]] = value
    return merged


def _load(text: str | bytes) -> Any:
    def no_constant(name: str) -> None:
        raise _invalid(f"{name} is not a JSON number: use a finite number", ROOT)

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in pairs]
        for key in keys:
            if keys.count(key) > 1:
                raise _invalid(f"the key {key!r} appears twice", f"{ROOT}.{key}")
        return dict(pairs)

    try:
        return json.loads(text, parse_constant=no_constant, object_pairs_hook=unique)
    except json.JSONDecodeError as error:
        raise _invalid(f"the controls are not JSON: {error}", ROOT) from None


def _checked(value: Any, schema: Any, path: str) -> Any:
    """The value, checked against its schema (an object's schema, or a kind)."""
    if value is None:
        raise _invalid(f"{path} is null: omit a field to use its default", path)
    if isinstance(schema, dict):
        if not isinstance(value, Mapping):
            raise _invalid(f"{path} must be an object, got {_json_type(value)}", path)
        out = {}
        for key, item in value.items():
            if key not in schema:
                known = ", ".join(schema)
                raise _invalid(f"unknown field {key!r} in {path} (known: {known})", f"{path}.{key}")
            out[key] = _checked(item, schema[key], f"{path}.{key}")
        return out
    if schema == "weights":
        if not isinstance(value, Mapping):
            raise _invalid(f"{path} must be an object of channel -> weight, got {_json_type(value)}", path)
        return {str(k): _checked(v, "number", f"{path}.{k}") for k, v in value.items()}
    if schema == "boolean":
        if not isinstance(value, bool):
            raise _invalid(f"{path} must be true or false, got {_json_type(value)}", path)
        return value
    if schema == "string":
        if not isinstance(value, str):
            raise _invalid(f"{path} must be a string, got {_json_type(value)}", path)
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _invalid(f"{path} must be a number, got {_json_type(value)}", path)
    if schema == "integer":
        if not isinstance(value, int):
            raise _invalid(f"{path} must be an integer, got {value!r}", path)
        if not _INT32[0] <= value <= _INT32[1]:
            raise _invalid(f"{path} is out of range: {value}", path)
        return value
    if value != value or value in (float("inf"), float("-inf")):
        raise _invalid(f"{path} must be a finite number", path)
    return float(value)


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return repr(value)


def _invalid(message: str, parameter: str) -> QuarryError:
    return QuarryError(errors_pb2.INVALID_REQUEST, message, parameter=parameter)
