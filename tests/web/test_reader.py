"""The session reader in a real browser: a compacted session's boundary and its shadowed records one click
away, a subagent opened from its parent, `?at=` scrolled to and highlighted, a failed tool call marked, a
regenerated reply's other version switched to, the next page loaded as the last one scrolls by, the
hostile session inert in the page and in its raw records, and another team's session answering exactly
as one that does not exist."""

from __future__ import annotations

import re
import urllib.parse

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

from quarry.query.web.transcript.reading import PAGE
from tests.web.conftest import Page, ReaderSite
from tests.web.hostile import SCRIPT, SESSION_ID
from tests.web.test_signin import fetch

pytestmark = pytest.mark.cluster

COMPACTED = "team-a@claude-code-session:sess-4"  # claude_code/compacted.jsonl
PARENT = "team-a@claude-code-session:sess-3"  # claude_code/delegating.jsonl
CHILD = f"{PARENT}/agent-a1b2"
HOSTILE = f"team-a@claude-code-session:{SESSION_ID}"
LONG = "team-a@claude-code-session:long-1000"  # claude_code/long.jsonl: 1,000 messages, one event each
BRANCHED = "team-a@chatgpt-export:conv-0001"  # chatgpt/conversations.json: a regenerated reply
OTHER_TEAM = "team-b@claude-code-session:sess-1"


def reader(session_id: str, query: str = "") -> str:
    return "/sessions/" + urllib.parse.quote(session_id, safe=":@") + (f"?{query}" if query else "")


def css(page: Page, selector: str) -> list[WebElement]:
    return page.driver.find_elements(By.CSS_SELECTOR, selector)


def wait(page: Page, condition: object, seconds: float = 30) -> None:
    WebDriverWait(page.driver, seconds).until(lambda _: condition())  # type: ignore[operator]


def path_of(page: Page) -> str:
    return urllib.parse.unquote(urllib.parse.urlparse(page.driver.current_url).path)


def in_view(page: Page, element: WebElement) -> bool:
    return bool(
        page.driver.execute_script(
            "const r = arguments[0].getBoundingClientRect(); return r.top >= 0 && r.bottom <= window.innerHeight;",
            element,
        )
    )


def test_a_compaction_draws_its_boundary_with_the_shadowed_records_one_click_away(page: Page) -> None:
    page.sign_in("a", then=reader(COMPACTED))
    with page.step("the boundary stands before the summary, the current messages show"):
        boundary = css(page, ".boundary")[0]
        assert "#7" in boundary.text and "5 records" in boundary.text
        summary = page.driver.find_element(By.ID, "event-7")
        assert "continued from a previous conversation" in summary.text and summary.is_displayed()
        assert page.driver.find_element(By.ID, "event-9").text.count("Now add a regression test") == 1
    with page.step("the shadowed records are folded"):
        run = css(page, "details.shadowed")[0]
        first = page.driver.find_element(By.ID, "event-0")
        assert run.get_attribute("open") is None and not first.is_displayed()
        assert "replaced" in run.find_element(By.TAG_NAME, "summary").text
    with page.step("one click shows them"):
        run.find_element(By.TAG_NAME, "summary").click()
        wait(page, first.is_displayed)
        assert "Refactor the retry loop in db/pool.py" in first.text
        assert "shadowed" in first.get_attribute("class")
    with page.step("a link to a shadowed record opens its run"):
        page.open(reader(COMPACTED, "event=3"))
        target = page.driver.find_element(By.ID, "event-3")
        assert target.is_displayed() and "matched" in target.get_attribute("class")
        assert "3 passed in 0.2s" in target.get_attribute("textContent")


def test_a_subagent_opens_from_its_parent_and_links_back(page: Page) -> None:
    page.sign_in("a", then=reader(PARENT))
    with page.step("the parent lists its subagent"):
        child = css(page, ".lineage a.child")
        assert len(child) == 1
    with page.step("open the subagent"):
        child[0].click()
        wait(
            page,
            lambda: urllib.parse.unquote(urllib.parse.urlparse(page.driver.current_url).path) == f"/sessions/{CHILD}",
        )
        assert "List every caller of acquire() in db/" in page.driver.find_element(By.ID, "event-0").text
    with page.step("the subagent links back to its parent"):
        parent = css(page, ".lineage a.parent")[0]
        assert urllib.parse.unquote(parent.get_attribute("href")).endswith(f"/sessions/{PARENT}")
        assert not css(page, ".resume")  # a subagent resumes through its parent


