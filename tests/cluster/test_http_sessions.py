"""The session API over HTTP on a 2-partition cluster shared by two teams (tokens): every route answers
exactly the gRPC message of the same request in proto3 JSON, another team's session answers exactly as an
unknown id does, hostile path segments get a typed 400 or 404 and never a 500, and every route's real
answer fits the schema /openapi.json gives it."""

from __future__ import annotations

import http.client
import json
import shutil
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from quarry.cli.push import Pusher
from quarry.client.client import QuarryClient
from quarry.client.sessions import event_filters, session_filters
from quarry.core.proto_json import to_json
from quarry.v1 import sessions_pb2
from tests.cluster.test_scopes import Scoped, scoped, team_sessions  # noqa: F401 (scoped: the cluster fixture)
from tests.shared_paths import REPO

pytestmark = pytest.mark.cluster

FIXTURES = REPO / "tests" / "fixtures" / "claude_code"
PARENT = "claude-code-session:sess-3"
CHILD = f"{PARENT}/agent-a1b2"  # a child session: its id holds a `/`
COMPACTED = "claude-code-session:sess-4"


@dataclass
class Reader:
    cluster: Scoped
    client: QuarryClient  # team a's gRPC client

    def get(self, path: str, who: str | None = "a", **params: Any) -> tuple[int, Any]:
        """A GET as `who` (None: no token); the status and the JSON body (NDJSON: a list of its lines)."""
        query = urllib.parse.urlencode(params, doseq=True)
        status, headers, body = fetch(self.cluster.http, f"{path}?{query}" if query else path, self.token(who))
        if headers.get("content-type", "").startswith("application/x-ndjson"):
            return status, [json.loads(line) for line in body.splitlines()]
        return status, json.loads(body)

    def token(self, who: str | None) -> str | None:
        return self.cluster.tokens[who] if who else None


def fetch(address: str, target: str, token: str | None = None) -> tuple[int, dict[str, str], bytes]:
    """A GET of `target` sent as written (no client normalizes `..` away): status, headers, body."""
    host, port = address.rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        connection.putrequest("GET", target, skip_accept_encoding=True)
        if token:
            connection.putheader("Authorization", f"Bearer {token}")
        connection.endheaders()
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def in_path(session_id: str, slash: bool = False) -> str:
    """A session id as a path segment: every reserved character escaped (with `slash`, `/` left as is)."""
    return urllib.parse.quote(session_id, safe="/" if slash else "")


def scoped_id(team: str, session_id: str) -> str:
    return f"{team}@{session_id}"


@pytest.fixture(scope="module")
def reader(scoped: Scoped, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Reader]:  # noqa: F811
    """Both teams also hold the same delegating session (a parent and its subagent) and a compacted one."""
    for team in ("a", "b"):
        folder = tmp_path_factory.mktemp(f"fixtures-{team}")
        shutil.copy(FIXTURES / "delegating.jsonl", folder)
        shutil.copytree(FIXTURES / "delegating", folder / "delegating")
        shutil.copy(FIXTURES / "compacted.jsonl", folder)
        with scoped.client(team) as client, Pusher(client, state_home=folder / ".state") as pusher:
            report = pusher.push([folder])
            assert report.sessions_written == 3, report
    with scoped.client("a") as client:
        yield Reader(scoped, client)


def without_cursor(page: dict[str, Any]) -> dict[str, Any]:
    """A page but for its cursor's bytes (each seal is new): whether it has one still counts."""
    return {**{k: v for k, v in page.items() if k != "nextCursor"}, "paged": "nextCursor" in page}


