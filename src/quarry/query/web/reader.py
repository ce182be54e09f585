"""The session reader: one session's messages, paged, and its transcript as a file.

GET /sessions/{id}                          the first page (PAGE events); `?from=SEQ` the page from event
                                            SEQ; `?at=N` (the message `<id>:mN` a search hit or a message
                                            ref names) or `?event=SEQ` (an event of the session API)
                                            redirects to the page holding it, scrolled there
                                            (`#event-SEQ`) and highlighted
GET /sessions/{id}/events?from=SEQ          the next page's events as a fragment (htmx loads it when the
                                            sentinel at the end of a page scrolls into view)
GET /sessions/{id}/events/{seq}/raw         the raw record(s), `?through=SEQ` up to that event: a fragment
                                            for htmx, else a page
GET /sessions/{id}/export.html|export.md    the transcript as one file, redacted unless `?redact=false`

Every read is the session API's as the signed-in visitor (`Web.call`), with local paths left out as the
API leaves them, so another scope's session answers exactly as an unknown one. A session id holds `:`
and may hold `/` (a subagent's): each route takes the rest of the path as the id.
"""

from __future__ import annotations

import contextlib
import json
import re
import urllib.parse
from typing import Any, TypeVar

from google.protobuf.message import Message as ProtoMessage
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from quarry.core import auth
from quarry.core.errors import QuarryError
from quarry.query.web.pages import Web
from quarry.query.web.signin import Visitor
from quarry.query.web.transcript.files import FORMATS, exporting, filename, transcript_html, transcript_markdown
from quarry.query.web.transcript.reading import PAGE, WINDOW, TranscriptReader
from quarry.v1 import errors_pb2, sessions_pb2

MAX_SEQ = 2**31 - 1
SEQ = re.compile(r"[0-9]{1,10}")
Answer = TypeVar("Answer", bound=ProtoMessage)


def reader_path(session_id: str) -> str:
    """The reader's path of a session."""
    return "/sessions/" + urllib.parse.quote(session_id, safe=":@")


def routes(web: Web) -> list[BaseRoute]:
    return [
        Route("/sessions/{session_id:path}/events/{seq:int}/raw", web.page(_raw)),
        Route("/sessions/{session_id:path}/events", web.page(_events)),
        Route("/sessions/{session_id:path}/export.html", web.page(_export_html)),
        Route("/sessions/{session_id:path}/export.md", web.page(_export_markdown)),
        Route("/sessions/{session_id:path}", web.page(_reader)),
    ]


class NodeSource:
    """The transcript's Source on the query node itself: its session API, called in the
    visitor's identity (inside `Web.call`), local paths left out as the API leaves them."""

    def __init__(self, web: Web) -> None:
        self.sessions = web.sessions

    def read_event(self, request: sessions_pb2.ReadEventRequest) -> sessions_pb2.EventWindow:
        return _as_api(self.sessions.read_event(request))

    def list_events(self, request: sessions_pb2.ListEventsRequest) -> sessions_pb2.EventPage:
        return _as_api(self.sessions.list_events(request))

    def trace_session(self, request: sessions_pb2.SessionIdRequest) -> sessions_pb2.LineageTrace:
        return _as_api(self.sessions.trace_session(request))


def _as_api(answer: Answer) -> Answer:
    auth.redact_local_paths(answer)
    return answer


def _transcripts(web: Web) -> TranscriptReader:
    """The reader's: the archive's text, other sessions linked."""
    return TranscriptReader(NodeSource(web), reader_path)


async def _reader(web: Web, request: Request, visitor: Visitor) -> Response:
    """A session's messages from `?from=` (0), the event `?event=` highlighted; `?at=` (a message) or
    `?event=` alone redirects to the page holding it, scrolled there."""
    session_id = request.path_params["session_id"]
    base = reader_path(session_id)
    at, event, start = _seq(request, "at"), _seq(request, "event"), _seq(request, "from")
    if start is None and (at is not None or event is not None):
        if event is None:
            event = await web.call(visitor, _transcripts(web).event_of_message, session_id, at)
        return RedirectResponse(f"{base}?from={event // PAGE * PAGE}&event={event}#event-{event}", status_code=303)
    page = await web.call(visitor, _transcripts(web).page, session_id, start or 0, event)
    return web.html(request, visitor, "reader.html", page=page, base=base, reader=True, page_size=PAGE)


