"""A transcript as Markdown, from the same view model (view.py) as the reader and the HTML export.

Prose stays Markdown (the messages' own code blocks and emphasis render), but a `<` outside code is
written `&lt;`, so a message holding HTML shows as text in any Markdown viewer rather than becoming
markup. Tool inputs and outputs are fenced code blocks whose fence is longer than any backtick run
inside them, so no output can close its block early.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from quarry.query.web.transcript.view import Aside, Boundary, Entry, Fork, Item, Page, Part, SessionView, Shadowed

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?:.+?)\1", re.DOTALL)


def transcript(page: Page) -> str:
    lines = [*_header(page.session, page.redacted), ""]
    for item in page.items:
        lines += _item(item)
    lines.append(f"_Exported from Quarry: {_code(page.session.id)}._")
    return "\n".join(lines) + "\n"


def _header(session: SessionView, redacted: bool) -> Iterator[str]:
    yield f"# {_inline(session.title)}"
    yield ""
    facts = [
        ("Session", _code(session.id)),
        ("Agent", session.origin + (f" (subagent {session.agent})" if session.agent else "")),
        ("Model", session.model),
        ("Repository", " · ".join(v for v in (session.repo, session.branch) if v)),
        ("Working directory", _code(session.cwd) if session.cwd else ""),
        ("Time", session.span),
        ("Messages", str(session.messages)),
        ("Resume", _code(session.resume) if session.resume else ""),
        ("Delegated from", ", ".join(f"{_inline(p.label)} ({_code(p.session_id)})" for p in session.parents)),
        ("Subagents", ", ".join(f"{_inline(c.label)} ({_code(c.session_id)})" for c in session.children)),
    ]
    yield from (f"- **{name}:** {value}" for name, value in facts if value)
    if redacted:
        yield ""
        yield (
            "> Redacted: secrets detect-secrets finds, email addresses and home directories are replaced by "
            "markers. Redaction is best-effort."
        )


def _item(item: Item) -> list[str]:
    if isinstance(item, Shadowed):
        replacers = ", ".join(f"#{seq}" for seq in item.replaced_by)
        head = f"> **{len(item.entries)} shadowed:** the model's context until {replacers} replaced it."
        return [head, "", *(line for entry in item.entries for line in _entry(entry, "shadowed"))]
    if isinstance(item, Boundary):
        return [
            "---",
            f"**Compaction boundary:** from #{item.seq} on, the model sees a summary instead of the "
            f"{item.replaced} records before it (shadowed, from #{item.first}).",
            "",
        ]
    if isinstance(item, Fork):
        others = [line for entry in item.others for line in _entry(entry, "a replaced version")]
        more = [f"_… and {item.more} more records of the replaced versions._", ""] if item.more else []
        return [*_entry(item.current, "this version"), *others, *more]
    if isinstance(item, Aside):
        return [f"_{len(item.seqs)} records of a version #{item.fork} replaced._", ""]
    return _entry(item.entry, "")


def _entry(entry: Entry, label: str) -> list[str]:
    facts = [entry.role, f"#{entry.seq}", entry.when, entry.model, entry.tokens and f"{entry.tokens} tokens"]
    facts += [entry.cost, label, entry.type if entry.kind == "note" else "", "error" if entry.error else ""]
    lines = ["### " + " · ".join(fact for fact in facts if fact), ""]
    if entry.continued:
        lines += ["_This message began earlier._", ""]
    for part in entry.parts:
        lines += [*_part(part), ""]
    return lines


def _part(part: Part) -> list[str]:
    if part.kind == "tool_use":
        failed = " (failed)" if part.error else ""
        return [f"**Tool call: {_inline(part.tool)}**{failed}", *_fenced(part.input or part.text, "json")]
    if part.kind == "tool_result":
        status = "failed" if part.error else "ok"
        return [f"**Result of {_inline(part.tool or 'the tool')}: {status}**", *_fenced(part.text, "text")]
    if part.kind == "thinking":
        return ["**Thinking:**", *(f"> {line}" for line in _prose(part.text).split("\n"))]
    if part.kind == "code":
        return _fenced(part.text, "")
    if part.kind == "image":
        return [f"_[an image{f' ({part.media_type})' if part.media_type else ''}, not shown]_"]
    return [_prose(part.text)]


def _fenced(text: str, info: str) -> list[str]:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + info, text, fence]


def _prose(text: str) -> str:
    """Markdown prose with `<` written `&lt;` outside fenced blocks and code spans."""
    out, fence = [], ""
    for line in text.split("\n"):
        opening = _FENCE.match(line)
        if fence:
            out.append(line)
            if opening and opening.group(1).startswith(fence):
                fence = ""
        elif opening:
            fence = opening.group(1)
            out.append(line)
        else:
            out.append(_outside_code_spans(line))
    return "\n".join(out)


def _outside_code_spans(line: str) -> str:
    parts, at = [], 0
    for span in _CODE_SPAN.finditer(line):
        parts += [line[at : span.start()].replace("<", "&lt;"), span.group(0)]
        at = span.end()
    parts.append(line[at:].replace("<", "&lt;"))
    return "".join(parts)


def _code(text: str) -> str:
    """An inline code span holding `text` whatever backticks it holds."""
    ticks = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{' '.join(text.split())}{pad}{ticks}"


def _inline(text: str) -> str:
    """One line of text for a heading or a list: no newline, no markup."""
    return " ".join(text.split()).replace("<", "&lt;")
