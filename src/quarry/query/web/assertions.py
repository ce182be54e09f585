"""`/assertions`: the candidates automated writers left (an agent, a transform, a detector: their
assertions land as candidates, docs/query-language.md#assertion-fields), and their judgment.

GET  /assertions            the candidates the visitor may read (QueryService.ListCandidates, as
                            `quarry mark candidates list|review`): `target_ref` (only this target),
                            `review=1` (the judged ones too), `limit`
POST /assertions/judge      accept | reject | defer | supersede one (QueryService.JudgeCandidate, as
                            `quarry mark candidates accept|…`): form fields `id`, `judgment`, `reason`,
                            and a supersede's `kind` and `body`

Judging is a write: it takes the visitor with the `write` grant, and the CSRF token of the sign-in (the
form's `csrf` field, or htmx's `X-CSRF-Token` header) is checked before the query node is called. Both
calls run as the visitor, so another scope's candidate answers as an unknown id does. Without script a
judgment answers 303 back to the list it was made from (`judged=ID` names it there); from htmx it answers
the candidate's row, judged, which replaces the row in place, and a refusal is shown inside the row.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from quarry.core.errors import QuarryError
from quarry.core.public_refs import ASSERTION_PREFIX, parse_ref
from quarry.core.session_ids import scope_of
from quarry.core.tokens import WRITE
from quarry.core.vocab import ASSERTION_KINDS
from quarry.query.http_status import http_status
from quarry.query.web.pages import Web
from quarry.query.web.query_box import MAX_LIMIT, href, limit_param, when
from quarry.query.web.refs import message_seq, reader_href, ref_href
from quarry.query.web.signin import CSRF_FIELD, CSRF_HEADER, Visitor
from quarry.v1 import assertions_pb2, refs_pb2, units_pb2

PATH = "/assertions"
JUDGE_PATH = "/assertions/judge"
DEFAULT_LIMIT = 50  # the API's default (docs/search-api.md)
# What each state of a candidate means, as the row says it.
STATES = {
    "candidate": "awaiting judgment",
    "accepted": "accepted: its claim is now an active assertion",
    "rejected": "rejected: closed, the reason kept as a judgment record",
    "deferred": "deferred: set aside, the reason kept as a judgment record",
    "superseded": "superseded: a replacement claim is now the active assertion",
}


@dataclass(frozen=True)
class Link:
    text: str
    href: str


@dataclass(frozen=True)
class Filters:
    """The list's filters, as ListCandidates takes them (0: the API's default limit)."""

    target_ref: str
    review: bool
    limit: int

    def href(self, **changed: str | int) -> str:
        """The list's address with these filters, `changed` set over them."""
        params: dict[str, str | int] = {"target_ref": self.target_ref, "review": int(self.review), "limit": self.limit}
        return href(PATH, **{**params, **changed})


@dataclass(frozen=True)
class Row:
    """One candidate as the page shows it."""

    assertion: units_pb2.Assertion
    dom_id: str  # the row's element id: a digest, since an assertion id is any text its writer chose
    actions: list[str]  # the judgments still possible (none once judged)
    may_judge: bool  # the visitor's token holds `write` on the candidate's scope
    target: Link
    session: Link
    evidence: list[Link]
    created: units_pb2.Assertion | None = None  # what a judgment just made

    @property
    def state(self) -> str:
        return STATES.get(self.assertion.status, self.assertion.status)

    @property
    def scope(self) -> str:
        return scope_of(self.assertion.session_id)

    @property
    def since(self) -> str:
        return when(self.assertion.created_ms)

    @property
    def ref(self) -> Link:
        return assertion_link(self.assertion.id)

    @property
    def made(self) -> Link | None:
        return assertion_link(self.created.id) if self.created is not None else None


def routes(web: Web) -> list[BaseRoute]:
    return [
        Route(PATH, web.page(candidates_page), methods=["GET"]),
        Route(JUDGE_PATH, web.page(judge, grant=WRITE), methods=["POST"]),
        Route(JUDGE_PATH, back_to_list, methods=["GET"]),
    ]


async def back_to_list(request: Request) -> Response:
    """GET of the judging address (a judgment that had to sign in again comes back here): the list."""
    return RedirectResponse(PATH, status_code=303)


async def candidates_page(web: Web, request: Request, visitor: Visitor) -> Response:
    """The candidates, pending first, then (review) the judged ones."""
    params = request.query_params
    filters = Filters(params.get("target_ref", "").strip(), _review(params), limit_param(request))
    context: dict[str, object] = {"filters": filters, "kinds": ASSERTION_KINDS, "error": None}
    listing = assertions_pb2.ListCandidatesRequest(
        target_ref=filters.target_ref, review=filters.review, limit=filters.limit
    )
    try:
        answer = await web.call(visitor, web.coordinator.assertions.list_candidates, listing)
    except QuarryError as error:  # a malformed target ref: shown under the filters, to be corrected
        return web.html(request, visitor, "assertions.html", status=http_status(error), **{**context, "error": error})
    rows = [row_of(e.assertion, visitor, list(e.actions)) for e in answer.entries]
    shown = filters.limit or DEFAULT_LIMIT
    more = filters.href(limit=min(2 * shown, MAX_LIMIT)) if len(rows) >= shown and shown < MAX_LIMIT else ""
    judged = await _judged(web, visitor, params.get("judged", ""))
    pending = sum(1 for row in rows if row.actions)
    return web.html(
        request,
        visitor,
        "assertions.html",
        **{**context, "rows": rows, "pending": pending, "judged": judged, "more_href": more},
    )


