"""The assertions page: the candidates automated writers left, listed within the visitor's scopes and
judged in a real browser (htmx swapping the candidate's row in place), and the write forged over plain
HTTP as an attacker would send it: without the sign-in's CSRF token, with another sign-in's, with a
read-only token, against another team's candidate. Every outcome is checked against gRPC."""

from __future__ import annotations

import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement

from quarry.query.web.assertions import dom_id
from quarry.query.web.signin import COOKIE
from quarry.v1 import units_pb2
from tests.web.conftest import Page, ReaderSite
from tests.web.hostile import IMAGE, LINK, SCRIPT, SESSION_ID, TOOL_OUTPUT
from tests.web.test_search_page import css, no_alert, wait
from tests.web.test_signin import NoRedirect

pytestmark = pytest.mark.cluster

COMPACTED = "team-a@claude-code-session:sess-4"  # claude_code/compacted.jsonl: its message m5 is event 7
HOSTILE = f"team-a@claude-code-session:{SESSION_ID}"
OTHER_TEAM = "team-b@claude-code-session:sess-1"
HOSTILE_ID = 'pwn"><img src=x onerror="window.pwned=\'id\'">'  # a writer chooses any id it likes
UNKNOWN_ID = "0" * 32
CSRF = re.compile(r'name="csrf" value="([0-9a-f]+)"')


@dataclass(frozen=True)
class Candidates:
    """The candidates a detector left in each team's archive, by what each test does with them."""

    accept: str
    refuse: str
    forged: str
    read_only: str
    other_team: str
    hostile: str
    without_script: str


def claim(session_id: str, body: str, evidence: tuple[str, ...] = (), **fields: str) -> units_pb2.Assertion:
    return units_pb2.Assertion(
        kind="caveat",
        target_ref=f"session:{session_id}",
        body=body,
        author="detector",
        evidence_refs=evidence,
        **fields,
    )


@pytest.fixture(scope="module")
def candidates(site: ReaderSite) -> Candidates:
    """No fixture session holds a candidate (ingest writes none): a detector writes them, as one does."""
    with site.client("a") as a, site.client("b") as b:

        def write(assertion: units_pb2.Assertion) -> str:
            stored = a.write_assertion(assertion)
            assert stored.status == "candidate"
            return stored.id

        evidence = (f"message:{COMPACTED}:m5",)
        hostile = claim(HOSTILE, f"{SCRIPT} {IMAGE} {LINK}", (f"message:{HOSTILE}:m1",), id=HOSTILE_ID)
        hostile.reason = TOOL_OUTPUT
        made = Candidates(
            accept=write(claim(COMPACTED, "the compaction dropped the retry budget", evidence)),
            refuse=write(claim(COMPACTED, "the summary contradicts the first prompt")),
            forged=write(claim(COMPACTED, "nobody may judge this one without the form's token")),
            read_only=write(claim(COMPACTED, "a reader may see this, not judge it")),
            hostile=write(hostile),
            without_script=write(claim(COMPACTED, "the pool size is hard-coded")),
            other_team=b.write_assertion(claim(OTHER_TEAM, "team-b's own finding")).id,
        )
    assert made.hostile == HOSTILE_ID
    return made


def state_of(site: ReaderSite, who: str, candidate_id: str) -> str:
    """The candidate's status as gRPC ListCandidates (review) answers it to `who`; "" when not listed."""
    with site.client(who) as client:
        entries = client.list_candidates(review=True, limit=1000).entries
    return next((e.assertion.status for e in entries if e.assertion.id == candidate_id), "")


# ---- plain HTTP, as a program or an attacker sends it ----------------------------------------------


@dataclass
class Browserless:
    """A visitor over plain HTTP holding the sign-in cookie (no Origin header, as curl sends)."""

    site: ReaderSite
    cookie: str

    def send(
        self, method: str, path: str, fields: dict[str, str] | None = None, **headers: str
    ) -> tuple[int, str, str]:
        """(status, Location, body) of one request, redirects not followed."""
        data = urllib.parse.urlencode(fields).encode() if fields is not None else None
        request = urllib.request.Request(self.site.base + path, data=data, method=method)
        request.add_header("Cookie", f"{COOKIE}={self.cookie}")
        for name, value in headers.items():
            request.add_header(name, value)
        try:
            with urllib.request.build_opener(NoRedirect).open(request, timeout=60) as response:
                return response.status, response.headers.get("location", ""), response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.headers.get("location", ""), error.read().decode()

    def csrf(self) -> str:
        """The CSRF token the page puts in its forms for this sign-in."""
        status, _, body = self.send("GET", "/assertions")
        assert status == 200, body
        found = CSRF.search(body)
        assert found is not None
        return found[1]

    def judge(self, fields: dict[str, str], **headers: str) -> tuple[int, str, str]:
        return self.send("POST", "/assertions/judge", fields, **headers)