def test_each_session_route_answers_the_grpc_message(reader: Reader) -> None:
    sessions = reader.client.sessions
    parent, child, compacted = (scoped_id("team-a", s) for s in (PARENT, CHILD, COMPACTED))
    one = f"/api/sessions/{in_path(compacted)}"
    assert reader.get(one) == (200, to_json(sessions.list(session_filters(ids=[compacted])).items[0]))
    assert reader.get(f"{one}/events") == (200, to_json(sessions.events(compacted)))
    current = event_filters(surfaces=["current"], seq=(1, None))
    filters = [json.dumps(to_json(f)) for f in current]
    status, page = reader.get(f"{one}/events", filters=filters, with_text="true")
    assert (status, page) == (200, to_json(sessions.events(compacted, current, with_text=True)))
    assert reader.get(f"{one}/events/3", before=1, after=2) == (200, to_json(sessions.event(compacted, 3, 1, 2)))
    assert reader.get(f"{one}/events/3/trace") == (200, to_json(sessions.trace_event(compacted, 3)))
    assert reader.get(f"{one}/surface") == (200, to_json(sessions.surface(compacted)))
    for path in (f"/api/sessions/{in_path(child)}/lineage", f"/api/sessions/{in_path(child, slash=True)}/lineage"):
        assert reader.get(path) == (200, to_json(sessions.lineage(child)))
    assert reader.get(f"/api/sessions/{in_path(child, slash=True)}")[1]["header"]["parentSessionId"] == parent
    chunks = sessions.stub.ReadSession(sessions_pb2.SessionIdRequest(session_id=compacted), timeout=60)
    assert reader.get(f"{one}/log") == (200, [to_json(chunk) for chunk in chunks])
    status, searched = reader.get(f"/api/sessions/{in_path(parent)}/search", query="pool")
    assert (status, searched) == (200, to_json(sessions.search_events(parent, "pool")))
    assert searched["items"]
    status, titles = reader.get("/api/titles", session_ids=[compacted, "claude-code-session:nope", parent])
    assert (status, titles) == (200, to_json(sessions.titles([compacted, "claude-code-session:nope", parent])))
    roots = json.dumps(to_json(session_filters(parents=[""])[0]))
    status, listed = reader.get("/api/session-records", filters=roots, limit=3)
    grpc_listed = sessions.list(session_filters(parents=[""]), limit=3)
    assert status == 200 and without_cursor(listed) == without_cursor(to_json(grpc_listed))
    status, found = reader.get("/api/session-search", query="sqlite")
    assert (status, found) == (200, to_json(sessions.search_sessions("sqlite"))) and found["items"]


def test_events_page_by_cursor_as_on_grpc(reader: Reader) -> None:
    """ListEvents' cursor walks the whole log, pages of any size, HTTP and gRPC alike."""
    compacted = scoped_id("team-a", COMPACTED)
    path = f"/api/sessions/{in_path(compacted)}/events"
    everything = [e["record"].get("seq", 0) for e in reader.get(path)[1]["events"]]
    walked, cursor, sizes = [], "", iter([2, 3, 1, 4, 1000])
    while True:
        params = {"limit": next(sizes), **({"cursor": cursor} if cursor else {})}
        status, page = reader.get(path, **params)
        grpc_page = reader.client.sessions.stub.ListEvents(
            sessions_pb2.ListEventsRequest(session_id=compacted, **params), timeout=60
        )
        assert status == 200 and without_cursor(page) == without_cursor(to_json(grpc_page))
        walked.extend(e["record"].get("seq", 0) for e in page["events"])
        cursor = page.get("nextCursor", "")
        if not cursor:
            break
    assert walked == everything and len(everything) > 10
    first = reader.get(path, limit=2)[1]["nextCursor"]
    status, stale = reader.get(path, limit=2, cursor=first, with_text="true")  # another request
    assert status == 400 and stale["error"]["code"] == "STALE_CURSOR"
    status, other = reader.get(path, who="b", limit=2, cursor=first)  # another caller's scopes
    assert status == 400 and other["error"]["code"] == "STALE_CURSOR"


SESSION_ROUTES = ("", "/events", "/events/0", "/events/0/trace", "/surface", "/lineage", "/log", "/search?query=pool")


def test_another_teams_session_answers_as_an_unknown_one(reader: Reader) -> None:
    theirs = scoped_id("team-b", PARENT)
    unknown = scoped_id("team-b", "claude-code-session:sess-999")
    assert reader.get(f"/api/sessions/{in_path(theirs)}", who="b")[0] == 200  # it is there, for its team
    for suffix in SESSION_ROUTES:
        route, _, query = suffix.partition("?")
        answers = []
        for session_id in (theirs, unknown):
            status, _, body = fetch(
                reader.cluster.http, f"/api/sessions/{in_path(session_id)}{route}?{query}", reader.token("a")
            )
            answers.append((status, body.decode().replace(session_id, "ID")))
        assert answers[0] == answers[1], suffix
        assert answers[0][0] == 404 and json.loads(answers[0][1])["error"]["code"] == "NOT_FOUND", suffix
    status, titles = reader.get("/api/titles", session_ids=[theirs, unknown])
    reasons = [
        json.dumps(r["reason"]).replace(i, "ID") for r, i in zip(titles["results"], (theirs, unknown), strict=True)
    ]
    assert status == 200 and reasons[0] == reasons[1]
    assert reader.get("/api/session-records", limit=1000)[1]["items"]
    for answer in (reader.get("/api/session-records", limit=1000), reader.get("/api/session-search", query="pool")):
        assert "team-b@" not in json.dumps(answer[1])
    assert reader.get(f"/api/sessions/{in_path(scoped_id('team-a', PARENT))}", who=None)[0] == 401