def test_at_opens_the_page_holding_the_message_scrolled_to_it_and_highlighted(page: Page) -> None:
    page.sign_in("a", then=reader(LONG))
    with page.step("open message 731 of a 1,000-message session"):
        page.open(reader(LONG, "at=731"))
        assert page.driver.current_url.endswith(f"?from={731 // PAGE * PAGE}&event=731#event-731")
        target = page.driver.find_element(By.ID, "event-731")
        assert "matched" in target.get_attribute("class") and "Bucket 365 audited." in target.text
        assert in_view(page, target)
        assert len(css(page, ".matched")) == 1
    with page.step("the page is the one holding it, with a way back"):
        seqs = [int(a.get_attribute("data-seq")) for a in css(page, "article.event")]
        assert seqs[0] == 600 and max(seqs) < 800
        assert "from=400" in css(page, ".pager a")[0].get_attribute("href")
    with page.step("a message that is not its event's number: the summary of a compacted session"):
        page.open(reader(COMPACTED, "at=5"))  # message m5 is event 7
        assert page.driver.current_url.endswith("#event-7")
        assert "matched" in page.driver.find_element(By.ID, "event-7").get_attribute("class")


def test_a_failed_tool_call_is_marked(page: Page) -> None:
    page.sign_in("a", then=reader(PARENT))
    with page.step("the Edit that failed: its call and its result"):
        result = page.driver.find_element(By.ID, "event-9")
        assert "error" in result.get_attribute("class").split()
        details = result.find_element(By.CSS_SELECTOR, "details.tool.result.error")
        assert "failed" in details.find_element(By.TAG_NAME, "summary").text
        call = page.driver.find_element(By.ID, "event-8").find_element(By.CSS_SELECTOR, "details.tool.call")
        assert "error" in call.get_attribute("class").split() and "failed" in call.text
    with page.step("unfold the result: its output"):
        details.find_element(By.TAG_NAME, "summary").click()
        wait(page, lambda: "String to replace not found" in details.text)
    with page.step("a tool call that worked is not marked"):
        ok = page.driver.find_element(By.ID, "event-11")
        assert "error" not in ok.get_attribute("class").split() and "ok" in ok.text


def test_a_regenerated_reply_switches_to_the_version_it_replaced(page: Page) -> None:
    page.sign_in("a", then=reader(BRANCHED))
    fork = css(page, ".fork")[0]
    now, other = fork.find_element(By.CSS_SELECTOR, ".branch.now"), fork.find_element(By.CSS_SELECTOR, ".branch.other")
    with page.step("the current version shows, the replaced one is hidden"):
        assert now.is_displayed() and not other.is_displayed()
    with page.step("switch to the replaced version"):
        fork.find_element(By.CSS_SELECTOR, "label[for$='-other']").click()
        wait(page, other.is_displayed)
        assert "I cannot read images yet." in other.text and not now.is_displayed()
    with page.step("and back"):
        fork.find_element(By.CSS_SELECTOR, "label[for$='-now']").click()
        wait(page, now.is_displayed)


def test_the_resume_button_copies_the_agents_own_command(page: Page) -> None:
    page.sign_in("a", then=reader(COMPACTED))
    with page.step("Claude Code: claude --resume, from the session's directory"):
        button = css(page, ".resume button[data-copy]")[0]
        assert button.get_attribute("data-copy") == "cd /home/dev/projects/quarry && claude --resume sess-4"
    with page.step("Codex: codex resume"):
        page.open(reader("team-a@codex-session:0199aaaa-bbbb-7ccc-8ddd-eeeeffff0001"))
        command = css(page, ".resume button[data-copy]")[0].get_attribute("data-copy")
        assert command.endswith("&& codex resume 0199aaaa-bbbb-7ccc-8ddd-eeeeffff0001")
    with page.step("ChatGPT has none"):
        page.open(reader(BRANCHED))
        assert not css(page, ".resume")


