"""The web reader's routes, mounted by the HTTP server beside `/api` (quarry.query.http_api).

GET  /                      search (search.py)
GET  /sessions/{id}         the session reader (reader.py), its events paged in
GET  /units                 the units console (units.py)
GET  /usage                 usage per day, model, agent or repo (usage.py)
GET  /r/{ref}               the object a public ref names
GET  /assertions, POST /assertions/judge   candidates and their judgment (assertions.py)
GET  /signin, POST /signin  exchange a token for the sign-in cookie (signin.py)
POST /signout               forget it
GET  /static/…              the stylesheet, quarry.js and the vendored htmx
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from quarry.core import auth
from quarry.core.errors import QuarryError
from quarry.query.root import Coordinator
from quarry.query.sessions import SessionQueries
from quarry.query.web import assertions, reader, refs, search, units, usage
from quarry.query.web.pages import Web
from quarry.query.web.rendering import environment
from quarry.query.web.signin import COOKIE, CSRF_FIELD, LIFETIME_S, SignIn, SignInRequired, Visitor, local_path

Endpoint = Callable[[Request], Awaitable[Response]]


def web_routes(coordinator: Coordinator, sessions: SessionQueries, gate: auth.Gate, secure: bool) -> list[BaseRoute]:
    """The pages over the query node's coordinator and session API, signed in against `gate`; `secure`:
    served over TLS (the cookie is then Secure)."""
    web = Web(coordinator, sessions, SignIn(gate, auth.security().cluster_key, secure), environment())
    return [
        Route("/signin", _sign_in_endpoint(web), methods=["GET", "POST"]),
        Route("/signout", _sign_out_endpoint(web), methods=["POST"]),
        Mount("/static", StaticFiles(packages=[("quarry.query.web", "static")]), name="static"),
        *search.routes(web),
        *units.routes(web),
        *refs.routes(web),
        *usage.routes(web),
        *reader.routes(web),
        *assertions.routes(web),
    ]


def _sign_in_endpoint(web: Web) -> Endpoint:
    async def endpoint(request: Request) -> Response:
        """The sign-in form; POST: the token checked as the API checks it, then the cookie."""
        anonymous = Visitor(None, None)
        target = local_path(request.query_params.get("next"))
        if not web.signin.required:
            return RedirectResponse(target, status_code=303)
        if request.method == "GET":
            return web.html(request, anonymous, "signin.html", next=target, problem="")
        form = await request.form()
        token = str(form.get("token", "")).strip()
        try:
            cookie = web.signin.cookie_for(token)
        except QuarryError as error:
            return web.html(request, anonymous, "signin.html", status=401, next=target, problem=error.message)
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(
            COOKIE, cookie, max_age=LIFETIME_S, httponly=True, samesite="strict", secure=web.signin.secure, path="/"
        )
        return response

    return endpoint


def _sign_out_endpoint(web: Web) -> Endpoint:
    async def endpoint(request: Request) -> Response:
        """Forget the cookie (a write: it needs the form's CSRF token, so no other page signs you out)."""
        try:
            visitor = web.signin.visitor(request)
        except (SignInRequired, QuarryError):
            visitor = None
        if visitor is not None:
            form = await request.form()
            try:
                web.signin.check_csrf(visitor, str(form.get(CSRF_FIELD, "")))
            except QuarryError as error:
                return web.error(request, visitor, error)
        response = RedirectResponse("/signin", status_code=303)
        response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict", secure=web.signin.secure)
        return response

    return endpoint
