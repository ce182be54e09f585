"""`/r/{ref}`: a session or message ref opens the reader there, other kinds show the object, and a ref
the visitor may not read is the same 404 as one to nothing, in the browser and over plain HTTP."""

from __future__ import annotations

import urllib.parse

import pytest
from selenium.webdriver.common.by import By

from tests.web.conftest import Page, ReaderSite
from tests.web.test_search_page import css
from tests.web.test_signin import fetch

pytestmark = pytest.mark.cluster


def as_reader(site: ReaderSite, who: str, path: str) -> tuple[int, dict[str, str], str]:
    return fetch(site, path, authorization=f"Bearer {site.tokens[who]}")


def team_b_session(site: ReaderSite) -> str:
    with site.client("b") as client:
        return client.search("").hits[0].session.id


def anonymous(text: str, ref: str) -> str:
    """The page with the ref (and the session id it holds) written as REF."""
    return text.replace(ref, "REF").replace(ref.removeprefix("session:"), "REF")


@pytest.mark.parametrize("unit", ["messages", "blocks"])
def test_a_message_or_block_ref_opens_the_reader_at_the_message(site: ReaderSite, unit: str) -> None:
    with site.client("a") as client:
        rows = client.query_units(f"{unit} where session.origin:codex-session", limit=50).rows
        row = rows[-1]  # a message past the first
    message_id = row.message.id if unit == "messages" else row.block.id.rsplit(":", 1)[0]
    seq = int(message_id.rsplit(":m", 1)[1])
    status, headers, _ = as_reader(site, "a", f"/r/{row.ref}")
    assert status == 303 and seq > 0
    assert urllib.parse.unquote(headers["location"]) == f"/sessions/{row.session_id}?at={seq}"


def test_a_session_ref_opens_the_reader(site: ReaderSite) -> None:
    with site.client("a") as client:
        session_id = client.search("").hits[0].session.id
    status, headers, _ = as_reader(site, "a", f"/r/session:{session_id}")
    assert status == 303 and urllib.parse.unquote(headers["location"]) == f"/sessions/{session_id}"


def test_a_run_ref_shows_the_run(page: Page) -> None:
    with page.site.client("a") as client:
        row = client.query_units("runs where role:main", limit=1).rows[0]
    page.sign_in("a")
    page.open(f"/r/{row.ref}")
    with page.step("the run's fields, its session linked to the reader"):
        fields = {
            tr.find_element(By.TAG_NAME, "th").text: tr.find_element(By.TAG_NAME, "td").text
            for tr in css(page, "table.fields tr")
        }
        assert fields["id"] == row.run.id and fields["role"] == "main" and fields["status"] == row.run.status
        link = css(page, 'table.fields a[href^="/sessions/"]')[0]
        assert urllib.parse.unquote(link.get_attribute("href")).endswith(f"/sessions/{row.session_id}")


def test_another_scopes_ref_is_the_same_404_as_an_unknown_one(page: Page) -> None:
    theirs = f"session:{team_b_session(page.site)}"
    unknown = "session:team-b@claude-code-session:no-such-session"
    answers = {ref: as_reader(page.site, "a", f"/r/{ref}") for ref in (theirs, unknown)}
    assert [status for status, _, _ in answers.values()] == [404, 404]
    assert anonymous(answers[theirs][2], theirs) == anonymous(answers[unknown][2], unknown)
    with page.site.client("b") as client:
        assert client.resolve_ref(theirs).resolved  # it exists: team-b reads it
    page.sign_in("a")
    shown = {}
    for ref in (theirs, unknown):
        with page.step(f"team-a opens {ref}"):
            page.open(f"/r/{ref}")
            shown[ref] = anonymous(css(page, ".error-page")[0].text, ref)
    assert shown[theirs] == shown[unknown] and shown[theirs].startswith("404 NOT_FOUND")


def test_what_is_no_ref_is_refused_as_the_api_refuses_it(site: ReaderSite) -> None:
    status, _, body = as_reader(site, "a", "/r/sausage:12")
    assert status == 422 and "BAD_VALUE" in body


def test_a_ref_needs_a_sign_in(site: ReaderSite) -> None:
    status, headers, _ = fetch(site, "/r/session:x")
    assert status == 303 and headers["location"].startswith("/signin?next=")
