"""The Python SDK every surface uses: typed calls to the query and ingest nodes.

A failed call raises QuarryError with the server's closed error code and, for query errors, the
position in the query."""

from __future__ import annotations

import os
from collections.abc import Generator, Iterable
from pathlib import Path

import grpc

from quarry.client.calls import typed_call
from quarry.client.sessions import SessionsClient
from quarry.core import telemetry
from quarry.core.config import ClusterInfo, resolve_home
from quarry.core.errors import QuarryError, from_rpc_error
from quarry.v1 import (
    assertions_pb2,
    embedding_pb2_grpc,
    errors_pb2,
    ingest_pb2,
    ingest_pb2_grpc,
    query_pb2,
    query_pb2_grpc,
    refs_pb2,
    units_pb2,
)

TOKEN_ENV = "QUARRY_TOKEN"
TLS_CA_ENV = "QUARRY_TLS_CA"


class QuarryClient:
    def __init__(
        self,
        query_address: str,
        ingest_address: str | None = None,
        token: str | None = None,
        tls_ca: str | Path | None = None,
    ) -> None:
        """`token`: the bearer token every call carries (default: $QUARRY_TOKEN; a cluster without
        authentication needs none). `tls_ca`: the CA of a cluster serving TLS (default: $QUARRY_TLS_CA;
        none: plaintext)."""
        token = token if token is not None else os.environ.get(TOKEN_ENV) or None
        ca_path = tls_ca or os.environ.get(TLS_CA_ENV) or None
        ca = Path(ca_path) if ca_path else None
        self._query_channel = telemetry.traced_channel(query_address, bearer=token, tls_ca=ca)
        self.query = query_pb2_grpc.QueryServiceStub(self._query_channel)
        self.embedding = embedding_pb2_grpc.EmbeddingServiceStub(self._query_channel)
        self.sessions = SessionsClient(self._query_channel)  # seed 002's session API
        self._ingest_channel = (
            telemetry.traced_channel(ingest_address, bearer=token, tls_ca=ca) if ingest_address else None
        )
        self.ingest = ingest_pb2_grpc.IngestServiceStub(self._ingest_channel) if self._ingest_channel else None

    @classmethod
    def for_home(cls, home: str | Path | None = None, token: str | None = None) -> QuarryClient:
        """A client for the local cluster recorded under the data directory."""
        resolved = resolve_home(home)
        info = ClusterInfo.load(resolved)
        if info is None:
            raise QuarryError(
                errors_pb2.SHARD_UNAVAILABLE,
                f"no cluster is running under {resolved}: start one with `quarry up` (or pass --home)",
            )
        return cls(info.query, info.ingest, token, info.tls_ca or None)

    def close(self) -> None:
        self._query_channel.close()
        if self._ingest_channel is not None:
            self._ingest_channel.close()

    def __enter__(self) -> QuarryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def search(
        self,
        query: str,
        lane: str = "auto",
        limit: int = 20,
        offset: int = 0,
        deadline_ms: float = 0,
        cursor: str = "",
        controls: query_pb2.SearchControls | None = None,
        require_complete: bool = False,
    ) -> query_pb2.SearchEnvelope:
        """One page of ranked sessions; `cursor` (an envelope's next_cursor) asks for the page after it,
        under the same `controls` (seed 003: admission, fusion, min_score, include_scores; None: the
        defaults, which the envelope's `controls` echoes; `controls_json.controls_from_json` reads them
        from JSON). A partition none of whose replicas answers makes the envelope `partial`, naming it in
        `missing`; with `require_complete`, PARTITION_UNAVAILABLE instead."""
        request = query_pb2.SearchRequest(
            query=query,
            lane=lane,
            limit=limit,
            offset=offset,
            deadline_ms=deadline_ms,
            cursor=cursor,
            controls=controls,
            require_complete=require_complete,
        )
        return typed_call(self.query.Search, request)

    def query_units(
        self, query: str, limit: int = 50, offset: int = 0, require_complete: bool = False, cursor: str = ""
    ) -> query_pb2.QueryUnitEnvelope:
        """Rows (or groups) of a unit query; `cursor`: a previous page's next_cursor, for the next page."""
        request = query_pb2.QueryUnitsRequest(
            query=query, limit=limit, offset=offset, require_complete=require_complete, cursor=cursor
        )
        return typed_call(self.query.QueryUnits, request)

    def explain(self, query: str) -> query_pb2.ExplainResponse:
        """The typed AST and the plan the query compiles to, without running it."""
        return typed_call(self.query.Explain, query_pb2.ExplainRequest(query=query))

    def facets(
        self,
        query: str = "",
        origins: Iterable[str] = (),
        families: Iterable[str] = (),
        include_deferred: bool = False,
        idf: bool = True,
        budget_ms: float = 0,
    ) -> query_pb2.FacetsResponse:
        """Session counts per facet value: the whole archive (`global`) and, with a query or origins, the
        sessions they select (`scoped`). repos and action_types only when named in `families` or with
        `include_deferred`; past `budget_ms` (0: the server's default) what is done, `budget_exceeded`."""
        request = query_pb2.FacetsRequest(
            query=query,
            origins=list(origins),
            families=list(families),
            include_deferred=include_deferred,
            idf=idf,
            budget_ms=budget_ms,
        )
        return typed_call(self.query.Facets, request)

    def status(self) -> query_pb2.ClusterStatusResponse:
        return typed_call(self.query.ClusterStatus, query_pb2.ClusterStatusRequest())

    def write_assertion(self, assertion: units_pb2.Assertion) -> units_pb2.Assertion:
        """Create or update an assertion; it comes back as stored (a non-user writer's lands as a candidate)."""
        return typed_call(self.query.WriteAssertion, assertions_pb2.WriteAssertionRequest(assertion=assertion))

    def list_candidates(
        self, target_ref: str = "", review: bool = False, limit: int = 50
    ) -> assertions_pb2.CandidateList:
        """Candidates awaiting judgment; with `review`, the judged ones too (with why they are closed)."""
        request = assertions_pb2.ListCandidatesRequest(target_ref=target_ref, review=review, limit=limit)
        return typed_call(self.query.ListCandidates, request)

    def judge_candidate(
        self, candidate_id: str, judgment: str, reason: str = "", kind: str = "", body: str = ""
    ) -> assertions_pb2.JudgeCandidateResponse:
        """accept | reject | defer | supersede a pending candidate (`kind` and `body`: the replacement)."""
        request = assertions_pb2.JudgeCandidateRequest(
            id=candidate_id, judgment=judgment, reason=reason, kind=kind, body=body
        )
        return typed_call(self.query.JudgeCandidate, request)

    def resolve_ref(self, ref: str, max_chars: int = 0) -> refs_pb2.ResolvedRef:
        """The archive object a public ref names (`session:…`, `message:…`, `delegation:…`, …), its text
        windows bounded by `max_chars` (0: the server's default). A missing object or a malformed ref
        comes back with `resolved` false and caveats, not as an error."""
        return typed_call(self.query.ResolveRef, refs_pb2.ResolveRefRequest(ref=ref, max_chars=max_chars))

    def ingest_sessions(self, sessions: Iterable[units_pb2.Session], ack: str = "") -> ingest_pb2.IngestReport:
        """Write parsed sessions; returns once they are acknowledged: `applied` (default: searchable) or,
        in a cluster on the log, `log` (in the replicated log)."""
        stub = self._ingest_stub()
        try:
            return stub.IngestSessions(iter(sessions), timeout=INGEST_TIMEOUT_S, metadata=[(ACK_METADATA, ack)])
        except grpc.RpcError as error:
            raise from_rpc_error(error) from None

    def delete(self, refs: Iterable[str], ack: str = "") -> ingest_pb2.DeleteReport:
        """Remove sessions (`session:<id>` refs or bare ids) from the archive: every replica and the log."""
        return typed_call(self._ingest_stub().DeleteSessions, ingest_pb2.DeleteRequest(refs=list(refs), ack=ack))

    def ingest_paths(
        self,
        paths: Iterable[str | Path],
        standard_locations: bool = False,
        follow: bool = False,
        ack: str = "",
        scope: str = "",
    ) -> Generator[ingest_pb2.IngestProgress, None, None]:
        """Progress per file, then the report; with `follow`, the same for every later round of files
        that appeared or grew, without end: closing the iterator (or Ctrl-C) cancels the call. `scope`:
        the scope the sessions go into (default: the token's one writable scope)."""
        request = ingest_pb2.IngestPathsRequest(
            paths=[str(Path(p).expanduser().resolve()) for p in paths],
            standard_locations=standard_locations,
            follow=follow,
            ack=ack,
            scope=scope,
        )
        call = self._ingest_stub().IngestPaths(request, timeout=None if follow else INGEST_TIMEOUT_S)
        try:
            yield from call
        except grpc.RpcError as error:
            raise from_rpc_error(error) from None
        finally:
            # The call, or through the tracing interceptor a generator over it, whose close drops the
            # call: gRPC cancels a call it collects before the end.
            if isinstance(call, grpc.Call):
                call.cancel()
            else:
                call.close()

    def _ingest_stub(self) -> ingest_pb2_grpc.IngestServiceStub:
        if self.ingest is None:
            raise QuarryError(errors_pb2.INVALID_REQUEST, "this client was made without an ingest address")
        return self.ingest


ACK_METADATA = "quarry-ack"  # quarry.ingest.acks.METADATA_KEY
INGEST_TIMEOUT_S = 24 * 3600.0
