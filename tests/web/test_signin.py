"""Signing in to the web reader, and what every response carries, in a real browser and over plain HTTP."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from quarry.query.response_headers import CONTENT_SECURITY_POLICY
from quarry.query.web.signin import COOKIE
from tests.web.conftest import Page, ReaderSite

pytestmark = pytest.mark.cluster


def fetch(site: ReaderSite, path: str, **headers: str) -> tuple[int, dict[str, str], str]:
    request = urllib.request.Request(site.base + path, headers=headers)
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(request, timeout=60) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def test_a_page_without_sign_in_goes_to_the_sign_in_form_and_back(site: ReaderSite) -> None:
    status, headers, _ = fetch(site, "/units?q=1")
    assert status == 303 and headers["location"] == "/signin?next=%2Funits%3Fq%3D1"


def test_every_response_forbids_inline_script(site: ReaderSite) -> None:
    for path in ("/signin", "/static/htmx.min.js", "/api/embedding/status"):
        _, headers, _ = fetch(site, path)
        assert headers["content-security-policy"] == CONTENT_SECURITY_POLICY, path
        assert "'unsafe-inline'" not in headers["content-security-policy"]
        assert headers["x-content-type-options"] == "nosniff"


def test_sign_in_sets_an_http_only_strict_cookie(page: Page) -> None:
    page.sign_in("a", then="/signin")
    with page.step("read the cookie"):
        cookie = page.driver.get_cookie(COOKIE)
        assert cookie is not None and cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        assert page.site.tokens["a"] not in cookie["value"]  # sealed, not the token in clear
        assert page.driver.execute_script("return document.cookie") == ""  # no script can read it


def test_a_wrong_token_is_refused_with_the_reason(page: Page) -> None:
    with page.step("submit a wrong token"):
        page.open("/signin")
        page.driver.find_element(By.NAME, "token").send_keys("qk_not_a_token")
        page.driver.find_element(By.CSS_SELECTOR, ".signin button[type=submit]").click()
        # the click returns before the form's POST has answered: wait for the page that answers it
        problem = WebDriverWait(page.driver, 30).until(
            expected_conditions.presence_of_element_located((By.CSS_SELECTOR, ".problem"))
        )
        assert "not valid" in problem.text
        assert page.driver.get_cookie(COOKIE) is None


def test_sign_in_never_redirects_to_another_site(site: ReaderSite) -> None:
    for target in ("//evil.example/", "https://evil.example/", "/\\evil.example"):
        status, headers, _ = fetch(site, "/signin?next=" + urllib.request.quote(target, safe=""))
        assert status == 200  # the form; where it goes after is checked on POST
        assert "evil.example" not in headers.get("location", "")
