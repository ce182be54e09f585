"""The web reader's tests: one cluster with tokens for two teams and the HTTP server, and a real browser
(Debian's chromium driven by chromium-driver through Selenium).

team-a's archive holds the test fixtures a person reads (a compacted Claude Code session, a parent that
delegates to a subagent, sidechains, a Codex rollout, a session with hostile content); team-b's holds a
session team-a must not see. Tests that drive the browser skip with a reason where chromium or
chromium-driver is not installed (`apt install chromium chromium-driver`; CI installs both). A failing
step saves a screenshot under test-artifacts/screenshots/.
"""

from __future__ import annotations

import os
import re
import shutil
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

from quarry.client.client import QuarryClient
from tests.cluster.token_cluster import TokenCluster, token_cluster
from tests.web.browser import MISSING, open_browser
from tests.web.hostile import write_hostile_session

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SCREENSHOTS = Path(__file__).resolve().parent.parent.parent / "test-artifacts" / "screenshots"
TEAM_A_FILES = [
    "claude_code/compacted.jsonl",
    "claude_code/session.jsonl",
    "claude_code/delegating.jsonl",
    "claude_code/delegating",
    "claude_code/sidechains.jsonl",
    "codex/rollout.jsonl",
    "claude_code/long.jsonl",
    "chatgpt/conversations.json",
]


GRANTS = {
    "a": {"team-a": ["read", "write"]},
    "b": {"team-b": ["read", "write"]},
    "a-read": {"team-a": ["read"]},
    "operator": {"team-a": ["admin"], "team-b": ["admin"]},  # reads the server's folders (ingest_paths)
}


@dataclass
class ReaderSite:
    """The cluster behind the pages: `base` is the HTTP server's root URL; tokens by team."""

    cluster: TokenCluster
    base: str
    tokens: dict[str, str]

    def client(self, who: str) -> QuarryClient:
        return self.cluster.client(who)


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReaderSite]:
    base = tmp_path_factory.mktemp("web")
    home, root = base / "home", base / "roots"
    for team in ("a", "b"):
        (root / team).mkdir(parents=True)
    for name in TEAM_A_FILES:
        source = FIXTURES / name
        copy = shutil.copytree if source.is_dir() else shutil.copyfile
        copy(source, root / "a" / Path(name).name)
    write_hostile_session(root / "a")
    shutil.copyfile(FIXTURES / "claude_code" / "session.jsonl", root / "b" / "session.jsonl")
    with token_cluster(home, GRANTS, ingest_roots=[root]) as cluster:
        running = ReaderSite(cluster, cluster.http, cluster.tokens)
        with running.client("operator") as client:
            for team in ("a", "b"):
                progress = list(client.ingest_paths([root / team], scope=f"team-{team}"))
                assert progress[-1].report.sessions_written > 0
        yield running


@pytest.fixture(scope="session")
def driver() -> Iterator[WebDriver]:
    browser = open_browser()
    if browser is None:
        if os.environ.get("QUARRY_REQUIRE_BROWSER"):  # CI: the browser tests must run
            pytest.fail(MISSING)
        pytest.skip(MISSING)
    try:
        yield browser
    finally:
        browser.quit()


@dataclass
class Page:
    """The browser on the reader, for one test: `step` names what the test does, and saves a screenshot
    when it fails."""

    driver: WebDriver
    site: ReaderSite
    test: str
    steps: list[str] = field(default_factory=list)

    def open(self, path: str) -> None:
        self.driver.get(self.site.base + path)

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        self.steps.append(name)
        try:
            yield
        except BaseException:
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            slug = re.sub(r"[^a-z0-9]+", "-", f"{self.test} {name}".lower()).strip("-")
            self.driver.save_screenshot(str(SCREENSHOTS / f"{slug}.png"))
            raise

    def sign_in(self, who: str, then: str = "/") -> None:
        with self.step(f"sign in as {who}"):
            self.open("/signin?" + urllib.parse.urlencode({"next": then}))
            self.driver.find_element(By.NAME, "token").send_keys(self.site.tokens[who])
            submit = self.driver.find_element(By.CSS_SELECTOR, ".signin button[type=submit]")
            submit.click()
            # the click returns before the form's POST has answered: wait until the form's page is gone
            # (`then` may be the sign-in page itself), then for the page it goes to
            WebDriverWait(self.driver, 30).until(lambda _: left_the_page(submit))
            WebDriverWait(self.driver, 30).until(lambda d: urllib.parse.urlparse(d.current_url).path == then)

    def pwned(self) -> object:
        """What a hostile session's script would have set, had any run (None: nothing ran)."""
        return self.driver.execute_script("return window.pwned")


def left_the_page(element: WebElement) -> bool:
    """Whether the page holding `element` was replaced: the element is stale, or (mid-navigation, in
    chromedriver) no longer in any document."""
    try:
        element.is_enabled()
    except WebDriverException:
        return True
    return False


@pytest.fixture
def page(driver: WebDriver, site: ReaderSite, request: pytest.FixtureRequest) -> Iterator[Page]:
    driver.delete_all_cookies()
    yield Page(driver, site, request.node.name)
