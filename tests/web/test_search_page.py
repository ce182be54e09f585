"""The search page in a real browser: hits with marked snippets and reader links, facets that narrow the
query and its counts, a refused query's caret, the next page by cursor, why a page is empty, htmx
swapping in place, and the hostile session's text kept inert. Every figure is checked against the same
call made over gRPC."""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable

import pytest
from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

from quarry.client.client import QuarryClient
from tests.web.conftest import Page, ReaderSite
from tests.web.hostile import MARKER
from tests.web.test_signin import fetch

pytestmark = pytest.mark.cluster


def css(page: Page, selector: str) -> list[WebElement]:
    return page.driver.find_elements(By.CSS_SELECTOR, selector)


def shown_facets(page: Page, family: str) -> dict[str, int]:
    """The sidebar's values of a family and their counts, as the page shows them."""
    links = css(page, f'.facets ul[data-family="{family}"] a')
    return {a.get_attribute("data-value"): int(a.find_element(By.CSS_SELECTOR, ".count").text) for a in links}


def query_of(page: Page) -> str:
    return urllib.parse.parse_qs(urllib.parse.urlparse(page.driver.current_url).query).get("q", [""])[0]


def wait(page: Page, condition: Callable[[], object]) -> None:
    """Until `condition()` holds (30 s), reading past elements that a swap replaced meanwhile."""
    waiting = WebDriverWait(page.driver, 30, ignored_exceptions=[StaleElementReferenceException])
    waiting.until(lambda _: condition())


def first_event(client: QuarryClient, session_id: str, message_id: str) -> int:
    """The seq of the first event of the session that became the message (the reader's `at`)."""
    _, events = client.sessions.read(session_id)
    return min(event.seq for event in events if event.message_id == message_id)


def no_alert(page: Page) -> bool:
    try:
        page.driver.switch_to.alert.dismiss()
    except NoAlertPresentException:
        return True
    return False


def test_the_search_page_needs_a_sign_in(site: ReaderSite) -> None:
    status, headers, _ = fetch(site, "/?q=pool")
    assert status == 303 and headers["location"] == "/signin?next=%2F%3Fq%3Dpool"


def test_a_search_shows_its_hits_marked_and_linked_to_the_reader(page: Page) -> None:
    page.sign_in("a", then="/")
    with page.step("search for a word of the Codex rollout"):
        box = page.driver.find_element(By.ID, "q")
        box.send_keys("failure", Keys.ENTER)
        wait(page, lambda: query_of(page) == "failure" and css(page, ".hit"))
    with page.step("the hits are the API's, in its order, their matched words marked"):
        with page.site.client("a") as client:
            envelope = client.search("failure")
            expected = envelope.hits[0]
            seq = first_event(client, expected.session.id, expected.match.message_id)
        hits = css(page, ".hit")
        assert [h.get_attribute("data-session") for h in hits] == [h.session.id for h in envelope.hits]
        link = hits[0].find_element(By.CSS_SELECTOR, "h2 a")
        assert link.text == (expected.session.title or expected.session.id)
        marks = [m.text.lower() for m in hits[0].find_elements(By.CSS_SELECTOR, ".snippet mark")]
        assert marks and all(m.startswith("fail") for m in marks)
    with page.step("a hit opens the reader at its matched message, highlighted"):
        assert urllib.parse.unquote(link.get_attribute("href")).endswith(
            f"/sessions/{expected.session.id}?at={expected.match.message_id.rsplit(':m', 1)[1]}"
        )
        link.click()
        wait(page, lambda: [e.get_attribute("id") for e in css(page, ".event.matched")] == [f"event-{seq}"])
        assert urllib.parse.unquote(urllib.parse.urlparse(page.driver.current_url).path) == (
            f"/sessions/{expected.session.id}"
        )


def test_a_facet_narrows_the_query_and_its_counts(page: Page) -> None:
    page.sign_in("a", then="/")
    with page.site.client("a") as client:
        everything = client.facets(families=["origins"])
        narrowed = client.facets("origin:codex-session", families=["origins", "repos"])
        codex_hits = client.search("origin:codex-session").hits
    with page.step("the sidebar counts the whole archive (loaded after the hits)"):
        counts = {v.value: v.count for v in getattr(everything, "global").families[0].values}
        wait(page, lambda: shown_facets(page, "origins") == counts)
        assert counts["codex-session"] < sum(counts.values())
    with page.step("click codex-session"):
        css(page, '.facets ul[data-family="origins"] a[data-value="codex-session"]')[0].click()
        wait(page, lambda: query_of(page) == "origin:codex-session")
        wait(page, lambda: len(css(page, ".hit")) == len(codex_hits))
    with page.step("the box holds the narrowed query and the counts are its sessions'"):
        assert page.driver.find_element(By.ID, "q").get_attribute("value") == "origin:codex-session"
        wait(page, lambda: shown_facets(page, "origins") == {"codex-session": narrowed.scoped.total_sessions})
        repos = {v.value: v.count for f in narrowed.scoped.families if f.family == "repos" for v in f.values}
        assert shown_facets(page, "repos") == repos
        assert css(page, ".facets .total")[0].text.startswith(f"{narrowed.scoped.total_sessions} session")
    with page.step("clicking it again removes the filter"):
        css(page, '.facets a[data-value="codex-session"].active')[0].click()
        wait(page, lambda: query_of(page) == "")
        wait(page, lambda: shown_facets(page, "origins") == counts)


