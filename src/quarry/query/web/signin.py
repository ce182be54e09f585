"""Sign-in for the web reader: a token exchanged for a sealed cookie, and CSRF tokens for writes.

Where the cluster has tokens, a person signs in once with a token: the page checks it as the API would
(it must grant `read` on some scope) and answers with a cookie holding the token sealed (AES-SIV under a
key HKDF derives from the cluster key, the same machinery as cursors under another purpose, so a cursor
never opens as a cookie), HttpOnly, SameSite=Strict, Secure under TLS, for 12 hours. Each request
unseals it and authenticates the token again, so a revoked token stops working at once. Without tokens
(the loopback default) nobody signs in.

Writes (judging an assertion, signing out) carry a CSRF token: an HMAC of the cookie (or of the process
when nobody signs in) that the page puts in its forms and in htmx's request headers; a request without
it is refused. The HTTP server's host guard already refuses requests from another site's pages (Origin);
the token is the second lock.
"""

from __future__ import annotations

import hmac
import secrets
import time
from dataclasses import dataclass
from hashlib import sha256

import orjson
from starlette.requests import Request

from quarry.core import auth
from quarry.core.errors import QuarryError
from quarry.core.tokens import READ, Caller
from quarry.query.cursor_seal import CursorSeal
from quarry.v1 import errors_pb2

COOKIE = "quarry_session"
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"
LIFETIME_S = 12 * 3600
_COOKIE_INFO, _COOKIE_PURPOSE = b"quarry/v1 web sign-in", b"quarry web sign-in cookie"


class SignInRequired(Exception):
    """The page needs a signed-in token and the request has none (or an expired or revoked one)."""


@dataclass(frozen=True)
class Visitor:
    """Who is reading: the token's caller and scopes (None, None without tokens), and its sealed cookie."""

    caller: Caller | None
    scopes: frozenset[str] | None
    cookie: str = ""


class SignIn:
    def __init__(self, gate: auth.Gate, cluster_key: str | None, secure: bool) -> None:
        self.gate = gate
        self.secure = secure
        if cluster_key is None:
            self._seal = CursorSeal(secrets.token_bytes(64), _COOKIE_PURPOSE)
            self._csrf_key = secrets.token_bytes(32)
        else:
            self._seal = CursorSeal.of_cluster_key(cluster_key, _COOKIE_INFO, _COOKIE_PURPOSE)
            self._csrf_key = hmac.new(cluster_key.encode(), b"quarry/v1 web csrf", sha256).digest()

    @property
    def required(self) -> bool:
        return self.gate.enabled

    def cookie_for(self, token: str) -> str:
        """The cookie value for a token that grants `read` on some scope; UNAUTHENTICATED or
        PERMISSION_DENIED (as the API) otherwise."""
        self.gate.admit(f"Bearer {token}", READ)
        payload = {"t": token, "exp": int(time.time()) + LIFETIME_S, "n": secrets.token_hex(8)}
        return self._seal.seal(orjson.dumps(payload))

    def visitor(self, request: Request, grant: str = READ) -> Visitor:
        """The request's reader with the scopes its token holds for `grant`: from the cookie, or from an
        `Authorization: Bearer` header (a program fetching a page). SignInRequired without either;
        PERMISSION_DENIED when the token lacks `grant`."""
        if not self.required:
            return Visitor(None, None)
        cookie = request.cookies.get(COOKIE, "")
        header = request.headers.get("authorization")
        token = self._token(cookie)
        if token is None and header is None:
            raise SignInRequired
        try:
            caller, scopes = self.gate.admit(header if token is None else f"Bearer {token}", grant)
        except QuarryError as error:
            if error.code == errors_pb2.UNAUTHENTICATED:
                raise SignInRequired from None
            raise
        return Visitor(caller, scopes, cookie if token is not None else "")

    def _token(self, cookie: str) -> str | None:
        opened = self._seal.open(cookie) if cookie else None
        if opened is None:
            return None
        try:
            payload = orjson.loads(opened)
        except orjson.JSONDecodeError:
            return None
        return payload["t"] if payload.get("exp", 0) > time.time() else None

    def csrf_token(self, visitor: Visitor) -> str:
        return hmac.new(self._csrf_key, b"csrf\0" + visitor.cookie.encode(), sha256).hexdigest()

    def check_csrf(self, visitor: Visitor, submitted: str | None) -> None:
        """PERMISSION_DENIED unless `submitted` is the visitor's CSRF token."""
        if not submitted or not hmac.compare_digest(submitted, self.csrf_token(visitor)):
            raise QuarryError(
                errors_pb2.PERMISSION_DENIED,
                "the form's CSRF token is missing or does not match this sign-in: reload the page and try again",
                parameter=CSRF_FIELD,
            )


def local_path(target: str | None) -> str:
    """`target` when it is a path of this site (no scheme, no host, no `//` or `/\\`), else `/`: the page
    signed in to is never another site's (an open redirect)."""
    if not target or not target.startswith("/") or target.startswith(("//", "/\\")) or any(c in target for c in "\r\n"):
        return "/"
    return target
