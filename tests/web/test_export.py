"""Transcript export: the reader's download buttons and `quarry export html|markdown` over gRPC. The file
holds the messages the reader shows, is self-contained (no script, nothing fetched), is redacted unless
asked not to be, and keeps a hostile session's markup inert when a browser opens it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from typer.testing import CliRunner

from quarry.cli.main import app
from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2
from tests.web.conftest import Page, ReaderSite
from tests.web.hostile import SCRIPT, SESSION_ID
from tests.web.test_reader import COMPACTED, HOSTILE, PARENT, reader
from tests.web.test_signin import fetch

pytestmark = pytest.mark.cluster

ARTICLE = re.compile(r'<article class="event.*?</article>', re.DOTALL)
RAW = re.compile(r'<details class="raw">.*?</details>', re.DOTALL)


def get(site: ReaderSite, path: str, who: str = "a") -> tuple[int, dict[str, str], str]:
    return fetch(site, path, authorization=f"Bearer {site.tokens[who]}")


def articles(html: str) -> list[str]:
    """Each message of a page as the template rendered it, the reader's raw-record control left out."""
    return [" ".join(RAW.sub("", article).split()) for article in ARTICLE.findall(html)]


def test_the_html_export_holds_the_messages_the_reader_shows(site: ReaderSite) -> None:
    for session_id in (PARENT, COMPACTED):
        status, _, page = get(site, reader(session_id))
        assert status == 200 and "hx-get" in page
        status, headers, exported = get(site, reader(session_id) + "/export.html?redact=false")
        assert status == 200 and headers["content-type"].startswith("text/html")
        assert headers["content-disposition"].startswith("attachment; filename=")
        shown = articles(page)
        assert shown and articles(exported) == shown, session_id


def test_the_markdown_export_holds_the_same_messages(site: ReaderSite) -> None:
    _, _, page = get(site, reader(PARENT))
    _, headers, markdown = get(site, reader(PARENT) + "/export.md?redact=false")
    assert headers["content-type"].startswith("text/markdown")
    shown = [int(seq) for seq in re.findall(r'<article class="event[^"]*" id="event-(\d+)"', page)]
    exported = [int(seq) for seq in re.findall(r"^### \w+ · #(\d+)", markdown, re.MULTILINE)]
    assert exported == shown
    assert "Review the pool module and fix what you find." in markdown
    assert "**Result of Edit: failed**" in markdown


def test_the_html_export_is_one_self_contained_file(site: ReaderSite) -> None:
    _, _, html = get(site, reader(PARENT) + "/export.html")
    assert "<style>" in html and "Content-Security-Policy" in html
    for outside in ("<script", "<link", " src=", "url(", "hx-", "/static/", 'href="/'):
        assert outside not in html, outside


def test_exports_are_redacted_unless_asked_not_to_be(site: ReaderSite) -> None:
    _, _, redacted = get(site, reader(PARENT) + "/export.md")
    _, _, kept = get(site, reader(PARENT) + "/export.md?redact=false")
    assert "/home/dev" not in redacted and "~/projects/quarry/db/pool.py" in redacted
    assert "/home/dev/projects/quarry/db/pool.py" in kept
    assert "Redacted:" in redacted and "Redacted:" not in kept
    status, _, body = get(site, reader(PARENT) + "/export.md?redact=no")
    assert status == 400 and "redact must be true or false" in body


def test_the_hostile_session_stays_inert_in_its_exported_file(page: Page, tmp_path: Path) -> None:
    _, _, html = get(page.site, reader(HOSTILE) + "/export.html")
    assert "<script>window" not in html and "&lt;script&gt;window.pwned" in html
    exported = tmp_path / "hostile.html"
    exported.write_text(html, encoding="utf-8")
    with page.step("open the exported file in the browser"):
        page.driver.get(exported.as_uri())
        assert SCRIPT in page.driver.find_element(By.ID, "event-0").text
        for summary in page.driver.find_elements(By.CSS_SELECTOR, "details.tool > summary"):
            summary.click()
        assert page.pwned() is None


def test_the_download_buttons_give_the_files(page: Page) -> None:
    page.sign_in("a", then=reader(PARENT))
    with page.step("the buttons name the export routes, redacted by default"):
        links = page.driver.find_elements(By.CSS_SELECTOR, ".downloads a")
        hrefs = [link.get_attribute("href").removeprefix(page.site.base) for link in links]
        base = reader(PARENT)
        assert f"{base}/export.html" in hrefs and f"{base}/export.md" in hrefs
        assert f"{base}/export.html?redact=false" in hrefs


def test_the_cli_writes_the_transcript_over_grpc(site: ReaderSite, tmp_path: Path) -> None:
    cluster = f"grpc://{site.cluster.query}"
    environment = {"QUARRY_TOKEN": site.tokens["a"]}
    out = tmp_path / "parent.html"
    result = CliRunner().invoke(
        app, ["--cluster", cluster, "export", "html", PARENT, "--out", str(out)], env=environment
    )
    assert result.exit_code == 0, result.output
    assert f"wrote the redacted transcript of {PARENT} to" in " ".join(result.output.split())
    html = out.read_text(encoding="utf-8")
    _, _, served = get(site, reader(PARENT) + "/export.html")
    assert html == served  # the same file, read over gRPC instead of in the node
    result = CliRunner().invoke(
        app, ["--cluster", cluster, "export", "markdown", HOSTILE, "--no-redact"], env=environment
    )
    assert result.exit_code == 0, result.output
    assert "/home/dev/projects/site" in result.output and SESSION_ID in result.output
    result = CliRunner().invoke(
        app, ["--cluster", cluster, "export", "html", "team-b@claude-code-session:sess-1"], env=environment
    )
    assert isinstance(result.exception, QuarryError)  # `quarry` prints it as the API's error
    assert result.exception.code == errors_pb2.NOT_FOUND and result.exception.parameter == "session_id"
