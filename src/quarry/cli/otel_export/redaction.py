"""The projection's redaction rule (its three classes of content, each with an opt-in: outputs, text,
paths; see quarry.cli.otel_export) and the path rewriting it applies."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

OUTPUT, TEXT, PATH = "output", "text", "path"  # what a `quarry.redacted` attribute names


@dataclass(frozen=True)
class ExportOptions:
    """What to include beyond the default projection (the redaction rule: quarry.cli.otel_export)."""

    include_outputs: bool = False
    include_paths: bool = False
    include_text: bool = False


_WINDOWS_ABSOLUTE = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")
_STOP = r"\s'\"`<>|;,()\[\]{}"
# An absolute POSIX path of two or more parts (`/etc/hosts`, not `/review` or `and/or`), a home path,
# or a Windows drive path.
_ABSOLUTE_IN_TEXT = re.compile(
    rf"(?<![\w.:/~-])(?:~(?:/[^{_STOP}/]+)+|(?:/[^{_STOP}/:]+){{2,}}/?|[A-Za-z]:\\[^{_STOP}]+)"
)


def is_absolute(path: str) -> bool:
    """A local absolute path: POSIX, home-relative (`~/…`) or Windows."""
    return path.startswith(("/", "~")) or _WINDOWS_ABSOLUTE.match(path) is not None


def relative_to(path: str, root: str) -> str | None:
    """`path` relative to `root` (`.` for the root itself), or None when it does not lie under it."""
    if not root or not is_absolute(root):
        return None
    here = posixpath.normpath(path.replace("\\", "/"))
    base = posixpath.normpath(root.replace("\\", "/")).rstrip("/")
    if not base:
        return None
    if here == base:
        return "."
    return here[len(base) + 1 :] if here.startswith(base + "/") else None


def export_path(path: str, root: str, options: ExportOptions) -> tuple[str, bool]:
    """The path as exported, and whether something was redacted: relative paths as they are; an
    absolute one as is with --include-paths, else relative to `root` when under it, else ""."""
    if not path or options.include_paths or not is_absolute(path):
        return path, False
    relative = relative_to(path, root)
    return (relative or "", True)


def scrub_paths(text: str, root: str) -> tuple[str, bool]:
    """`text` without absolute local paths: the `root` prefix cut (the root itself as `.`), any other
    absolute path replaced by `<path>`; and whether anything changed."""
    out = text
    if root and is_absolute(root) and len(root.rstrip("/\\")) > 1:
        base = re.escape(root.rstrip("/\\"))
        pattern = base + r"(?:[/\\]|(?=[" + _STOP + r":]|\.(?:\s|$)|$))"
        out = re.sub(pattern, lambda m: "" if m.group(0)[-1:] in "/\\" else ".", out)
    out = _ABSOLUTE_IN_TEXT.sub("<path>", out)
    return out, out != text


class Redactor:
    """Applies the options to one record's content, remembering what it left out."""

    def __init__(self, options: ExportOptions, root: str) -> None:
        self.options = options
        self.root = root
        self.redacted: set[str] = set()

    def text(self, value: str) -> str | None:
        """Archive text: None unless --include-text; path-scrubbed unless --include-paths."""
        return self._content(value, self.options.include_text, TEXT)

    def output(self, value: str) -> str | None:
        """A tool's output: None unless --include-outputs; path-scrubbed unless --include-paths."""
        return self._content(value, self.options.include_outputs, OUTPUT)

    def _content(self, value: str, included: bool, kind: str) -> str | None:
        if not value:
            return None
        if not included:
            self.redacted.add(kind)
            return None
        return self._paths(value)

    def path(self, value: str) -> str | None:
        exported, redacted = export_path(value, self.root, self.options)
        if redacted:
            self.redacted.add(PATH)
        return exported or None

    def name(self, value: str) -> str:
        """A short name or ref that may hold a path (an object ref, a command name)."""
        return self._paths(value) if value else value

    def _paths(self, value: str) -> str:
        if self.options.include_paths:
            return value
        scrubbed, changed = scrub_paths(value, self.root)
        if changed:
            self.redacted.add(PATH)
        return scrubbed