def test_the_next_page_loads_as_the_last_one_scrolls_by(page: Page) -> None:
    page.sign_in("a", then=reader(LONG))
    with page.step("the first page holds one page of events and a plain link to the next"):
        assert len(css(page, "article.event")) == PAGE
        link = css(page, ".more a")[0]
        assert link.get_attribute("href").endswith(f"?from={PAGE}")
    with page.step("scroll to the end: htmx appends the next page"):
        page.driver.execute_script("document.querySelector('.more').scrollIntoView()")
        wait(page, lambda: css(page, f"#event-{PAGE}"))
        assert len(css(page, "article.event")) == 2 * PAGE
        assert "Checkpoint 100" in page.driver.find_element(By.ID, f"event-{PAGE}").text
    with page.step("without script, the link opens the next page"):
        page.open(reader(LONG, f"from={PAGE}"))
        assert css(page, "article.event")[0].get_attribute("data-seq") == str(PAGE)


def test_the_first_page_of_a_long_session_holds_one_page_of_events(site: ReaderSite) -> None:
    status, _, body = fetch(site, reader(LONG), authorization=f"Bearer {site.tokens['a']}")
    assert status == 200
    seqs = [int(seq) for seq in re.findall(r'<article class="event[^"]*" id="event-(\d+)"', body)]
    assert seqs == list(range(PAGE))
    assert f'hx-get="{reader(LONG)}/events?from={PAGE}"' in body


def test_the_hostile_session_stays_text_in_the_reader_and_its_raw_records(page: Page) -> None:
    page.sign_in("a", then=reader(HOSTILE))
    with page.step("the page shows the markup as text, and nothing ran"):
        assert SCRIPT in page.driver.find_element(By.ID, "event-0").text
        for details in css(page, "details.tool"):
            details.find_element(By.TAG_NAME, "summary").click()
        assert page.pwned() is None
    with page.step("the raw records load as text"):
        raw = page.driver.find_element(By.ID, "event-0").find_element(By.CSS_SELECTOR, "details.raw")
        raw.find_element(By.TAG_NAME, "summary").click()
        wait(page, lambda: raw.find_elements(By.CSS_SELECTOR, ".raw-record pre"))
        assert "<script>window.pwned" in raw.find_element(By.CSS_SELECTOR, ".raw-record pre").text
        assert page.pwned() is None
    with page.step("the raw record's own page too"):
        page.open(reader(HOSTILE) + "/events/2/raw")
        assert "javascript:window.pwned" in page.driver.find_element(By.CSS_SELECTOR, ".raw-record pre").text
        assert page.pwned() is None


def test_another_teams_session_answers_as_an_unknown_one(site: ReaderSite) -> None:
    unknown = "team-b@claude-code-session:no-such-session"
    bearer = {"authorization": f"Bearer {site.tokens['a']}"}
    for suffix, headers in (
        ("", {}),
        ("?from=0", {}),
        ("?at=0", {}),
        ("/events?from=0", {"hx-request": "true"}),
        ("/events/0/raw", {}),
        ("/events/0/raw", {"hx-request": "true"}),
        ("/export.html", {}),
        ("/export.md?redact=false", {}),
    ):
        theirs = fetch(site, reader(OTHER_TEAM) + suffix, **bearer, **headers)
        missing = fetch(site, reader(unknown) + suffix, **bearer, **headers)
        assert theirs[0] == missing[0] == 404, suffix
        assert theirs[2].replace(OTHER_TEAM, "ID") == missing[2].replace(unknown, "ID"), suffix
    status, _, body = fetch(site, reader(OTHER_TEAM, "from=0&event=0"), **bearer)
    assert status == 404 and "sess-1" in body and "Read the pool module" not in body


def test_a_bad_position_is_refused_with_its_parameter(site: ReaderSite) -> None:
    bearer = {"authorization": f"Bearer {site.tokens['a']}"}
    status, _, body = fetch(site, reader(COMPACTED, "from=-1"), **bearer)
    assert status == 400 and "from must be an event number" in body
    status, _, body = fetch(site, reader(COMPACTED, "at=99999"), **bearer)
    assert status == 404 and "has no message 99999" in body
    status, _, body = fetch(site, reader(COMPACTED, "from=5000"), **bearer)
    assert status == 404
    status, _, body = fetch(site, "/sessions/claude-code-session:%3Cscript%3Ealert(1)%3C%2Fscript%3E", **bearer)
    assert status == 404 and "&lt;script&gt;alert(1)" in body and "<script>alert" not in body
    status, _, body = fetch(site, reader(COMPACTED) + "/events/99999999999/raw", **bearer)
    assert status == 400 and "seq must be an event number" in body
    status, _, body = fetch(site, reader(COMPACTED) + "/events/0/raw?through=5000", **bearer)
    assert status == 400 and "through must be 0..1000" in body
