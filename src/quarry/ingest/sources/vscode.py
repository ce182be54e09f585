"""File paths in what VS Code and its forks (Cursor, Copilot Chat) write: URIs as objects or as text."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlparse

from quarry.ingest.sources import as_str


def uri_path(uri: Any) -> str:
    """The file path of a VS Code URI: its object form ({fsPath, path, external}) or its text form."""
    if isinstance(uri, dict):
        return as_str(uri.get("fsPath")) or file_uri_path(as_str(uri.get("external"))) or as_str(uri.get("path"))
    return file_uri_path(uri) if isinstance(uri, str) else ""


def file_uri_path(text: str) -> str:
    """`file:///c%3A/Users/x` -> `c:/Users/x`; `file:///home/x` -> `/home/x`; other text is a path already."""
    if not text.startswith("file:"):
        return text
    path = unquote(urlparse(text).path)
    return path[1:] if len(path) > 2 and path[0] == "/" and path[2] == ":" else path
