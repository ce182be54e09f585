"""`/r/{ref}`: the object a public ref names (docs/search-api.md#public-refs), resolved as the visitor
(QueryService.ResolveRef), and the reader's address of a session or a message.

A session ref opens the session in the reader; a message or block ref opens it at that message
(`/sessions/{id}?at={seq}`, the message `<id>:m<seq>`: the reader scrolls to it and highlights it). Any
other kind (a run, an observed event, a context snapshot, a delegation's card, an assertion) is shown as the
fields of the resolved object, the refs and sessions it names linked.

A ref that names nothing the visitor may read is 404 with the API's caveats, which are the same whether
the session does not exist or lives in a scope the token may not read (the partition answers both alike).
A malformed ref is the API's BAD_VALUE.
"""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass

from google.protobuf import json_format
from google.protobuf.message import Message as ProtoMessage
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from quarry.core.errors import QuarryError
from quarry.core.public_refs import REF_KINDS, parse_ref
from quarry.query.web.pages import Web
from quarry.query.web.query_box import TIME_FIELDS, when
from quarry.query.web.reader import reader_path
from quarry.query.web.signin import Visitor
from quarry.v1 import errors_pb2, refs_pb2

SESSION_ID_FIELDS = ("session_id", "child_session_id", "parent_session_id")


def routes(web: Web) -> list[BaseRoute]:
    return [Route("/r/{ref:path}", web.page(ref_page), methods=["GET"])]


def reader_href(session_id: str, seq: int | None = None) -> str:
    """The reader's page of a session, at message `seq` (`<id>:m<seq>`) when given."""
    path = reader_path(session_id)
    return path if seq is None else f"{path}?at={seq}"


def ref_href(ref: str) -> str:
    return "/r/" + urllib.parse.quote(ref, safe=":@/")


def message_seq(session_id: str, message_id: str) -> int | None:
    """The seq of a message of the session from its id (`<session id>:m<seq>`); None for another form."""
    suffix = message_id.removeprefix(f"{session_id}:m")
    return int(suffix) if suffix != message_id and suffix.isdigit() else None


@dataclass(frozen=True)
class Field:
    """One field of a resolved object: its text, and where it links to ("" for none); `block`: shown as
    preformatted text (long or structured)."""

    name: str
    text: str
    href: str
    block: bool


async def ref_page(web: Web, request: Request, visitor: Visitor) -> Response:
    """The object a public ref names, or the reader at it."""
    ref = request.path_params["ref"]
    parse_ref(ref)  # BAD_VALUE, as the API, for what is no ref at all
    resolved = await web.call(visitor, web.coordinator.refs.resolve, refs_pb2.ResolveRefRequest(ref=ref))
    if not resolved.resolved:
        raise QuarryError(errors_pb2.NOT_FOUND, "; ".join(resolved.caveats) or f"{ref} names nothing you may read")
    which = resolved.WhichOneof("object")
    if which == "session":
        return RedirectResponse(reader_href(resolved.session.id), status_code=303)
    if which == "message":
        return RedirectResponse(reader_href(resolved.session_id, resolved.message.seq), status_code=303)
    if which == "block":
        seq = message_seq(resolved.session_id, resolved.block.id.rsplit(":", 1)[0])
        return RedirectResponse(reader_href(resolved.session_id, seq), status_code=303)
    obj = getattr(resolved, which)
    return web.html(
        request,
        visitor,
        "ref.html",
        ref=ref,
        kind=resolved.kind,
        session_href=reader_href(resolved.session_id) if resolved.session_id else "",
        session_id=resolved.session_id,
        fields=fields_of(obj),
        caveats=list(resolved.caveats),
    )


def fields_of(obj: ProtoMessage) -> list[Field]:
    """The object's set fields in proto order, by their proto names; a nested message's fields follow
    as `outer.inner`, lists and maps as JSON."""
    out: list[Field] = []
    values = json_format.MessageToDict(obj, preserving_proto_field_name=True)
    nested = {f.name for f in obj.DESCRIPTOR.fields if f.message_type and not f.message_type.GetOptions().map_entry}
    for name, value in values.items():
        if isinstance(value, dict) and name in nested:
            out.extend(Field(f"{name}.{f.name}", f.text, f.href, f.block) for f in fields_of(getattr(obj, name)))
        else:
            out.append(field_of(name, value))
    return out


def field_of(name: str, value: object) -> Field:
    """One value as shown: text (structured values as JSON), linked when it is a ref or a session id."""
    if isinstance(value, dict | list):
        return Field(name, json.dumps(value, indent=2, ensure_ascii=False), "", True)
    text = when(value) if name in TIME_FIELDS and isinstance(value, int | str) else str(value)
    href = ""
    if name in SESSION_ID_FIELDS and text:
        href = reader_href(text)
    elif is_ref(text):
        href = ref_href(text)
    return Field(name, text, href, "\n" in text or len(text) > 200)


def is_ref(text: str) -> bool:
    kind, colon, _ = text.partition(":")
    if not colon or kind not in REF_KINDS:
        return False
    try:
        parse_ref(text)
    except QuarryError:
        return False
    return True
