"""A transcript as a file: one self-contained HTML document, or Markdown.

The HTML is the reader's own templates (_session.html, _events.html, _event.html) in transcript.html,
rendered with the same autoescaping environment, so it holds exactly the messages the reader shows; its
stylesheet (static/quarry.css) is inlined, and it has no script and loads nothing (its own
Content-Security-Policy says so too), so it opens anywhere, offline, and any markup a session holds
stays text. Both formats are redacted by default (quarry.query.web.redaction, applied by the reader
that built the page).
"""

from __future__ import annotations

import re
from functools import cache
from importlib.resources import files

from jinja2 import Environment
from markupsafe import Markup

from quarry.query.web.redaction import Redactor
from quarry.query.web.rendering import environment
from quarry.query.web.transcript import markdown
from quarry.query.web.transcript.parts import keep
from quarry.query.web.transcript.reading import Source, TranscriptReader
from quarry.query.web.transcript.view import Page

FORMATS = {"html": "text/html; charset=utf-8", "md": "text/markdown; charset=utf-8"}


def exporting(source: Source, redact: bool) -> TranscriptReader:
    """The reader of a transcript to export: redacted unless `redact` is false, and linking to no other
    session (the file stands alone)."""
    return TranscriptReader(source, lambda _: "", Redactor() if redact else keep)


def transcript_html(page: Page) -> str:
    return _environment().get_template("transcript.html").render(page=page, css=_stylesheet(), reader=False, base="")


def transcript_markdown(page: Page) -> str:
    return markdown.transcript(page)


def filename(session_id: str, suffix: str) -> str:
    """A file name for a session's transcript: its id with anything but letters, digits, `.`, `_`
    and `-` turned into `-` (no path, no quote, nothing a header or a shell would read)."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", session_id).strip("-.") or "session"
    return f"{stem[:120]}.transcript.{suffix}"


@cache
def _environment() -> Environment:
    return environment()


@cache
def _stylesheet() -> Markup:
    """The reader's stylesheet, inlined: the node's own file, never session content."""
    return Markup(files("quarry.query.web").joinpath("static/quarry.css").read_text(encoding="utf-8"))