def signed_in(site: ReaderSite, who: str) -> Browserless:
    """A fresh sign-in of `who` over HTTP (POST /signin with the token as a form field)."""
    request = urllib.request.Request(
        site.base + "/signin?next=/assertions", data=urllib.parse.urlencode({"token": site.tokens[who]}).encode()
    )
    with pytest.raises(urllib.error.HTTPError) as redirect:
        urllib.request.build_opener(NoRedirect).open(request, timeout=60)
    assert redirect.value.code == 303
    cookie = redirect.value.headers["set-cookie"]
    return Browserless(site, cookie.split(";", 1)[0].removeprefix(f"{COOKIE}="))


# ---- the browser ------------------------------------------------------------------------------------


def row(page: Page, candidate_id: str) -> WebElement:
    return page.driver.find_element(By.ID, dom_id(candidate_id))


@pytest.fixture
def page_on_assertions(page: Page, candidates: Candidates) -> Iterator[Page]:
    page.sign_in("a", then="/assertions")
    yield page


# ---- listing ----------------------------------------------------------------------------------------


def test_the_page_lists_the_teams_candidates_and_not_the_other_teams(
    page_on_assertions: Page, candidates: Candidates
) -> None:
    page = page_on_assertions
    with page.step("the rows are gRPC's pending candidates for team-a, in its order"):
        with page.site.client("a") as client:
            expected = [e.assertion.id for e in client.list_candidates().entries]
        shown = [li.get_attribute("data-id") for li in css(page, ".candidate")]
        assert shown == expected and candidates.accept in shown
        assert candidates.other_team not in shown and "team-b's own finding" not in page.driver.page_source
    with page.step("a candidate shows its claim, state, target and evidence"):
        accept = row(page, candidates.accept)
        assert accept.find_element(By.CSS_SELECTOR, ".claim").text == "the compaction dropped the retry budget"
        assert accept.get_attribute("data-state") == "candidate"
        assert "awaiting judgment" in accept.find_element(By.CSS_SELECTOR, ".state-words").text
        target = accept.find_element(By.CSS_SELECTOR, ".target a")
        assert target.text == f"session:{COMPACTED}"
    with page.step("the evidence opens the reader at the message it cites"):
        link = accept.find_element(By.CSS_SELECTOR, ".evidence a")
        assert urllib.parse.unquote(link.get_attribute("href")).endswith(f"/sessions/{COMPACTED}?at=5")
        link.click()
        wait(page, lambda: css(page, "#event-7.matched"))  # m5, highlighted


def test_another_teams_target_lists_as_an_unknown_one(site: ReaderSite, candidates: Candidates) -> None:
    a = signed_in(site, "a")
    answers = [a.send("GET", f"/assertions?target_ref=session:{s}&review=1") for s in (OTHER_TEAM, f"{OTHER_TEAM}x")]
    assert [status for status, _, _ in answers] == [200, 200]
    assert all("No candidate awaits judgment or was judged about this target" in body for _, _, body in answers)
    assert state_of(site, "b", candidates.other_team) == "candidate"  # team-b sees its own


def test_a_long_list_shows_more_on_demand(site: ReaderSite, candidates: Candidates) -> None:
    a = signed_in(site, "a")
    _, _, first = a.send("GET", "/assertions?review=1&limit=2")
    assert first.count('class="candidate ') == 2
    more = re.search(r'class="more" href="([^"]+)"', first)
    assert more is not None and more[1].replace("&amp;", "&") == "/assertions?review=1&limit=4"
    _, _, second = a.send("GET", more[1].replace("&amp;", "&"))
    assert second.count('class="candidate ') == 4


