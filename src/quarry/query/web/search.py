"""`/`: the search page. One box takes what `quarry '…'` and `GET /api/sessions?query=…` take (prose or
the query language: docs/searching.md), with a lane choice (quarry.core.lanes); the answer is a page of
QueryService.Search run as the visitor, beside the facet sidebar (facet_links.py).

Each hit shows its title, origin (and subagent), repo, last activity and its snippet, the matched words
marked (the envelope writes them in `[` `]`: the text is escaped and only those words wrapped in <mark>),
and links to the reader at its best message (`/sessions/{id}?at={seq}`). The next page follows the
envelope's cursor. An empty page shows the envelope's caveats, which say why and what would find
something; a refused query is shown under the box with a caret at its position (query_box.py).

The page takes `q`, `lane`, `limit` and `cursor`. It is a plain GET form; with htmx (hx-boost on the page's
region) a search, a facet and the next page swap the region in place and push the URL. The facet sidebar
is its own request (`/search/facets?q=…`, loaded by htmx as the page arrives): counting facets costs a
search of its own, three times the page's, and the hits should not wait for it. Without script, a link
shows the page again with the sidebar in it (`facets=1`).
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

from markupsafe import Markup, escape
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from quarry.core.errors import QuarryError
from quarry.core.lanes import AUTO, LANES
from quarry.dsl import ast, parse
from quarry.query.web.facet_links import FAMILIES, Sidebar, facets_query, sidebar
from quarry.query.web.pages import Web
from quarry.query.web.query_box import href, limit_param, shown_error, text_param, when
from quarry.query.web.refs import message_seq, reader_href
from quarry.query.web.signin import Visitor
from quarry.query.web.units import PATH as UNITS_PATH
from quarry.v1 import query_pb2

PATH = "/"
FACETS_PATH = "/search/facets"
_MARKED = re.compile(r"\[([^\[\]\s]+)\]")  # a word the snippet marks as matched
STEM_CHARS = 4  # a marked word and a matched term sharing this many first letters are the same word stemmed


@dataclass(frozen=True)
class Hit:
    rank: int
    title: str
    href: str
    session_id: str
    origin: str
    agent: str
    repo: str
    when: str
    snippet: Markup
    surface: str


def routes(web: Web) -> list[BaseRoute]:
    return [
        Route(PATH, web.page(search_page), methods=["GET"]),
        Route(FACETS_PATH, web.page(facets_fragment), methods=["GET"]),
    ]


async def search_page(web: Web, request: Request, visitor: Visitor) -> Response:
    """A page of ranked sessions for the box's query; its facets with `facets=1`, else loaded after."""
    query, cursor, limit = text_param(request, "q"), text_param(request, "cursor"), limit_param(request)
    lane = text_param(request, "lane") or AUTO
    keep: dict[str, str | int] = {"lane": "" if lane == AUTO else lane, "limit": limit}
    context: dict[str, object] = {"q": query, "lane": lane, "lanes": LANES, "limit": limit}
    search = query_pb2.SearchRequest(query=query, lane=lane, limit=limit, cursor=cursor)
    inline = request.query_params.get("facets") == "1"
    try:
        if inline:
            envelope, facets = await asyncio.gather(
                web.call(visitor, web.coordinator.search, search), _sidebar(web, visitor, query)
            )
        else:
            envelope, facets = await web.call(visitor, web.coordinator.search, search), None
    except QuarryError as error:
        shown = shown_error(error, query, PATH, **keep)
        units = href(UNITS_PATH, q=query) if selects_rows(query) else ""
        return web.html(
            request, visitor, "search.html", status=shown.status, error=shown, units_href=units, results=None, **context
        )
    next_href = href(PATH, q=query, cursor=envelope.next_cursor, **keep) if envelope.next_cursor else ""
    return web.html(
        request,
        visitor,
        "search.html",
        error=None,
        results=envelope,
        hits=[hit(h) for h in envelope.hits],
        facets=facets,
        facet_href=lambda q: href(PATH, q=q, **keep),
        facets_fragment_href=href(FACETS_PATH, q=query, **keep),
        inline_facets_href=href(PATH, q=query, facets=1, **keep),
        next_href=next_href,
        **context,
    )


async def facets_fragment(web: Web, request: Request, visitor: Visitor) -> Response:
    """The facet sidebar of the box's query, as the fragment the search page loads."""
    query, lane = text_param(request, "q"), text_param(request, "lane")
    keep: dict[str, str | int] = {"lane": "" if lane in ("", AUTO) else lane, "limit": limit_param(request)}
    facets = await _sidebar(web, visitor, query)
    return web.html(request, visitor, "_facets_aside.html", facets=facets, facet_href=lambda q: href(PATH, q=q, **keep))


def selects_rows(query: str) -> bool:
    """Whether the query is a unit query (`messages where …`), which the units console runs, not Search."""
    try:
        return isinstance(parse(query), ast.UnitQuery)
    except QuarryError:
        return False


async def _sidebar(web: Web, visitor: Visitor, query: str) -> Sidebar | None:
    """The facets of the query's sessions; None when they cannot be counted (the search says why)."""
    try:
        request = query_pb2.FacetsRequest(query=facets_query(query), families=list(FAMILIES))
        return sidebar(await web.call(visitor, web.coordinator.facets.facets, request), query)
    except QuarryError:
        return None


def hit(found: query_pb2.SearchHit) -> Hit:
    session, match = found.session, found.match
    return Hit(
        rank=match.rank,
        title=session.title or session.id,
        href=reader_href(session.id, message_seq(session.id, match.message_id)),
        session_id=session.id,
        origin=session.origin,
        agent=session.agent,
        repo=session.repo,
        when=when(session.updated_ms or session.created_ms),
        snippet=highlighted(match.snippet, match.matched_terms),
        surface=match.match_surface,
    )


def highlighted(snippet: str, matched_terms: list[str] | tuple[str, ...] = ()) -> Markup:
    """The snippet as HTML: every character escaped, the words it marks `[word]` wrapped in <mark>. With
    the hit's matched terms known, only a bracketed word that is one of them (or shares its stem) is a
    mark, so a text's own brackets (`items[0]`) stay text."""
    terms = [t.casefold()[:STEM_CHARS] for t in matched_terms]
    parts: list[Markup] = []
    last = 0
    for found in _MARKED.finditer(snippet):
        word = found[1].casefold()
        if terms and not any(word.startswith(t) or t.startswith(word) for t in terms):
            continue
        parts.append(escape(snippet[last : found.start()]))
        parts.append(Markup("<mark>{}</mark>").format(found[1]))
        last = found.end()
    parts.append(escape(snippet[last:]))
    return Markup("").join(parts)
