"""The headers every HTTP response of the query node carries: its security policy and its server time.

The Content-Security-Policy allows scripts, styles and fetches from the node itself only and no inline
script or style, so even markup that slipped through a page's escaping could not run (the web pages keep
their behaviour in static files: quarry.query.web). A response that sets a header itself keeps its own
(a transcript export states its own, stricter policy).

`Server-Timing: app;dur=MS` is the node's time from the request to its answer's headers, so a browser's
developer tools and bench/web.py see server time apart from the network. Pages and API answers are
rendered whole before their headers are sent, so it is their whole server time; for a streamed answer
(a session's raw log) it is the time to the first byte.
"""

from __future__ import annotations

import time

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ]
)
SECURITY_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
}


class ResponseHeaders:
    """Adds SECURITY_HEADERS and Server-Timing to every HTTP response (pages, fragments, static files,
    the JSON API and the host guard's refusals)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
                headers.append("server-timing", f"app;dur={(time.perf_counter() - started) * 1000:.2f}")
            await send(message)

        await self.app(scope, receive, with_headers)
