"""The web reader's vendored htmx is the file the npm registry serves at the pinned version, untouched.

scripts/vendor_web.py (`make vendor-web`) copies it from the package tools/web/package-lock.json pins and
records its sha256 in static/VENDORED.json; a hand edit, or a pin moved without re-vendoring, fails here.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
STATIC = ROOT / "src" / "quarry" / "query" / "web" / "static"


def test_htmx_is_the_pinned_release_byte_for_byte() -> None:
    record = json.loads((STATIC / "VENDORED.json").read_text())["htmx.min.js"]
    lock = json.loads((ROOT / "tools" / "web" / "package-lock.json").read_text())["packages"]["node_modules/htmx.org"]
    assert (record["version"], record["registry_integrity"]) == (lock["version"], lock["integrity"])
    assert hashlib.sha256((STATIC / "htmx.min.js").read_bytes()).hexdigest() == record["sha256"]


def test_no_template_holds_inline_script_or_style() -> None:
    """The Content-Security-Policy forbids inline script and style: a template that used them would
    break in the browser, silently."""
    for template in (ROOT / "src" / "quarry" / "query" / "web" / "templates").glob("*.html"):
        text = template.read_text()
        for forbidden in ("<script>", " style=", " onclick=", " onload=", " onerror=", "hx-on"):
            assert forbidden not in text, f"{template.name}: {forbidden.strip()}"
        assert "|safe" not in text.replace(" ", ""), f"{template.name}: |safe"
