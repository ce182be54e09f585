"""A headless chromium driven by chromium-driver (Debian's packages), for the web tests and bench/web.py."""

from __future__ import annotations

import os
import shutil

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.webdriver import WebDriver

MISSING = "chromium and chromium-driver are not installed (apt install chromium chromium-driver)"


def browser_paths() -> tuple[str, str] | None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver") or shutil.which("chromium-driver")
    return (browser, driver) if browser and driver else None


def open_browser(width: int = 1400, height: int = 1000) -> WebDriver | None:
    """The browser, or None where it is not installed. Offline: the driver is the installed one, so
    Selenium Manager never downloads anything."""
    paths = browser_paths()
    if paths is None:
        return None
    os.environ.setdefault("SE_AVOID_STATS", "true")
    options = webdriver.ChromeOptions()
    options.binary_location = paths[0]
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", f"--window-size={width},{height}"):
        options.add_argument(argument)
    browser = webdriver.Chrome(options=options, service=Service(executable_path=paths[1]))
    browser.set_page_load_timeout(60)
    return browser
