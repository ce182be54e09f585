"""The transcript's view model: what the reader page and the exported files show, built from the session
API's protos (layout.py, header.py) and rendered by the templates (_event.html, _events.html, reader.html,
transcript.html) or as Markdown (markdown.py).

A page is a list of items in log order: entries (a message with its blocks as parts, or a note: an event
that became no message, such as an API error or a compaction marker), runs of shadowed entries folded
together, compaction boundaries, and forks (an edited or regenerated message with the versions it
replaced beside it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from quarry.query.web.query_box import when


@dataclass(frozen=True)
class Part:
    """One block of a message as shown: prose, code, thinking, a tool call (its input), a tool result
    (its output and whether it failed), or an image (named, never inlined)."""

    kind: str
    text: str
    tool: str = ""
    input: str = ""
    error: bool = False
    media_type: str = ""
    call_id: str = ""  # pairs a tool call with its result


@dataclass
class Entry:
    """One message (all the events it grew from: `seqs`), or a note (one event that became no message)."""

    seqs: list[int]
    kind: Literal["message", "note"]
    role: str
    type: str
    surface: str
    time_ms: int
    parts: list[Part] = field(default_factory=list)
    model: str = ""
    tokens: str = ""
    cost_usd: float = 0.0
    matched: bool = False
    continued: bool = False  # its message began on an earlier page: shown there

    @property
    def seq(self) -> int:
        return self.seqs[0]

    @property
    def error(self) -> bool:
        return any(part.error for part in self.parts) or (self.kind == "note" and "error" in self.type)

    @property
    def when(self) -> str:
        return when(self.time_ms)

    @property
    def cost(self) -> str:
        """What the source says the reply cost ("" when it recorded none)."""
        return f"${self.cost_usd:.4f}" if self.cost_usd > 0 else ""


@dataclass
class Shadowed:
    """Consecutive shadowed entries, folded: the model saw them until a compaction replaced them."""

    entries: list[Entry]
    replaced_by: list[int]
    open: bool = False  # it holds the matched event
    item: Literal["shadowed"] = "shadowed"


@dataclass
class Boundary:
    """A compaction: from `seq` on, the model sees that event instead of the `replaced` records before it."""

    seq: int
    replaced: int
    first: int  # the first record it replaced
    item: Literal["boundary"] = "boundary"


@dataclass
class Fork:
    """An edited or regenerated message (`current`) with the versions it replaced (`others`, shadowed), one
    shown at a time; `more` counts replaced records beyond what the page shows."""

    current: Entry
    others: list[Entry]
    more: int = 0
    show_other: bool = False  # the matched event is among the others
    item: Literal["fork"] = "fork"


@dataclass
class Aside:
    """Shadowed records of a fork shown elsewhere (the fork is on another page)."""

    seqs: list[int]
    fork: int
    item: Literal["aside"] = "aside"


@dataclass
class Single:
    entry: Entry
    item: Literal["entry"] = "entry"


Item = Single | Shadowed | Boundary | Fork | Aside


@dataclass(frozen=True)
class Link:
    """Another session of the lineage: its id, a label, and the reader's path to it."""

    session_id: str
    label: str
    href: str


@dataclass
class SessionView:
    """The session's header as shown above its messages."""

    id: str
    title: str
    origin: str
    agent: str
    model: str
    repo: str
    branch: str
    cwd: str
    created_ms: int
    updated_ms: int
    messages: int
    resume: str
    parents: list[Link]
    children: list[Link]
    unresolved_parent: str = ""

    @property
    def span(self) -> str:
        """When it ran: `created – updated`."""
        return " – ".join(dict.fromkeys(t for t in (when(self.created_ms), when(self.updated_ms)) if t))


@dataclass
class Page:
    """One page of a session's events (`start` ≤ seq < `end`), or the whole session (an export)."""

    session: SessionView
    items: list[Item]
    start: int
    end: int
    next_start: int | None
    redacted: bool = False