def test_a_malformed_target_is_the_apis_error_under_the_filters(site: ReaderSite, candidates: Candidates) -> None:
    status, _, body = signed_in(site, "a").send("GET", "/assertions?target_ref=sausage:1")
    assert status == 422 and "BAD_VALUE" in body and "&#39;sausage:1&#39; is not a public ref" in body


# ---- judging in the browser -------------------------------------------------------------------------


def test_accepting_in_the_browser_swaps_the_row_and_grpc_agrees(
    page_on_assertions: Page, candidates: Candidates
) -> None:
    page = page_on_assertions
    with page.step("accept the candidate with a reason"):
        page.driver.execute_script("window.stillHere = 'yes'")  # gone if the page reloaded instead of swapping
        accept = row(page, candidates.accept)
        accept.find_element(By.NAME, "reason").send_keys("seen in the transcript")
        accept.find_element(By.CSS_SELECTOR, "button[value=accept]").click()
        wait(page, lambda: row(page, candidates.accept).get_attribute("data-state") == "accepted")
    with page.step("the row now says what the judgment made, in place"):
        judged = row(page, candidates.accept)
        assert page.driver.execute_script("return window.stillHere") == "yes"
        assert judged.find_element(By.CSS_SELECTOR, ".reason").text == "seen in the transcript"
        assert "active caveat" in judged.find_element(By.CSS_SELECTOR, ".created").text
        assert not judged.find_elements(By.CSS_SELECTOR, "form.judge")
    with page.step("gRPC ListCandidates agrees"):
        assert state_of(page.site, "a", candidates.accept) == "accepted"
        with page.site.client("a") as client:
            assert candidates.accept not in [e.assertion.id for e in client.list_candidates().entries]
    with page.step("the judged candidate is listed with the judged ones, closed"):
        page.open("/assertions?review=1")
        listed = row(page, candidates.accept)
        assert listed.get_attribute("data-state") == "accepted" and not listed.find_elements(By.CSS_SELECTOR, "form")


def test_a_refused_judgment_is_shown_in_its_row_and_changes_nothing(
    page_on_assertions: Page, candidates: Candidates
) -> None:
    page = page_on_assertions
    with page.step("reject without a reason"):
        row(page, candidates.refuse).find_element(By.CSS_SELECTOR, "button[value=reject]").click()
        wait(page, lambda: row(page, candidates.refuse).find_element(By.CSS_SELECTOR, ".refusal").text)
        refusal = row(page, candidates.refuse).find_element(By.CSS_SELECTOR, ".refusal").text
        assert refusal.startswith("422 BAD_VALUE") and "reject needs a reason" in refusal
        assert row(page, candidates.refuse).get_attribute("data-state") == "candidate"
        assert state_of(page.site, "a", candidates.refuse) == "candidate"
    with page.step("reject with one"):
        again = row(page, candidates.refuse)
        again.find_element(By.NAME, "reason").send_keys("the summary is right after all")
        again.find_element(By.CSS_SELECTOR, "button[value=reject]").click()
        wait(page, lambda: row(page, candidates.refuse).get_attribute("data-state") == "rejected")
        assert state_of(page.site, "a", candidates.refuse) == "rejected"


def test_hostile_text_in_a_candidate_renders_inert(page_on_assertions: Page, candidates: Candidates) -> None:
    page = page_on_assertions
    with page.step("the hostile candidate's claim and reason are text"):
        hostile = row(page, candidates.hostile)
        assert hostile.get_attribute("data-id") == HOSTILE_ID
        assert hostile.find_element(By.CSS_SELECTOR, ".claim").text == f"{SCRIPT} {IMAGE} {LINK}"
        assert hostile.find_element(By.CSS_SELECTOR, ".reason").text == TOOL_OUTPUT
        assert not hostile.find_elements(By.CSS_SELECTOR, "img, iframe, svg, script")
        assert page.pwned() is None and no_alert(page)
    with page.step("judging it (its id is hostile too) swaps in a row that is still text"):
        hostile.find_element(By.NAME, "reason").send_keys(SCRIPT)
        hostile.find_element(By.CSS_SELECTOR, "button[value=defer]").click()
        wait(page, lambda: row(page, candidates.hostile).get_attribute("data-state") == "deferred")
        assert row(page, candidates.hostile).find_element(By.CSS_SELECTOR, ".reason").text == SCRIPT
        assert page.pwned() is None and no_alert(page)
        assert state_of(page.site, "a", HOSTILE_ID) == "deferred"


