"""A page of a session's events laid out for reading (view.py): messages, notes, folded shadowed runs,
compaction boundaries and forks.

The session API says what replaced what (docs/sessions.md#surfaces): a shadowed event's `replaced_by` names
its replacer, and the replacer's `replaced_event_seqs` what it removed. A replacer is a compaction when it
replaced everything before it (no event before it is still current): a boundary is drawn before it and the
records it shadowed fold into runs where they stand. Otherwise it is a fork, an edited or regenerated
message whose thread goes on from a point where earlier messages stay current: the versions it replaced
are shown beside it, one at a time. Which replacers are forks is decided by the reader (reading.py), which
can ask the session API about events off the page.

Events that hold nothing to read (log-only bookkeeping without text, such as a turn's settings or a token
count) are left out unless they are the event asked for; their raw records stay one click away on the
reader (`quarry sessions event`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from quarry.query.web.transcript.parts import Clean, parts_of, role_of_type, tokens_of
from quarry.query.web.transcript.view import Aside, Boundary, Entry, Fork, Item, Part, Shadowed, Single
from quarry.v1 import units_pb2

Event = units_pb2.SessionEvent


@dataclasses.dataclass
class Layout:
    """What one page's layout needs besides its events."""

    messages: Mapping[str, units_pb2.Message]
    forks: frozenset[int]
    others: Mapping[int, Event]  # every event a fork on the page replaced, on the page or not
    clean: Clean
    matched: int | None = None
    previous: Event | None = None  # the event before the page: a message it began continues here
    shown_limit: int = 0  # at most this many replaced records per fork (0: all)

    def items(self, events: Sequence[Event]) -> list[Item]:
        entries = self.entries(events)
        on_page = {seq for entry in entries for seq in entry.seqs}
        by_seq = {event.seq: event for event in events}
        items: list[Item] = []
        for entry in entries:
            event = by_seq[entry.seq]
            if event.surface == "shadowed" and event.HasField("replaced_by"):
                self._place_shadowed(items, entry, event.replaced_by, on_page)
            elif event.replaced_event_seqs and event.seq in self.forks:
                items.append(self._fork(entry, event))
            elif event.replaced_event_seqs:
                replaced = event.replaced_event_seqs
                items += [Boundary(event.seq, len(replaced), min(replaced)), Single(entry)]
            else:
                items.append(Single(entry))
        return _join_runs(items)

    def entries(self, events: Iterable[Event]) -> list[Entry]:
        """One entry per message (at its first event here) and per note, in log order."""
        entries: list[Entry] = []
        by_message: dict[str, Entry] = {}
        for event in events:
            if not _readable(event) and event.seq != self.matched:
                continue
            entry = by_message.get(event.message_id) if event.message_id else None
            if entry is not None:
                entry.seqs.append(event.seq)
            else:
                entry = self._entry(event)
                entries.append(entry)
                if event.message_id:
                    by_message[event.message_id] = entry
            entry.matched = entry.matched or event.seq == self.matched
        return _mark_failed_calls(entries)

    def _entry(self, event: Event) -> Entry:
        message = self.messages.get(event.message_id) if event.message_id else None
        text = [Part("text", self.clean(event.text))] if event.text else []
        if message is None:
            kind = "message" if event.message_id else "note"
            return Entry([event.seq], kind, role_of_type(event.type), event.type, event.surface, event.time_ms, text)
        entry = Entry(
            [event.seq],
            "message",
            message.role or role_of_type(event.type),
            event.type,
            event.surface,
            event.time_ms or message.time_ms,
            parts_of(message, self.clean) or text,
            model=message.model,
            tokens=tokens_of(message),
            cost_usd=message.cost_usd,
        )
        if self.previous is not None and self.previous.message_id == event.message_id:
            entry.continued, entry.parts = True, []
        return entry

    def _place_shadowed(self, items: list[Item], entry: Entry, replacer: int, on_page: set[int]) -> None:
        last = items[-1] if items else None
        if replacer in self.forks:
            if replacer in on_page:
                return  # shown in the fork, beside the version that replaced it
            if isinstance(last, Aside) and last.fork == replacer:
                last.seqs += entry.seqs
            else:
                items.append(Aside(list(entry.seqs), replacer))
            return
        if not isinstance(last, Shadowed):
            last = Shadowed([], [])
            items.append(last)
        last.entries.append(entry)
        last.open = last.open or entry.matched
        if replacer not in last.replaced_by:
            last.replaced_by.append(replacer)

    def _fork(self, entry: Entry, event: Event) -> Fork:
        replaced = _by_seq(self.others[seq] for seq in event.replaced_event_seqs if seq in self.others)
        shown = replaced[: self.shown_limit] if self.shown_limit else replaced
        others = Layout(self.messages, self.forks, {}, self.clean, self.matched).entries(shown)
        more = len(event.replaced_event_seqs) - len(shown)
        return Fork(entry, others, more, show_other=any(other.matched for other in others))


def _join_runs(items: list[Item]) -> list[Item]:
    """Two runs shadowed by the same replacer, with only log-only entries between them (an API error
    logged mid-conversation), become one run: the log-only records fold with the history they sit in."""
    joined: list[Item] = []
    for item in items:
        if isinstance(item, Shadowed):
            gap = _log_only_tail(joined)
            before = joined[-1 - len(gap)] if len(joined) > len(gap) else None
            if isinstance(before, Shadowed) and set(before.replaced_by) & set(item.replaced_by):
                del joined[len(joined) - len(gap) :]
                before.entries += [single.entry for single in gap] + item.entries
                before.replaced_by += [seq for seq in item.replaced_by if seq not in before.replaced_by]
                before.open = before.open or item.open or any(single.entry.matched for single in gap)
                continue
        joined.append(item)
    return joined


def _log_only_tail(items: list[Item]) -> list[Single]:
    tail: list[Single] = []
    for item in reversed(items):
        if not (isinstance(item, Single) and item.entry.surface == "log-only"):
            break
        tail.insert(0, item)
    return tail


def _readable(event: Event) -> bool:
    return bool(event.text or event.message_id)


def _by_seq(events: Iterable[Event]) -> list[Event]:
    return sorted(events, key=lambda event: event.seq)


def _mark_failed_calls(entries: list[Entry]) -> list[Entry]:
    """A tool call whose result (on the same page) failed is marked failed too."""
    failed = {p.call_id for e in entries for p in e.parts if p.kind == "tool_result" and p.error and p.call_id}
    for entry in entries:
        entry.parts = [
            dataclasses.replace(p, error=True) if p.kind == "tool_use" and p.call_id in failed else p
            for p in entry.parts
        ]
    return entries
