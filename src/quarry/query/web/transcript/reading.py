"""Reading a session's transcript through the session API: one page of its events (the reader), or all
of them (an export).

Everything comes from the public API's messages, through a `Source`: the query node's own objects on the
web reader (as the signed-in visitor), or the SDK's gRPC calls from `quarry export`, so a transcript of a
remote cluster is the same file. A page is a ReadEvent window (full events: text, surfaces, replacement
links, the message each became), one event wider on both sides: the event before says whether the page's
first message began earlier, the event after whether a next page exists. The first current event of the
session (ListEvents, one record) tells which replacers are forks (layout.py). The messages the events
became (role, model, tokens, cost, blocks) come in the same windows (`with_messages`); the session's
lineage is TraceSession.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from quarry.core.errors import QuarryError
from quarry.query.web.transcript.header import Href, session_view
from quarry.query.web.transcript.layout import Event, Layout
from quarry.query.web.transcript.parts import Clean, keep
from quarry.query.web.transcript.view import Page
from quarry.v1 import errors_pb2, sessions_pb2, units_pb2

PAGE = 200  # events a reader page holds
WINDOW = 1000  # events one ReadEvent answers at most (docs/sessions.md#session-reads)


class Source(Protocol):
    """The calls a transcript is read with: the session API's."""

    def read_event(self, request: sessions_pb2.ReadEventRequest) -> sessions_pb2.EventWindow: ...

    def list_events(self, request: sessions_pb2.ListEventsRequest) -> sessions_pb2.EventPage: ...

    def trace_session(self, request: sessions_pb2.SessionIdRequest) -> sessions_pb2.LineageTrace: ...