# ---- forged writes over plain HTTP ------------------------------------------------------------------


def test_a_write_without_the_sign_ins_csrf_token_is_refused(site: ReaderSite, candidates: Candidates) -> None:
    a, again = signed_in(site, "a"), signed_in(site, "a")
    token, other = a.csrf(), again.csrf()
    assert token != other  # each sign-in has its own
    judgment = {"id": candidates.forged, "judgment": "defer", "reason": "forged"}
    for fields, headers in (
        (judgment, {}),  # no token at all
        ({**judgment, "csrf": "0" * 64}, {}),  # a made-up one
        ({**judgment, "csrf": other}, {}),  # another sign-in's
        (judgment, {"X-CSRF-Token": other, "HX-Request": "true"}),  # another's, as htmx sends it
    ):
        status, _, body = a.judge(fields, **headers)
        assert status == 403 and "CSRF token" in body, (fields, headers)
        assert state_of(site, "a", candidates.forged) == "candidate"
    # the same request with this sign-in's token is judged: the token is all that was missing
    status, location, _ = a.judge({**judgment, "csrf": token})
    assert status == 303 and location.startswith("/assertions?")
    assert state_of(site, "a", candidates.forged) == "deferred"
    status, _, body = a.judge({**judgment, "csrf": token})  # once judged, it cannot be judged again
    assert status == 409 and "NOT_JUDGEABLE" in body


def test_a_read_only_token_can_list_but_not_judge(page: Page, site: ReaderSite, candidates: Candidates) -> None:
    page.sign_in("a-read", then="/assertions")
    with page.step("a-read sees team-a's candidates, without the judging forms"):
        shown = [li.get_attribute("data-id") for li in css(page, ".candidate")]
        assert candidates.read_only in shown and candidates.other_team not in shown
        assert not css(page, "form.judge")
        assert "judging needs write on scope team-a" in row(page, candidates.read_only).text
    with page.step("a forged judgment, with a-read's own CSRF token, is refused"):
        reader = signed_in(site, "a-read")
        fields = {"id": candidates.read_only, "judgment": "accept", "csrf": reader.csrf()}
        status, _, body = reader.judge(fields)
        assert status == 403 and "PERMISSION_DENIED" in body and "`write`" in body
        assert state_of(site, "a", candidates.read_only) == "candidate"


def test_judging_another_teams_candidate_answers_as_an_unknown_id(site: ReaderSite, candidates: Candidates) -> None:
    a = signed_in(site, "a")
    token = a.csrf()
    answers = {}
    for candidate_id in (candidates.other_team, UNKNOWN_ID):
        status, _, body = a.judge({"id": candidate_id, "judgment": "accept", "reason": "x", "csrf": token})
        answers[candidate_id] = (status, body.replace(candidate_id, "ID"))
    assert answers[candidates.other_team] == answers[UNKNOWN_ID]
    assert answers[UNKNOWN_ID][0] == 404 and "no assertion" in answers[UNKNOWN_ID][1]
    assert state_of(site, "b", candidates.other_team) == "candidate"


def test_a_judgment_without_script_comes_back_to_the_list(site: ReaderSite, candidates: Candidates) -> None:
    a = signed_in(site, "a")
    fields = {
        "id": candidates.without_script,
        "judgment": "supersede",
        "kind": "decision",
        "body": "the pool size comes from the config file",
        "csrf": a.csrf(),
        "review": "1",
    }
    status, location, _ = a.judge(fields)
    assert status == 303
    assert urllib.parse.parse_qs(urllib.parse.urlparse(location).query) == {
        "review": ["1"],
        "judged": [candidates.without_script],
    }
    status, _, body = a.send("GET", location)
    assert status == 200 and "is now <strong>superseded</strong>" in body
    assert state_of(site, "a", candidates.without_script) == "superseded"
    with site.client("a") as client:
        active = client.query_units("assertions where status:active", limit=1000).rows
    replacement = [r.assertion for r in active if r.assertion.supersedes == candidates.without_script]
    assert [(r.kind, r.body) for r in replacement] == [("decision", "the pool size comes from the config file")]
