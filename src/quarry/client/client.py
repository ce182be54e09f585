"""The Python SDK every surface uses: typed calls to the query and ingest nodes.

A failed call raises QuarryError with the server's closed error code and, for query errors, the
position in the query."""

from __future__ import annotations

import os
from collections.abc import Generator, Iterable
from pathlib import Path

import grpc

from quarry.client.calls import typed_call
from quarry.client.cluster_url import join_host_port, split_port
from quarry.client.sessions import SessionsClient
from quarry.client.target import TLS_CA_ENV, TOKEN_ENV, Target, local_target, resolve_target
from quarry.core import telemetry
from quarry.core.errors import QuarryError, from_rpc_error
from quarry.core.lanes import AUTO
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

ACK_METADATA = "quarry-ack"  # quarry.ingest.acks.METADATA_KEY
INGEST_TIMEOUT_S = 24 * 3600.0


class QuarryClient:
    def __init__(
        self,
        query_address: str,
        ingest_address: str | None = None,
        token: str | None = None,
        tls_ca: str | Path | None = None,
        *,
        tls: bool | None = None,
    ) -> None:
        """`token`: the bearer token every call carries (default: $QUARRY_TOKEN; a cluster without
        authentication needs none). `tls_ca`: the CA of a cluster serving TLS (default: $QUARRY_TLS_CA).
        `tls`: None, TLS when there is a CA; True, TLS verified with the CA, else the system's roots;
        False, plaintext. Without `ingest_address`, ingest calls go to the query node's host at the port
        the cluster reports for its ingest node."""
        token = token if token is not None else os.environ.get(TOKEN_ENV) or None
        ca_path = (tls_ca or os.environ.get(TLS_CA_ENV) or None) if tls is not False else None
        ca = Path(ca_path) if ca_path else None
        self._token, self._ca, self._tls = token, ca, bool(tls)
        self._query_address = query_address
        self._query_channel = telemetry.traced_channel(query_address, bearer=token, tls_ca=ca, client_tls=bool(tls))
        self.query = query_pb2_grpc.QueryServiceStub(self._query_channel)
        self.embedding = embedding_pb2_grpc.EmbeddingServiceStub(self._query_channel)
        self.sessions = SessionsClient(self._query_channel)  # the session API (docs/sessions.md#python)
        self._ingest_channel: grpc.Channel | None = None
        self._ingest: ingest_pb2_grpc.IngestServiceStub | None = None
        if ingest_address:
            self._open_ingest(ingest_address)

    @classmethod
    def connect(
        cls,
        url: str | None = None,
        context: str | None = None,
        token: str | None = None,
        *,
        ca: str | Path | None = None,
        home: str | Path | None = None,
        allow_plaintext: bool = False,
    ) -> QuarryClient:
        """A client for the cluster `url` (`grpc://HOST:PORT`, `grpcs://HOST:PORT`, `?ingest=HOST:PORT`)
        names, else $QUARRY_URL, else the context `context`, $QUARRY_CONTEXT or the current one
        (`quarry context`), else the local cluster under `home` (quarry.client.target). `token`: default
        $QUARRY_TOKEN, else the context's token file. `ca`: a grpcs:// cluster's CA file (default
        $QUARRY_TLS_CA, else the context's, else the system's roots). A grpc:// URL to a host beyond
        loopback is refused unless `allow_plaintext`."""
        target = resolve_target(url, context, token, ca=ca, home=home, allow_plaintext=allow_plaintext)
        return cls.for_target(target)

    @classmethod
    def for_target(cls, target: Target) -> QuarryClient:
        """A client for a resolved target (its token as is: None or "" is none)."""
        return cls(target.query, target.ingest, target.token or "", target.ca, tls=target.tls)

    @classmethod
    def for_home(cls, home: str | Path | None = None, token: str | None = None) -> QuarryClient:
        """A client for the local cluster recorded under the data directory."""
        return cls.for_target(local_target(home, token if token is not None else os.environ.get(TOKEN_ENV)))

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
        lane: str = AUTO,
        limit: int = 20,
        offset: int = 0,
        deadline_ms: float = 0,
        cursor: str = "",
        controls: query_pb2.SearchControls | None = None,
        require_complete: bool = False,
        reading: str = "",
    ) -> query_pb2.SearchEnvelope:
        """One page of ranked sessions; `cursor` (an envelope's next_cursor) asks for the page after it,
        under the same `controls` (docs/search-api.md#search-controls: admission, fusion, min_score,
        include_scores; None: the defaults, which the envelope's `controls` echoes;
        `controls_json.controls_from_json` reads them from JSON). A partition none of whose replicas
        answers makes the envelope `partial`, naming it in `missing`; with `require_complete`,
        PARTITION_UNAVAILABLE instead. `reading`: "" (the text decides: prose or the query language),
        `prose` or `query`; the envelope's `reading` says which ran."""
        request = query_pb2.SearchRequest(
            query=query,
            lane=lane,
            limit=limit,
            offset=offset,
            deadline_ms=deadline_ms,
            cursor=cursor,
            controls=controls,
            require_complete=require_complete,
            reading=reading,
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

    def explain(self, query: str, reading: str = "") -> query_pb2.ExplainResponse:
        """How the query is read, and the typed AST and the plan it compiles to, without running it."""
        return typed_call(self.query.Explain, query_pb2.ExplainRequest(query=query, reading=reading))

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

    def usage(
        self, by: str = "model", since: str = "", until: str = "", scopes: Iterable[str] = ()
    ) -> query_pb2.UsageReport:
        """Sessions, assistant replies, tokens and cost (recorded and estimated apart) of the replies between
        `since` and `until` (the query language's date forms; "": open), per `by` (day | model | origin |
        repo) and in all, within `scopes` (empty: every scope the token reads): docs/usage.md."""
        request = query_pb2.UsageRequest(by=by, since=since, until=until, scopes=list(scopes))
        return typed_call(self.query.Usage, request)

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

    def ingest_sessions(
        self, sessions: Iterable[units_pb2.Session], ack: str = "", timeout: float = INGEST_TIMEOUT_S
    ) -> ingest_pb2.IngestReport:
        """Write parsed sessions; returns once they are acknowledged: `applied` (default: searchable) or,
        in a cluster on the log, `log` (in the replicated log). Each goes into the scope it names (empty:
        the token's one writable scope); the ingest node gives it its scope's ids (`<scope>@…` outside the
        scope `default`) and records the token that wrote it."""
        stub = self.ingest
        try:
            return stub.IngestSessions(iter(sessions), timeout=timeout, metadata=[(ACK_METADATA, ack)])
        except grpc.RpcError as error:
            raise from_rpc_error(error) from None

    def describe_archive(self, scope: str = "") -> ingest_pb2.ArchiveDescription:
        """The archive's identity and the scope sessions sent with `scope` would go into (what a push
        remembers its work under)."""
        return typed_call(self.ingest.DescribeArchive, ingest_pb2.DescribeArchiveRequest(scope=scope))

    def delete(self, refs: Iterable[str], ack: str = "") -> ingest_pb2.DeleteReport:
        """Remove sessions (`session:<id>` refs or bare ids) from the archive: every replica and the log."""
        return typed_call(self.ingest.DeleteSessions, ingest_pb2.DeleteRequest(refs=list(refs), ack=ack))

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
        call = self.ingest.IngestPaths(request, timeout=None if follow else INGEST_TIMEOUT_S)
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

    @property
    def ingest(self) -> ingest_pb2_grpc.IngestServiceStub:
        """The ingest node's stub; without an ingest address, found at the first use: the query node's
        host at the port the cluster reports for its ingest node (INVALID_REQUEST naming the option when
        the cluster does not say)."""
        if self._ingest is None:
            self._open_ingest(self._reported_ingest())
        assert self._ingest is not None
        return self._ingest

    def _open_ingest(self, address: str) -> None:
        self._ingest_channel = telemetry.traced_channel(
            address, bearer=self._token, tls_ca=self._ca, client_tls=self._tls
        )
        self._ingest = ingest_pb2_grpc.IngestServiceStub(self._ingest_channel)

    def _reported_ingest(self) -> str:
        def unknown(why: str) -> QuarryError:
            return QuarryError(
                errors_pb2.INVALID_REQUEST,
                f"the ingest node of {self._query_address} is not known ({why}): give it as ?ingest=HOST:PORT "
                "in the cluster URL, or `quarry context add … --ingest HOST:PORT`",
                parameter="ingest",
            )

        try:
            nodes = self.status().nodes
        except QuarryError as error:
            raise unknown(f"asking the cluster: {error}") from None
        port = next((split_port(n.address) for n in nodes if n.role == "ingest"), None)
        if port is None:
            raise unknown("the cluster reports no ingest node")
        host, _, _ = self._query_address.rpartition(":")
        return join_host_port(host.strip("[]"), port)
