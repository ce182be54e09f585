"""The usage page in a real browser: its figures are the Usage RPC's, and those of the aggregate unit query
it names (opened from the page in the units console); recorded and estimated cost stand apart; the chart
draws the rows; a time range narrows them; another team's scope is refused as a scope that does not exist."""

from __future__ import annotations

import urllib.parse

import pytest
from selenium.webdriver.common.by import By

from quarry.v1 import query_pb2
from tests.web.conftest import Page
from tests.web.test_search_page import css, wait
from tests.web.test_signin import fetch
from tests.web.test_units_page import chart_bars, figure, table_rows

pytestmark = pytest.mark.cluster

# UsageFigures field -> the `agg` value of the report's unit queries it is
FROM_AGG = {
    "messages": "count",
    "sessions": "sessions",
    "input_tokens": "sum:input_tokens",
    "output_tokens": "sum:output_tokens",
    "cache_read_tokens": "sum:cache_read_tokens",
    "cache_write_tokens": "sum:cache_write_tokens",
    "recorded_cost_usd": "sum:cost_usd",
}


def shown_rows(page: Page) -> dict[str, dict[str, float]]:
    """The table's rows by key ("total" for the total), each figure by its UsageFigures name."""
    return {
        tr.get_attribute("data-key"): {
            td.get_attribute("data-figure"): figure(td.text) for td in tr.find_elements(By.CSS_SELECTOR, "td")
        }
        for tr in css(page, ".usage-table tbody tr")
    }


def figures_of(report_figures: query_pb2.UsageFigures) -> dict[str, float]:
    return {name: round(float(getattr(report_figures, name)), 4) for name in FROM_AGG | {"estimated_cost_usd": ""}}


def test_the_figures_are_the_reports_and_its_unit_querys(page: Page) -> None:
    with page.site.client("a") as client:
        report = client.usage(by="model")
    assert report.rows and report.total.messages > 0
    page.sign_in("a", then="/usage")
    with page.step("the table is the Usage RPC's report, row by row and in total"):
        shown = shown_rows(page)
        expected = {row.key: figures_of(row.figures) for row in report.rows} | {"total": figures_of(report.total)}
        assert {key: {n: shown[key][n] for n in FROM_AGG | {"estimated_cost_usd": ""}} for key in shown} == expected
        headers = [th.text for th in css(page, ".usage-table thead th")]
        assert "recorded cost" in headers and "estimated cost" in headers
    with page.step("the chart draws each row's replies"):
        drawn = [(key, figure(value)) for key, value, _ in chart_bars(page, "replies by model")]
        assert drawn == [(row.key, row.figures.messages) for row in report.rows]
    with page.step("the rows' unit query opens in the units console with the same numbers"):
        links = css(page, ".usage-queries a")
        assert [a.text for a in links] == list(report.unit_queries)
        rows_query = report.unit_queries[1]
        links[1].click()
        wait(page, lambda: urllib.parse.urlparse(page.driver.current_url).path == "/units" and table_rows(page))
        columns = [th.text for th in css(page, ".units-table thead th")]
        groups = {cells[0]: dict(zip(columns[1:], map(figure, cells[1:]), strict=True)) for cells in table_rows(page)}
        for key, figures in shown.items():
            if key != "total":
                assert {name: figures[name] for name in FROM_AGG} == {
                    name: round(groups[key][agg], 4) for name, agg in FROM_AGG.items()
                }, rows_query


def test_a_time_range_narrows_the_report(page: Page) -> None:
    with page.site.client("a") as client:
        everything = client.usage(by="day")
        day = everything.rows[-1].key
        narrowed = client.usage(by="day", since=day, until=day)
    assert len(everything.rows) > 1 and [row.key for row in narrowed.rows] == [day]
    page.sign_in("a", then="/usage")
    with page.step("per day, since and until one day"):
        page.driver.find_element(By.CSS_SELECTOR, '#by option[value="day"]').click()
        page.driver.find_element(By.ID, "since").send_keys(day)
        page.driver.find_element(By.ID, "until").send_keys(day)
        page.driver.find_element(By.CSS_SELECTOR, ".usage-form button").click()
        wait(page, lambda: "since=" in page.driver.current_url and set(shown_rows(page)) == {day, "total"})
        assert shown_rows(page)[day]["messages"] == narrowed.rows[0].figures.messages


def test_another_teams_scope_is_refused_as_one_that_does_not_exist(page: Page) -> None:
    token = f"Bearer {page.site.tokens['a']}"
    answers = {scope: fetch(page.site, f"/usage?scope={scope}", authorization=token) for scope in ("team-b", "team-x")}
    assert [status for status, _, _ in answers.values()] == [403, 403]
    assert answers["team-b"][2].replace("team-b", "S") == answers["team-x"][2].replace("team-x", "S")
    page.sign_in("a")
    shown = {}
    for scope in ("team-b", "team-x"):
        with page.step(f"team-a asks for {scope}"):
            page.open(f"/usage?scope={scope}")
            shown[scope] = css(page, ".query-error")[0].text.replace(scope, "S")
            assert not css(page, ".usage-table")
    assert shown["team-b"] == shown["team-x"] and "PERMISSION_DENIED" in shown["team-b"]


def test_a_bad_bound_is_shown_with_its_parameter(page: Page) -> None:
    page.sign_in("a")
    page.open("/usage?since=fortnight")
    with page.step("INVALID_REQUEST naming since"):
        error = css(page, ".query-error")[0].text
        assert "INVALID_REQUEST" in error and "since" in error
