"""Sending a projection to an OTLP/HTTP collector: the traces to `<endpoint>/v1/traces`, the logs to
`<endpoint>/v1/logs`, as OTLP/JSON in requests of whole sessions."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from quarry.cli.otel_export.projection import OtelProjection
from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2

MAX_BODY_BYTES = 4 * 1024 * 1024  # a collector's common default request limit
PUSH_TIMEOUT_S = 30.0


class OtlpPushError(Exception):
    """An OTLP/HTTP collector refused a request, or could not be reached."""

    def __init__(self, url: str, status: int | None, detail: str) -> None:
        self.url, self.status, self.detail = url, status, detail
        what = f"answered HTTP {status}" if status is not None else "could not be reached"
        super().__init__(f"the OTLP collector at {url} {what}: {detail}".rstrip(": "))

    def as_dict(self) -> dict[str, Any]:
        return {"url": self.url, "status": self.status, "message": str(self)}


@dataclass
class PushReport:
    """What a push sent, and what the collector said it rejected."""

    requests: int = 0
    rejected_spans: int = 0
    rejected_log_records: int = 0
    messages: list[str] = field(default_factory=list)


def endpoint_urls(endpoint: str) -> tuple[str, str]:
    """The traces and logs URLs of an OTLP/HTTP endpoint (`http://host:4318` -> `…/v1/traces`, `…/v1/logs`)."""
    if not re.match(r"^https?://[^/\s]+", endpoint):
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            f"--endpoint takes an http(s) URL such as http://localhost:4318, got {endpoint!r}",
            parameter="--endpoint",
        )
    base = endpoint.rstrip("/")
    return f"{base}/v1/traces", f"{base}/v1/logs"


def push(
    projection: OtelProjection,
    endpoint: str,
    timeout: float = PUSH_TIMEOUT_S,
    post: Callable[[str, bytes, float], bytes] | None = None,
) -> PushReport:
    """POST the traces to `<endpoint>/v1/traces` and the logs to `<endpoint>/v1/logs` as OTLP/JSON, in
    requests of whole sessions up to MAX_BODY_BYTES each; raises OtlpPushError on a failed request."""
    traces_url, logs_url = endpoint_urls(endpoint)
    send = post or _post
    report = PushReport()
    document = projection.document()
    for url, key, rejected in (
        (traces_url, "resourceSpans", "rejectedSpans"),
        (logs_url, "resourceLogs", "rejectedLogRecords"),
    ):
        for body in _bodies(key, document[key]):
            answer = send(url, body, timeout)
            report.requests += 1
            partial = _partial_success(answer)
            count = int(partial.get(rejected, 0) or 0)
            if key == "resourceSpans":
                report.rejected_spans += count
            else:
                report.rejected_log_records += count
            if partial.get("errorMessage"):
                report.messages.append(f"{url}: {partial['errorMessage']}")
    return report


def _bodies(key: str, resources: list[dict[str, Any]]) -> Iterator[bytes]:
    """`{key: [...]}` request bodies holding whole resources, each under MAX_BODY_BYTES when it can be."""
    batch: list[bytes] = []
    size = 0
    for resource in resources:
        encoded = json.dumps(resource, separators=(",", ":")).encode()
        if batch and size + len(encoded) + 1 > MAX_BODY_BYTES:
            yield _body(key, batch)
            batch, size = [], 0
        batch.append(encoded)
        size += len(encoded) + 1
    if batch:
        yield _body(key, batch)


def _body(key: str, encoded: list[bytes]) -> bytes:
    return b'{"' + key.encode() + b'":[' + b",".join(encoded) + b"]}"


def _partial_success(answer: bytes) -> dict[str, Any]:
    try:
        decoded = json.loads(answer) if answer.strip() else {}
    except ValueError:
        return {}
    partial = decoded.get("partialSuccess") if isinstance(decoded, dict) else None
    return partial if isinstance(partial, dict) else {}


def _post(url: str, body: bytes, timeout: float) -> bytes:
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return bytes(response.read())
    except urllib.error.HTTPError as error:
        detail = error.read()[:500].decode(errors="replace").strip() or str(error.reason)
        raise OtlpPushError(url, error.code, detail) from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise OtlpPushError(url, None, str(reason)) from None