@dataclass
class TranscriptReader:
    source: Source
    href: Href  # a session id -> the reader's path to it ("" in an export)
    clean: Clean = keep
    page_size: int = PAGE

    def page(self, session_id: str, start: int, matched: int | None = None) -> Page:
        """The events `start` ≤ seq < `start + page_size`, laid out. NOT_FOUND (on `seq`) when the session has
        no event `start` (but for an empty session's first page)."""
        window = self._window(session_id, start, before=1 if start else 0, after=self.page_size)
        if window is None:
            return self._empty(session_id)
        end = start + self.page_size
        events = [event for event in window.events if start <= event.seq < end]
        previous = next((event for event in window.events if event.seq == start - 1), None)
        following = any(event.seq >= end for event in window.events)
        messages = {message.id: message for message in window.messages}
        return self._laid_out(window.session, events, start, end if following else None, matched, previous, messages)

    def whole(self, session_id: str) -> Page:
        """Every event of the session, laid out as one page (an export)."""
        events: list[Event] = []
        messages: dict[str, units_pb2.Message] = {}
        session: units_pb2.Session | None = None
        start: int | None = 0
        while start is not None:
            window = self._window(session_id, start, before=0, after=WINDOW)
            if window is None:
                return self._empty(session_id)
            session = window.session
            events += [event for event in window.events if event.seq < start + WINDOW]
            messages.update((message.id, message) for message in window.messages)
            start = start + WINDOW if window.end_seq >= start + WINDOW else None
        assert session is not None
        return self._laid_out(session, events, 0, None, None, None, messages)

    def event_of_message(self, session_id: str, message_seq: int) -> int:
        """The first event of the session's message `message_seq` (its id `<session id>:m<seq>`, the seq search
        hits and message refs name). A log numbers a message no later than its first event, so the scan
        starts there and wraps around; NOT_FOUND on `at` when the session has no such message."""
        wanted = f"{session_id}:m{message_seq}"
        for window in self._windows_around(session_id, message_seq):
            found = next((event.seq for event in window.events if event.message_id == wanted), None)
            if found is not None:
                return found
        raise QuarryError(errors_pb2.NOT_FOUND, f"session {session_id} has no message {message_seq}", parameter="at")

    def _windows_around(self, session_id: str, first: int) -> Iterator[sessions_pb2.EventWindow]:
        """Windows of the log from `first` to its end, then from its start up to `first`."""
        for start, stop in ((first, None), (0, first)):
            while stop is None or start < stop:
                window = self._window(session_id, start, before=0, after=WINDOW, missing_ok=True, messages=False)
                if window is None:
                    break
                yield window
                if window.end_seq < start + WINDOW:
                    break
                start += WINDOW + 1

    def _laid_out(
        self,
        session: units_pb2.Session,
        events: list[Event],
        start: int,
        next_start: int | None,
        matched: int | None,
        previous: Event | None,
        messages: dict[str, units_pb2.Message],
    ) -> Page:
        """The events laid out with `messages` (the windows' messages, by id; the replaced events' read
        here are added to it)."""
        forks = self._forks(session.id, events)
        others = self._replaced(session.id, events, forks, messages)
        layout = Layout(messages, forks, others, self.clean, matched, previous, self.page_size)
        header = session_view(session, self._lineage(session.id), self.clean, self.href)
        end = start + self.page_size if next_start is not None else (events[-1].seq + 1 if events else start)
        return Page(header, layout.items(events), start, end, next_start, redacted=self.clean is not keep)

    def _empty(self, session_id: str) -> Page:
        listed = self.source.list_events(sessions_pb2.ListEventsRequest(session_id=session_id, limit=1))
        header = session_view(listed.session, self._lineage(session_id), self.clean, self.href)
        return Page(header, [], 0, 0, None, redacted=self.clean is not keep)

    def _window(
        self, session_id: str, seq: int, before: int, after: int, missing_ok: bool = False, messages: bool = True
    ) -> sessions_pb2.EventWindow | None:
        """The window around `seq`, with its events' messages unless not `messages`; None when the session has
        no event `seq` and that is expected (the first event of an empty session, or `missing_ok`). NOT_FOUND
        on `session_id` for a session the caller may not read, whatever else."""
        request = sessions_pb2.ReadEventRequest(
            session_id=session_id, seq=seq, before=before, after=after, with_messages=messages
        )
        try:
            return self.source.read_event(request)
        except QuarryError as error:
            if (seq == 0 or missing_ok) and error.code == errors_pb2.NOT_FOUND and error.parameter == "seq":
                return None
            raise

    def _lineage(self, session_id: str) -> sessions_pb2.LineageTrace | None:
        """The session's lineage; None when its known ancestry cycles (the page still reads)."""
        try:
            return self.source.trace_session(sessions_pb2.SessionIdRequest(session_id=session_id))
        except QuarryError as error:
            if error.code == errors_pb2.INVALID_LINEAGE:
                return None
            raise

    def _forks(self, session_id: str, events: Sequence[Event]) -> frozenset[int]:
        """The replacers these events name that are forks: some event before them is still current."""
        replacers = {event.seq for event in events if event.replaced_event_seqs}
        replacers |= {event.replaced_by for event in events if event.HasField("replaced_by")}
        if not replacers:
            return frozenset()
        current = sessions_pb2.EventFilter(surfaces=sessions_pb2.Strings(values=["current"]))
        request = sessions_pb2.ListEventsRequest(session_id=session_id, filters=[current], limit=1)
        first = self.source.list_events(request).events
        return frozenset(seq for seq in replacers if first and first[0].record.seq < seq)

    def _replaced(
        self,
        session_id: str,
        events: Sequence[Event],
        forks: frozenset[int],
        messages: dict[str, units_pb2.Message],
    ) -> dict[int, Event]:
        """The events each fork on the page replaced (the first page_size of each), read where not here
        (their messages added to `messages`)."""
        here = {event.seq: event for event in events}
        wanted: set[int] = set()
        for event in events:
            if event.seq in forks:
                wanted.update(sorted(event.replaced_event_seqs)[: self.page_size])
        missing = sorted(wanted - here.keys())
        found = {seq: here[seq] for seq in wanted if seq in here}
        for first, last in _spans(missing, WINDOW):
            window = self.source.read_event(
                sessions_pb2.ReadEventRequest(session_id=session_id, seq=first, after=last - first, with_messages=True)
            )
            found.update((event.seq, event) for event in window.events if event.seq in wanted)
            messages.update((message.id, message) for message in window.messages)
        return found


def _spans(seqs: Sequence[int], width: int) -> Iterable[tuple[int, int]]:
    """Sorted seqs cut into (first, last) spans no wider than `width`."""
    spans: list[list[int]] = []
    for seq in seqs:
        if spans and seq - spans[-1][0] <= width:
            spans[-1][1] = seq
        else:
            spans.append([seq, seq])
    return [(first, last) for first, last in spans]
