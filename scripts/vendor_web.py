"""Vendor the web reader's htmx from the npm registry at the version tools/web/package-lock.json pins.

    make vendor-web      # npm ci in tools/web, then copy dist/htmx.min.js into the package

Writes src/quarry/query/web/static/htmx.min.js and VENDORED.json (package, version, the lockfile's
registry integrity, the file's sha256 and licence); tests/contract/test_web_vendored.py checks the file
against that record, so an edit by hand or a stale copy fails the suite. Users never run this: the
file ships inside the Python package.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / "tools" / "web"
STATIC = ROOT / "src" / "quarry" / "query" / "web" / "static"


def main() -> None:
    subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=TOOLS, check=True)
    lock = json.loads((TOOLS / "package-lock.json").read_text())["packages"]["node_modules/htmx.org"]
    package = json.loads((TOOLS / "node_modules" / "htmx.org" / "package.json").read_text())
    shutil.copyfile(TOOLS / "node_modules" / "htmx.org" / "dist" / "htmx.min.js", STATIC / "htmx.min.js")
    record = {
        "htmx.min.js": {
            "package": "htmx.org",
            "version": lock["version"],
            "registry_integrity": lock["integrity"],
            "sha256": hashlib.sha256((STATIC / "htmx.min.js").read_bytes()).hexdigest(),
            "license": package["license"],
            "source": "dist/htmx.min.js of the npm package",
        }
    }
    (STATIC / "VENDORED.json").write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
