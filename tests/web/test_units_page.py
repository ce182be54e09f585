"""The units console in a real browser: a `group by` query's chart and table hold the gRPC answer's
numbers, `agg` draws a chart per function, rows page by cursor, a refused query shows where and how to
fix it, and the hostile session's rows stay text."""

from __future__ import annotations

import urllib.parse

import pytest
from selenium.webdriver.common.by import By

from quarry.query.web.charts import BAR_WIDTH
from tests.web.conftest import Page
from tests.web.hostile import MARKER, SCRIPT
from tests.web.test_search_page import css, no_alert, query_of, wait

pytestmark = pytest.mark.cluster


def units(query: str, **params: str | int) -> str:
    return "/units?" + urllib.parse.urlencode({"q": query, **params})


def chart_bars(page: Page, title: str) -> list[tuple[str, str, int]]:
    """(key, value as written, bar width) of each bar of the chart titled `title`."""
    chart = css(page, f'figure.chart[data-chart="{title}"]')[0]
    bars = chart.find_elements(By.CSS_SELECTOR, "g.bar")
    return [
        (
            bar.get_attribute("data-key"),
            bar.find_element(By.CSS_SELECTOR, "text.value").text,
            int(bar.find_element(By.CSS_SELECTOR, "rect").get_attribute("width")),
        )
        for bar in bars
    ]


def figure(text: str) -> float:
    """A number as a page writes it (`1,234`, `$0.0150`)."""
    return float(text.replace(",", "").removeprefix("$"))


def table_rows(page: Page) -> list[list[str]]:
    return [[td.text for td in tr.find_elements(By.TAG_NAME, "td")] for tr in css(page, ".units-table tbody tr")]


def test_a_group_by_query_draws_the_grpc_answer(page: Page) -> None:
    query = "messages where role:assistant | group by session.origin | count"
    with page.site.client("a") as client:
        groups = client.query_units(query).groups
    assert len(groups) >= 2
    page.sign_in("a", then="/units")
    with page.step("run the query from the box"):
        box = page.driver.find_element(By.ID, "q")
        box.send_keys(query)
        page.driver.find_element(By.CSS_SELECTOR, ".searchbox button").click()
        wait(page, lambda: query_of(page) == query and css(page, "figure.chart"))
    with page.step("one bar per group, its number the gRPC count, its width in proportion"):
        largest = max(g.count for g in groups)
        expected = [(g.key, f"{g.count:,}", round(BAR_WIDTH * g.count / largest)) for g in groups]
        assert chart_bars(page, "count by session.origin") == expected
        assert table_rows(page) == [[g.key, f"{g.count:,}"] for g in groups]


def test_agg_draws_a_chart_per_function(page: Page) -> None:
    query = "messages where role:assistant | group by session.repo | agg count, sum:output_tokens"
    with page.site.client("a") as client:
        groups = client.query_units(query).groups
    page.sign_in("a")
    page.open(units(query))
    with page.step("the count and the sum, each drawn"):
        for i, title in enumerate(("count by session.repo", "sum:output_tokens by session.repo")):
            drawn = [(key, figure(value)) for key, value, _ in chart_bars(page, title)]
            assert drawn == [(g.key, g.values[i].value) for g in groups]
        assert [th.text for th in css(page, ".units-table th")] == ["session.repo", "count", "sum:output_tokens"]


def test_rows_page_by_cursor(page: Page) -> None:
    query = "messages where role:user"
    with page.site.client("a") as client:
        first = client.query_units(query, limit=3)
        second = client.query_units(query, limit=3, cursor=first.next_cursor)
    assert first.next_cursor and second.rows
    page.sign_in("a")
    page.open(units(query, limit=3))
    with page.step("page one: the gRPC rows, each linked to its ref and session"):
        assert [r[0] for r in table_rows(page)] == [row.ref for row in first.rows]
        ref, session = (urllib.parse.unquote(a.get_attribute("href")) for a in css(page, ".units-table tbody a")[:2])
        assert ref.endswith(f"/r/{first.rows[0].ref}") and session.endswith(f"/sessions/{first.rows[0].session_id}")
    with page.step("the next page follows the cursor"):
        css(page, ".pager a.next")[0].click()
        wait(page, lambda: [r[0] for r in table_rows(page)] == [row.ref for row in second.rows])
        assert "cursor=" in page.driver.current_url


def test_a_refused_unit_query_shows_its_correction(page: Page) -> None:
    page.sign_in("a")
    page.open(units("messages where repo:quarry"))
    with page.step("UNKNOWN_FIELD, the caret under `repo`"):
        assert css(page, ".query-error .code")[0].text == "UNKNOWN_FIELD"
        at, caret = css(page, ".query-error .at")[0], css(page, ".query-error .caret")[0]
        assert at.text.startswith("repo") and abs(at.rect["x"] - caret.rect["x"]) < 1
    with page.step("the correction runs"):
        css(page, ".query-error .correction a")[0].click()
        wait(page, lambda: query_of(page) == "messages where session.repo:quarry")
        assert table_rows(page)


def test_the_hostile_rows_are_text_in_the_console(page: Page) -> None:
    page.sign_in("a")
    page.open(units(f"messages where text:{MARKER}"))
    with page.step("the rows show the attack as text, and nothing ran"):
        text = " ".join(" ".join(row) for row in table_rows(page))
        assert SCRIPT in text.replace('\\"', '"')
        assert not page.driver.find_elements(By.CSS_SELECTOR, ".units-table script, .units-table img")
        assert page.pwned() is None and no_alert(page)
    page.open(units(f"messages where text:{MARKER} | group by role | count"))
    with page.step("and so does its chart"):
        assert chart_bars(page, "count by role")
        assert page.pwned() is None and no_alert(page)
