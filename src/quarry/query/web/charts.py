"""Horizontal bar charts drawn on the server as SVG (templates/_chart.html), for the units console's
groups and the usage page.

The Content-Security-Policy allows no inline style, so every size is an SVG attribute computed here: one
row per bar, its key on the left, the bar's width proportional to its value (the largest value the
full width), the value written after the bar. Keys and values are text in the template (autoescaped).
A value that is not a number (an aggregate with no value) gets no bar and says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

LABEL_WIDTH = 220  # px of the keys' column
BAR_WIDTH = 460  # px of the largest bar
VALUE_WIDTH = 120  # px for the value after a bar
ROW_HEIGHT = 22
BAR_HEIGHT = 16
MAX_LABEL_CHARS = 32
MAX_BARS = 200  # a chart of more rows would be unreadable: the table beside it holds them all


@dataclass(frozen=True)
class Bar:
    key: str  # as the data names it ("" shown as "(none)")
    label: str  # the key cut to fit its column
    value: float | None
    text: str  # the value as written after the bar
    y: int
    width: int  # px; 0 for a zero or missing value
    text_x: int


@dataclass(frozen=True)
class Chart:
    title: str
    bars: list[Bar]
    width: int
    height: int
    label_width: int
    bar_height: int
    cut: int  # bars left out past MAX_BARS


def number(value: float) -> str:
    """A figure as the pages write it: whole numbers in full with thousands separators (a token sum is
    never 1.2e+06), others to six significant digits."""
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:,.6g}"


def bar_chart(title: str, rows: Sequence[tuple[str, float | None]], fmt: str = "") -> Chart:
    """The chart of (key, value) rows, in their order; `fmt` writes a value (default: `number`)."""
    shown = list(rows[:MAX_BARS])
    largest = max((v for _, v in shown if v is not None and v > 0), default=0.0)
    bars = []
    for i, (key, value) in enumerate(shown):
        width = round(BAR_WIDTH * value / largest) if value is not None and value > 0 and largest else 0
        label = key or "(none)"
        if len(label) > MAX_LABEL_CHARS:
            label = label[: MAX_LABEL_CHARS - 1] + "…"
        text = "no value" if value is None else fmt.format(value) if fmt else number(value)
        bars.append(Bar(key, label, value, text, i * ROW_HEIGHT, width, LABEL_WIDTH + width + 6))
    return Chart(
        title=title,
        bars=bars,
        width=LABEL_WIDTH + BAR_WIDTH + VALUE_WIDTH,
        height=max(1, len(bars)) * ROW_HEIGHT,
        label_width=LABEL_WIDTH,
        bar_height=BAR_HEIGHT,
        cut=len(rows) - len(shown),
    )