async def _events(web: Web, request: Request, visitor: Visitor) -> Response:
    """The page from `?from=` as a fragment (htmx); the whole reader page without htmx."""
    session_id = request.path_params["session_id"]
    base = reader_path(session_id)
    start = _seq(request, "from") or 0
    if not request.headers.get("hx-request"):
        return RedirectResponse(f"{base}?from={start}", status_code=303)
    page = await web.call(visitor, _transcripts(web).page, session_id, start, None)
    return web.html(request, visitor, "_events.html", page=page, base=base, reader=True)


async def _raw(web: Web, request: Request, visitor: Visitor) -> Response:
    """The raw records of one event (or of `seq`..`?through=`) as the session API holds them."""
    session_id = request.path_params["session_id"]
    seq = int(request.path_params["seq"])
    if seq > MAX_SEQ:
        raise _invalid("seq", f"seq must be an event number 0..{MAX_SEQ}, not {seq}")
    through = _seq(request, "through")
    through = seq if through is None else through
    if not seq <= through <= seq + WINDOW:
        raise _invalid("through", f"through must be {seq}..{seq + WINDOW} (the event and at most {WINDOW} after)")
    ask = sessions_pb2.ReadEventRequest(session_id=session_id, seq=seq, after=through - seq)
    window = await web.call(visitor, web.sessions.read_event, ask)
    records = [_record(event) for event in window.events if seq <= event.seq <= through]
    if request.headers.get("hx-request"):
        return web.html(request, visitor, "_raw.html", records=records)
    back = f"{reader_path(session_id)}?event={seq}"
    return web.html(request, visitor, "raw.html", records=records, session_id=session_id, back=back)


async def _export_html(web: Web, request: Request, visitor: Visitor) -> Response:
    """The transcript as one self-contained HTML file."""
    return await _export(web, request, visitor, "html")


async def _export_markdown(web: Web, request: Request, visitor: Visitor) -> Response:
    """The transcript as Markdown."""
    return await _export(web, request, visitor, "md")


async def _export(web: Web, request: Request, visitor: Visitor, form: str) -> Response:
    session_id = request.path_params["session_id"]
    redact = _redact(request)
    page = await web.call(visitor, exporting(NodeSource(web), redact).whole, session_id)
    body = transcript_html(page) if form == "html" else transcript_markdown(page)
    disposition = f'attachment; filename="{filename(session_id, form)}"'
    return Response(body, media_type=FORMATS[form], headers={"content-disposition": disposition})


def _record(event: Any) -> dict[str, Any]:
    raw = event.raw_json.decode("utf-8", errors="replace")
    with contextlib.suppress(ValueError):  # a malformed line is shown as it was read
        raw = json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
    return {"seq": event.seq, "type": event.type, "surface": event.surface, "line": event.line, "raw": raw}


def _seq(request: Request, name: str) -> int | None:
    value = request.query_params.get(name)
    if value is None:
        return None
    if not SEQ.fullmatch(value) or int(value) > MAX_SEQ:
        raise _invalid(name, f"{name} must be an event number 0..{MAX_SEQ}, not {value[:40]!r}")
    return int(value)


def _redact(request: Request) -> bool:
    value = request.query_params.get("redact", "true")
    if value not in ("true", "false"):
        raise _invalid("redact", f"redact must be true or false, not {value[:40]!r}")
    return value == "true"


def _invalid(parameter: str, message: str) -> QuarryError:
    return QuarryError(errors_pb2.INVALID_REQUEST, message, parameter=parameter)
