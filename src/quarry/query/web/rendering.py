"""The pages' templates.

Jinja2 with autoescaping on for every template, so session content (a message holding `<script>`, a tool
output that looks like HTML) is text on the page, never markup. The node's Content-Security-Policy
(quarry.query.response_headers) allows no inline script or style, so even markup that slipped through
could not run: the pages' behaviour lives in static/quarry.js and htmx, and charts are SVG whose sizes
are attributes, not styles.
"""

from __future__ import annotations

from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined


def environment() -> Environment:
    """The pages' templates (templates/), every one autoescaped; an undefined name fails loudly."""
    env = Environment(
        loader=PackageLoader("quarry.query.web", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["thousands"] = lambda n: f"{int(n):,}"
    return env


def render(env: Environment, template: str, **context: Any) -> str:
    return env.get_template(template).render(**context)