def test_a_refused_query_shows_a_caret_under_the_offending_part(page: Page) -> None:
    query = "sessions where origin:codex-session repo:quarry"
    page.sign_in("a")
    page.open("/?" + urllib.parse.urlencode({"q": query}))
    with page.step("the error, the query echoed, and the caret under `repo:`"):
        error = css(page, ".query-error")[0]
        assert error.find_element(By.CSS_SELECTOR, ".code").text == "INVALID_QUERY"
        assert error.find_element(By.CSS_SELECTOR, ".line").text == query
        at = error.find_element(By.CSS_SELECTOR, ".at")
        caret = error.find_element(By.CSS_SELECTOR, ".caret")
        assert at.text == "repo:" and caret.text == "^^^^^"
        assert abs(at.rect["x"] - caret.rect["x"]) < 1 and abs(at.rect["width"] - caret.rect["width"]) < 1
        assert caret.rect["y"] > at.rect["y"]
    with page.step("the correction runs the corrected query"):
        error.find_element(By.CSS_SELECTOR, ".correction a").click()
        corrected = "sessions where origin:codex-session AND repo:quarry"
        wait(page, lambda: query_of(page) == corrected)
        assert not css(page, ".query-error") and css(page, ".hit")


def test_a_refused_query_answers_with_the_api_status(site: ReaderSite) -> None:
    status, _, body = fetch(site, "/?q=reop:ledger", authorization=f"Bearer {site.tokens['a']}")
    assert status == 422 and "UNKNOWN_FIELD" in body and 'class="at">reop' in body
    assert 'href="/?q=repo%3Aledger"' in body  # the correction, a link that runs it


def test_a_unit_query_is_sent_to_the_units_console(site: ReaderSite) -> None:
    query = "actions where is_error:true"
    token = f"Bearer {site.tokens['a']}"
    status, _, body = fetch(site, "/?" + urllib.parse.urlencode({"q": query}), authorization=token)
    assert status == 422 and "UNSUPPORTED_FORM" in body
    assert f'href="/units?{urllib.parse.urlencode({"q": query})}"' in body


def test_the_next_page_follows_the_cursor(page: Page) -> None:
    with page.site.client("a") as client:
        first = client.search("", limit=2)
        second = client.search("", limit=2, cursor=first.next_cursor)
    page.sign_in("a")
    page.open("/?limit=2")
    with page.step("page one"):
        assert [h.get_attribute("data-session") for h in css(page, ".hit")] == [h.session.id for h in first.hits]
    with page.step("next page"):
        css(page, ".pager a.next")[0].click()
        wait(page, lambda: "cursor=" in page.driver.current_url)
        expected = [h.session.id for h in second.hits]
        wait(page, lambda: [h.get_attribute("data-session") for h in css(page, ".hit")] == expected)
        assert [h.text for h in css(page, ".hit .rank")] == ["#3", "#4"]


def test_an_empty_page_says_why(page: Page) -> None:
    query = "origin:cursor-session"
    with page.site.client("a") as client:
        caveats = list(client.search(query).caveats)
    page.sign_in("a")
    page.open("/?" + urllib.parse.urlencode({"q": query}))
    with page.step("nothing found, with the envelope's caveats"):
        assert caveats
        assert not css(page, ".hit")
        assert [li.text for li in css(page, ".caveats li")] == caveats


def test_htmx_swaps_the_results_in_place_and_pushes_the_url(page: Page) -> None:
    page.sign_in("a", then="/")
    with page.step("search without leaving the page"):
        page.driver.execute_script("window.stayed = 'yes'")
        page.driver.find_element(By.ID, "q").send_keys("origin:codex-session", Keys.ENTER)
        wait(page, lambda: query_of(page) == "origin:codex-session")
        wait(page, lambda: len(css(page, ".hit")) == 1)
        assert page.driver.execute_script("return window.stayed") == "yes"  # no page load: swapped in place
    with page.step("back restores the previous results"):
        page.driver.back()
        wait(page, lambda: query_of(page) == "" and len(css(page, ".hit")) > 1)


def test_the_hostile_session_is_text_in_hits_and_facets(page: Page) -> None:
    page.sign_in("a")
    page.open("/?" + urllib.parse.urlencode({"q": MARKER}))
    with page.step("the hostile session's hit shows its markup as text"):
        hits = css(page, ".hit")
        assert hits, "the hostile session is found"
        assert "<script>" in hits[0].find_element(By.CSS_SELECTOR, "h2").text  # the title, as text
        snippet = hits[0].find_element(By.CSS_SELECTOR, ".snippet").text
        assert "<a href" in snippet or "<script>" in snippet  # the snippet, as text
        planted = ".results script, .results img, .results iframe, .results svg, .results a[href^='javascript']"
        assert not page.driver.find_elements(By.CSS_SELECTOR, planted)
        assert page.pwned() is None and no_alert(page)
    with page.step("its facets are text too"):
        wait(page, lambda: css(page, ".facets ul a"))
        assert not page.driver.find_elements(By.CSS_SELECTOR, ".facets script, .facets img")
    with page.step("narrow by a facet and stay inert"):
        css(page, ".facets ul a")[0].click()
        wait(page, lambda: query_of(page) != MARKER)
        assert page.pwned() is None and no_alert(page)


def test_the_sidebar_loads_after_the_hits_and_comes_in_the_page_without_script(site: ReaderSite) -> None:
    bearer = {"authorization": f"Bearer {site.tokens['a']}"}
    status, _, page = fetch(site, "/?q=pool", **bearer)
    assert status == 200 and 'class="hit' in page and 'data-family="origins"' not in page
    assert 'hx-get="/search/facets?q=pool"' in page and 'href="/?q=pool&amp;facets=1"' in page
    status, _, fragment = fetch(site, "/search/facets?q=pool", **bearer)
    assert status == 200 and fragment.lstrip().startswith('<aside id="facets"') and 'data-family="origins"' in fragment
    status, _, inline = fetch(site, "/?q=pool&facets=1", **bearer)
    assert status == 200 and 'data-family="origins"' in inline and 'class="hit' in inline