@pytest.mark.parametrize(
    "target",
    [
        "/api/sessions/../../etc/passwd",
        "/api/sessions/..%2F..%2Fetc%2Fpasswd/log",
        "/api/sessions/%2e%2e/events",
        "/api/sessions/%2e%2e%2f%2e%2e/surface",
        "/api/sessions/..;/lineage",
        "/api/sessions/%00/events",
        "/api/sessions/%ff%fe/events/1",
        "/api/sessions/" + "a" * 8000 + "/events",
        "/api/sessions/" + "claude-code-session%3A" + "9" * 8000,
        "/api/sessions/team-a@claude-code-session:sess-3/events/abc",
        "/api/sessions/team-a@claude-code-session:sess-3/events/99999999999",
        "/api/sessions/team-a@claude-code-session:sess-3/events/-1/trace",
        "/api/sessions/team-a@claude-code-session:sess-3/events?session_id=team-b@claude-code-session:sess-3",
        "/api/sessions/team-a@claude-code-session:sess-3/events?filters=%7Bnot-json",
        "/api/sessions/team-a@claude-code-session:sess-3/events?filters=%7B%22colour%22%3A1%7D",
        "/api/sessions/team-a@claude-code-session:sess-3/events?filters=" + "%5B" * 5000,
        "/api/sessions/team-a@claude-code-session:sess-3/events?filters.seq.min=1",
        "/api/sessions/team-a@claude-code-session:sess-3/events?limit=1001",
        "/api/sessions/team-a@claude-code-session:sess-3/events?cursor=" + "A" * 4000,
        "/api/sessions/team-a@claude-code-session:sess-3/events/1?before=1e9",
        "/api/sessions/",
        "/api/titles",
    ],
)
def test_hostile_paths_and_parameters_get_a_typed_answer(reader: Reader, target: str) -> None:
    status, _, body = fetch(reader.cluster.http, target, reader.token("a"))
    assert status in (400, 404), (status, body[:300])
    error = json.loads(body)["error"]
    assert error["code"] in ("INVALID_REQUEST", "NOT_FOUND", "INVALID_CURSOR"), error
    assert "Traceback" not in body.decode()


def test_every_route_answers_the_schema_openapi_gives_it(reader: Reader) -> None:
    status, document = reader.get("/openapi.json", who=None)
    assert status == 200
    registry = Registry().with_resource("urn:quarry", DRAFT202012.create_resource(document))
    compacted = in_path(scoped_id("team-a", COMPACTED))
    samples = {
        "/api/sessions": {"query": "sqlite", "controls.include_scores": "true"},
        "/api/query-units": {"expression": "messages where role:user"},
        "/api/facets": {"query": "sqlite"},
        "/api/refs/resolve": {"ref": f"session:{scoped_id('team-a', COMPACTED)}"},
        "/api/embedding/status": {},
        "/api/usage": {"by": "model"},
        "/api/session-records": {"limit": 3},
        "/api/session-search": {"query": "pool"},
        "/api/titles": {"session_ids": [scoped_id("team-a", COMPACTED), "claude-code-session:nope"]},
        "/api/sessions/{session_id}": {},
        "/api/sessions/{session_id}/events": {"with_text": "true", "limit": 3},
        "/api/sessions/{session_id}/events/{seq}": {"before": 2, "after": 2},
        "/api/sessions/{session_id}/events/{seq}/trace": {},
        "/api/sessions/{session_id}/search": {"query": "compact"},
        "/api/sessions/{session_id}/surface": {},
        "/api/sessions/{session_id}/lineage": {},
        "/api/sessions/{session_id}/log": {},
    }
    assert set(document["paths"]) == set(samples)
    for template, params in samples.items():
        operation = document["paths"][template]["get"]
        path = template.replace("{session_id}", compacted).replace("{seq}", "3")
        status, body = reader.get(path, **params)
        assert status == 200, (template, body)
        (media, content), *_ = operation["responses"]["200"]["content"].items()
        for answer in body if media == "application/x-ndjson" else [body]:
            fits(content["schema"], answer, registry)
        status, error = reader.get(path, **params, colour="red")
        assert status == 400, (template, error)
        fits(operation["responses"]["default"]["content"]["application/json"]["schema"], error, registry)


def fits(schema: dict[str, Any], value: Any, registry: Registry) -> None:
    """`value` validates against `schema` (its $refs resolved in the OpenAPI document)."""
    rooted = json.loads(json.dumps(schema).replace('"#/components', '"urn:quarry#/components'))
    Draft202012Validator(rooted, registry=registry).validate(value)
