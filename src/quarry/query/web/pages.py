"""What every page handler shares: who is reading, calling the query node as them, and answering HTML.

A page handler is `async def handler(web, request, visitor) -> Response`, wrapped by `Web.page`: the
visitor comes from the sign-in cookie (a request without one is sent to /signin and back), the handler's
calls run on a worker thread with the visitor's caller and scopes set exactly as an API request's are
(`Web.call`), and a typed error becomes an error page with the status the API would answer. A session
outside the visitor's scopes is therefore the same 404 as an unknown one.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Any

from google.protobuf.message import Message as ProtoMessage
from jinja2 import Environment
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from quarry.core import auth
from quarry.core.admission import run_admitted
from quarry.core.errors import QuarryError
from quarry.core.tokens import READ
from quarry.query.http_status import http_status
from quarry.query.root import Coordinator
from quarry.query.sessions import SessionQueries
from quarry.query.web.rendering import render
from quarry.query.web.signin import SignIn, SignInRequired, Visitor

Handler = Callable[["Web", Request, Visitor], Awaitable[Response]]


class Web:
    """The pages' view of the query node."""

    def __init__(self, coordinator: Coordinator, sessions: SessionQueries, signin: SignIn, env: Environment) -> None:
        self.coordinator = coordinator
        self.sessions = sessions
        self.signin = signin
        self.env = env

    async def call(self, visitor: Visitor, fn: Callable[..., Any], *args: Any) -> Any:
        """`fn(*args)` on a worker thread as the visitor, local paths left out as the API leaves them."""

        def as_visitor() -> Any:
            answer = fn(*args)
            return auth.redact_local_paths(answer) if isinstance(answer, ProtoMessage) else answer

        return await run_in_threadpool(run_admitted, auth.run_as, visitor.caller, visitor.scopes, as_visitor)

    def html(
        self, request: Request, visitor: Visitor, template: str, status: int = 200, **context: Any
    ) -> HTMLResponse:
        """The template with what every page needs: the visitor's CSRF token,
        whether they signed in (to sign out), and the path (for navigation)."""
        page = render(
            self.env,
            template,
            csrf=self.signin.csrf_token(visitor),
            signed_in=bool(visitor.cookie),
            path=request.url.path,
            **context,
        )
        return HTMLResponse(page, status_code=status)

    def error(self, request: Request, visitor: Visitor, error: QuarryError) -> HTMLResponse:
        status = http_status(error)  # the API's status, so both answer alike
        return self.html(request, visitor, "error.html", status=status, error=error, status_code=status)

    def page(self, handler: Handler, grant: str = READ) -> Callable[[Request], Awaitable[Response]]:
        """The endpoint of a page handler (see the module docstring)."""

        async def endpoint(request: Request) -> Response:
            try:
                visitor = self.signin.visitor(request, grant)
            except SignInRequired:
                return sign_in_redirect(request)
            except QuarryError as error:
                return self.error(request, Visitor(None, None), error)
            try:
                return await handler(self, request, visitor)
            except QuarryError as error:
                return self.error(request, visitor, error)

        endpoint.__doc__ = handler.__doc__
        return endpoint


def sign_in_redirect(request: Request) -> Response:
    """To /signin, coming back to this page after; an htmx fragment request reloads the whole page
    there instead of swapping a sign-in form into a fragment."""
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    target = "/signin?" + urllib.parse.urlencode({"next": here})
    if request.headers.get("hx-request"):
        return Response(status_code=204, headers={"HX-Redirect": target})
    return RedirectResponse(target, status_code=303)
