"""Paths as the agents wrote them, read on any machine: a log written on Windows names its folders with
backslashes and a drive (`c:\\Users\\me\\app`), one written on Linux or macOS with slashes, and Quarry
may read either anywhere. Every parser takes a folder's name (the session's repo) from here."""

from __future__ import annotations

import ntpath


def folder_name(path: str) -> str:
    """The last name of a folder path written on any OS: `c:\\Users\\me\\app\\` and `/home/me/app/` are `app`
    (both separators split, trailing ones ignored; a drive alone, `c:\\`, has no name)."""
    return ntpath.basename(path.rstrip("/\\"))
