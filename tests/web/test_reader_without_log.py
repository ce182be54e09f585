"""A session written through IngestSessions with its messages but no log events has no log for the reader to
lay out: its page says so and links its messages in the units console, where they are rows."""

from __future__ import annotations

import urllib.parse

import pytest
from selenium.webdriver.common.by import By

from quarry.ingest.normalize import seal_content_hash
from tests.index.sessions import Msg, session
from tests.web.conftest import Page

pytestmark = pytest.mark.cluster


def test_a_session_without_log_events_links_its_messages(page: Page) -> None:
    written = session("api-only-1", [Msg("user", "what does the api only session say"), Msg("assistant", "it says hi")])
    seal_content_hash(written)
    with page.site.client("a") as client:
        assert client.ingest_sessions([written]).sessions_written == 1  # into team-a, its one writable scope
    page.sign_in("a", then="/sessions/" + urllib.parse.quote("team-a@" + written.id, safe=""))
    with page.step("the page says there is no log and links the messages"):
        note = page.driver.find_element(By.CSS_SELECTOR, ".transcript p.muted")
        assert "without its log's events" in note.text and "2 messages" in note.text
        note.find_element(By.TAG_NAME, "a").click()
    with page.step("the units console lists the session's two messages"):
        assert urllib.parse.urlparse(page.driver.current_url).path == "/units"
        rows = page.driver.find_elements(By.CSS_SELECTOR, "table.units-table tbody tr")
        assert len(rows) == 2 and "it says hi" in rows[1].text
