"""A search's and a unit query's plain listing: the same characters on a terminal (rich, styled) and
anywhere else (plain text, without importing rich), whatever the titles and snippets hold."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
from rich.console import Console

from quarry.cli import render
from quarry.cli.lines import PlainLines, RichLines, on_terminal
from quarry.v1 import query_pb2, units_pb2

# What rich would take for markup, escapes or emoji codes, if the text were parsed.
AWKWARD = "[bold]not bold[/bold] \\[x] C:\\path\\ :smile: [link=http://x]y[/link] 100% done"


def search() -> query_pb2.SearchEnvelope:
    envelope = query_pb2.SearchEnvelope(query=AWKWARD, retrieval_lane="dialogue", limit=2, next_cursor="C1")
    for rank in (1, 2):
        hit = envelope.hits.add()
        hit.session.id, hit.session.title, hit.session.repo = f"codex:s{rank}", AWKWARD, "[repo]"
        hit.match.rank, hit.match.score, hit.match.score_kind, hit.match.snippet = rank, 1.5, "bm25", AWKWARD
    envelope.caveats.append(AWKWARD)
    envelope.missing.add(partition=3, reason=AWKWARD)
    return envelope


def units() -> query_pb2.QueryUnitEnvelope:
    envelope = query_pb2.QueryUnitEnvelope(query=AWKWARD, unit="actions", limit=5)
    row = envelope.rows.add(ref="action:codex:s1:4", session_id="codex:s1")
    row.action.CopyFrom(units_pb2.Action(category="shell", tool="[Bash]", command=AWKWARD, failed=True))
    return envelope


def groups() -> query_pb2.QueryUnitEnvelope:
    envelope = query_pb2.QueryUnitEnvelope(query=AWKWARD, unit="actions", aggregate=True, group_by="tool")
    envelope.groups.add(key=AWKWARD, count=12)
    envelope.groups.add(key="", count=3)
    return envelope


def agg() -> query_pb2.QueryUnitEnvelope:
    envelope = groups()
    for group, value in zip(envelope.groups, (0.25, None), strict=True):
        group.values.add(name="count", value=group.count)
        group.values.add(name="avg:is_error", value=value or 0, empty=value is None)
    return envelope


def both(draw: object, envelope: object) -> tuple[str, str]:
    plain = io.StringIO()
    draw(envelope, "plain", PlainLines(plain))  # type: ignore[operator]
    console = Console(file=io.StringIO(), width=4000, color_system=None, record=True)
    draw(envelope, "plain", RichLines(console))  # type: ignore[operator]
    return plain.getvalue(), console.export_text()


@pytest.mark.parametrize(
    ("draw", "envelope"),
    [
        (render.search_envelope, search),
        (render.unit_envelope, units),
        (render.unit_envelope, groups),
        (render.unit_envelope, agg),
    ],
)
def test_the_terminal_and_a_pipe_get_the_same_characters(draw: object, envelope: object) -> None:
    plain, styled = both(draw, envelope())  # type: ignore[operator]
    assert plain == styled
    assert AWKWARD in plain  # as written: no markup, escape or emoji code taken from the data


def test_a_search_listing_says_what_was_cut_and_how_to_go_on() -> None:
    plain, _ = both(render.search_envelope, search())
    lines = plain.splitlines()
    assert lines[0] == f"2 sessions · lane dialogue · {AWKWARD!r}"
    assert f"caveat: {AWKWARD}" in lines and f"partial: partition 3 did not answer ({AWKWARD})" in lines
    assert lines[-1].startswith("next: quarry search ") and lines[-1].endswith("--cursor C1")


def test_a_listing_to_a_pipe_imports_no_rich() -> None:
    code = (
        "import sys\n"
        "from quarry.cli import render\n"
        "from quarry.cli.lines import stdout_lines\n"
        "from quarry.v1 import query_pb2\n"
        "envelope = query_pb2.SearchEnvelope(query='x', caveats=['c'])\n"
        "envelope.hits.add().session.id = 'codex:s1'\n"
        "render.search_envelope(envelope, 'plain', stdout_lines())\n"
        "print(sorted(m for m in sys.modules if m == 'rich' or m.startswith('rich.')), file=sys.stderr)\n"
    )
    env = {"PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert "codex:s1" in done.stdout
    assert done.stderr.strip() == "[]"


def test_a_cut_listing_ends_with_the_command_for_the_next_page() -> None:
    rows = units()
    rows.has_more, rows.next_cursor, rows.limit = True, "CUR1", 5
    assert both(render.unit_envelope, rows)[0].splitlines()[-1] == (
        f"next: quarry search '{AWKWARD}' --limit 5 --cursor CUR1"
    )
    cut = groups()
    cut.has_more, cut.groups_total, cut.limit = True, 7, 2
    assert both(render.unit_envelope, cut)[0].splitlines()[-1] == (
        f"more: 7 groups, 1-2 shown; next: quarry search '{AWKWARD}' --limit 2 --offset 2"
    )


def test_force_color_styles_a_pipe_as_rich_would(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert on_terminal(io.StringIO())
    monkeypatch.delenv("FORCE_COLOR")
    assert not on_terminal(io.StringIO())


def test_agg_values_follow_each_group() -> None:
    lines = both(render.unit_envelope, agg())[0].splitlines()
    assert lines[1] == f"12  {AWKWARD}  count 12 · avg:is_error 0.25"
    assert lines[2] == " 3  (none)  count 3 · avg:is_error –"  # no row of the group has the field
