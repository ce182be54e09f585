"""The sign-in cookie and CSRF tokens of the web reader, in process: what the cookie carries, where it is
Secure, how long it lives, and that nothing but this node's own seal opens it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route
from starlette.testclient import TestClient

from quarry.core import auth
from quarry.core.errors import QuarryError
from quarry.core.tokens import TokenStore
from quarry.query.web import app as web_app
from quarry.query.web.pages import Web
from quarry.query.web.rendering import environment
from quarry.query.web.signin import COOKIE, LIFETIME_S, SignIn, SignInRequired, Visitor, local_path
from quarry.v1 import errors_pb2


def signed_in_app(tmp_path: Path, secure: bool) -> tuple[TestClient, str, SignIn]:
    store = TokenStore.in_home(tmp_path)
    token = store.create("reader", {"team-a": ["read"]})[0]
    signin = SignIn(auth.Gate(store), "cluster-key", secure)
    web = Web(None, None, signin, environment())  # type: ignore[arg-type]  # sign-in needs neither
    app = Starlette(routes=[Route("/signin", web_app._sign_in_endpoint(web), methods=["GET", "POST"])])
    base = "https://testserver" if secure else "http://testserver"
    return TestClient(app, base_url=base), token, signin


@pytest.mark.parametrize("secure", [True, False])
def test_the_cookie_is_http_only_strict_and_secure_under_tls(tmp_path: Path, secure: bool) -> None:
    client, token, _ = signed_in_app(tmp_path, secure)
    answer = client.post("/signin?next=/units", data={"token": token}, follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"] == "/units"
    cookie = answer.headers["set-cookie"].lower()
    assert f"{COOKIE}=" in cookie and "httponly" in cookie and "samesite=strict" in cookie
    assert ("; secure" in cookie) is secure
    assert f"max-age={LIFETIME_S}" in cookie and token.lower() not in cookie


def test_a_wrong_token_gets_no_cookie_and_the_api_reason(tmp_path: Path) -> None:
    client, _, _ = signed_in_app(tmp_path, secure=False)
    answer = client.post("/signin", data={"token": "qry_nope"}, follow_redirects=False)
    assert answer.status_code == 401 and "set-cookie" not in answer.headers and "not valid" in answer.text


def with_cookie(cookie: str) -> Request:
    headers = [(b"cookie", f"{COOKIE}={cookie}".encode())]
    return Request({"type": "http", "method": "GET", "path": "/", "headers": headers})


def test_only_this_seal_opens_a_cookie_and_an_expired_one_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, token, signin = signed_in_app(tmp_path, secure=False)
    cookie = signin.cookie_for(token)
    assert signin.visitor(with_cookie(cookie)).cookie == cookie
    tampered = cookie[:-2] + ("A" if cookie[-2] != "A" else "B") + cookie[-1]
    for foreign, seal in ((cookie, SignIn(signin.gate, "another-cluster", secure=False)), (tampered, signin)):
        with pytest.raises(SignInRequired):
            seal.visitor(with_cookie(foreign))
    monkeypatch.setattr(time, "time", lambda: 2e10)  # long after its 12 hours
    with pytest.raises(SignInRequired):
        signin.visitor(with_cookie(cookie))


def test_csrf_tokens_belong_to_one_sign_in(tmp_path: Path) -> None:
    _, token, signin = signed_in_app(tmp_path, secure=False)
    one, two = Visitor(None, None, signin.cookie_for(token)), Visitor(None, None, signin.cookie_for(token))
    signin.check_csrf(one, signin.csrf_token(one))
    for wrong in ("", "0" * 64, signin.csrf_token(two)):
        with pytest.raises(QuarryError) as refused:
            signin.check_csrf(one, wrong)
        assert refused.value.code == errors_pb2.PERMISSION_DENIED


@pytest.mark.parametrize(
    ("target", "kept"),
    [("/units?q=1", "/units?q=1"), ("//evil.example/", "/"), ("https://evil.example", "/"), ("/\\evil", "/"),
     ("/ok\r\nSet-Cookie: x=1", "/"), ("", "/")],
)  # fmt: skip
def test_sign_in_returns_only_to_this_site(target: str, kept: str) -> None:
    assert local_path(target) == kept