async def judge(web: Web, request: Request, visitor: Visitor) -> Response:
    """One judgment, after the CSRF check; the row (htmx) or back to the list."""
    form = await request.form()
    fields = {name: str(value) for name, value in form.items()}
    submitted = fields.get(CSRF_FIELD) or request.headers.get(CSRF_HEADER, "")
    filters = Filters(fields.get("target_ref", ""), _review(fields), _form_limit(fields))
    htmx = bool(request.headers.get("hx-request"))
    try:
        web.signin.check_csrf(visitor, submitted)
        judgment = assertions_pb2.JudgeCandidateRequest(
            id=fields.get("id", ""),
            judgment=fields.get("judgment", ""),
            reason=fields.get("reason", "").strip(),
            kind=fields.get("kind", ""),
            body=fields.get("body", "").strip(),
        )
        judged = await web.call(visitor, web.coordinator.assertions.judge, judgment)
    except QuarryError as error:
        if not htmx:
            raise  # the error page, with the API's status
        return refusal(fields.get("id", ""), error)
    if not htmx:
        return RedirectResponse(filters.href(judged=judged.candidate.id), status_code=303)
    row = row_of(judged.candidate, visitor, [], created=judged.created)
    return web.html(request, visitor, "_candidate.html", row=row, filters=filters, kinds=ASSERTION_KINDS)


def refusal(candidate_id: str, error: QuarryError) -> HTMLResponse:
    """A refused judgment for htmx: the API's status, code and message, shown inside the candidate's row
    (HX-Retarget) instead of replacing it."""
    status = http_status(error)
    shown = Markup('{} <span class="code">{}</span> {}').format(status, error.code_name, error.message)
    headers = {"HX-Retarget": f"#{dom_id(candidate_id)} .refusal", "HX-Reswap": "innerHTML"}
    return HTMLResponse(str(shown), status_code=status, headers=headers)


def row_of(
    assertion: units_pb2.Assertion,
    visitor: Visitor,
    actions: list[str],
    created: units_pb2.Assertion | None = None,
) -> Row:
    caller = visitor.caller
    return Row(
        assertion=assertion,
        dom_id=dom_id(assertion.id),
        actions=actions,
        may_judge=caller is None or caller.may(WRITE, scope_of(assertion.session_id)),
        target=ref_link(assertion.target_ref),
        session=Link(assertion.session_id, reader_href(assertion.session_id) if assertion.session_id else ""),
        evidence=[ref_link(ref) for ref in assertion.evidence_refs],
        created=created,
    )


def dom_id(assertion_id: str) -> str:
    bare = assertion_id.removeprefix(ASSERTION_PREFIX)
    return "candidate-" + hashlib.sha256(bare.encode()).hexdigest()[:16]


def assertion_link(assertion_id: str) -> Link:
    ref = ASSERTION_PREFIX + assertion_id
    return Link(ref, ref_href(ref))


def ref_link(ref: str) -> Link:
    """Where a ref opens: the reader for a session, at the message for a message or a block; the ref
    page for any other object; nothing for what is no ref."""
    try:
        kind, object_id, session_id = parse_ref(ref)
    except QuarryError:
        return Link(ref, "")
    if kind == "session":
        return Link(ref, reader_href(session_id))
    if kind in ("message", "block"):
        message_id = object_id if kind == "message" else object_id.rsplit(":", 1)[0]
        return Link(ref, reader_href(session_id, message_seq(session_id, message_id)))
    return Link(ref, ref_href(ref))


async def _judged(web: Web, visitor: Visitor, candidate_id: str) -> Row | None:
    """The candidate a judgment made without script just closed, read again as the visitor (so the
    notice says what the archive holds, never what the address claims); None for nothing to show."""
    if not candidate_id:
        return None
    request = refs_pb2.ResolveRefRequest(ref=ASSERTION_PREFIX + candidate_id.removeprefix(ASSERTION_PREFIX))
    resolved = await web.call(visitor, web.coordinator.refs.resolve, request)
    if not resolved.resolved or resolved.WhichOneof("object") != "assertion":
        return None
    if resolved.assertion.status == "candidate":
        return None
    return row_of(resolved.assertion, visitor, [])


def _review(values: Mapping[str, str]) -> bool:
    return values.get("review", "") not in ("", "0")


def _form_limit(fields: Mapping[str, str]) -> int:
    """The list's limit a form carries back (only to return to the same list: out of range is the default)."""
    raw = fields.get("limit", "")
    return int(raw) if raw.isdigit() and int(raw) <= MAX_LIMIT else 0
