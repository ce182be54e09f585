"""Public refs resolved on a partition (docs/search-api.md#public-refs): the object a ref names, read
from the store by its session's ordinal and its id, never searched for.

A missing object or a malformed ref is an answer, `resolved=false` with a caveat saying what was not
found, not an error. Assertion refs are not the IndexService's: AssertionService.GetAssertion answers
them (the query node asks every partition). Action refs have no payload of their own; the caveat names
the block of their tool call.

A delegation resolves to an evidence card: the delegation with its complete instruction, and four
text windows bounded by `max_chars` (default 2000), each with its truncation flag:
- dispatch_result: the text of the tool_result answering the dispatch's tool_use;
- child_excerpt: the child session's final answer (store_reads.final_text), when the child is stored;
- parent_context: the parent's text before the dispatch, which is the prose of the dispatching
  message ahead of the tool call when it has some, else the last earlier message with text;
- parent_follow_up: the parent's first assistant message with text after the result (after the
  dispatch when no result was recorded).
Log-only messages (branches the session did not take) are never context or follow-up. Every read of
one resolution runs in one read snapshot.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

from google.protobuf.message import Message as ProtoMessage

from quarry.core.errors import QuarryError
from quarry.core.public_refs import PublicRef, parse_ref
from quarry.index.lexical import visibility
from quarry.index.lexical.store import Store
from quarry.index.lexical.store_reads import StoreReads, dialogue_text
from quarry.index.lexical.visibility import Visible
from quarry.v1 import errors_pb2, refs_pb2, units_pb2

DEFAULT_MAX_CHARS = 2000

# ref kind -> (table, proto class, ResolvedRef field) for the units stored as one blob per row
_UNIT_KINDS: dict[str, tuple[str, type[ProtoMessage], str]] = {
    "run": ("runs", units_pb2.Run, "run"),
    "observed-event": ("observed_events", units_pb2.ObservedEvent, "observed_event"),
    "context-snapshot": ("context_snapshots", units_pb2.ContextSnapshot, "context_snapshot"),
    "delegation": ("delegations", units_pb2.Delegation, "delegation"),
}


class _Window(NamedTuple):
    name: str
    text: str
    missing: str  # the caveat when there is no text


class RefReader:
    def __init__(self, store: Store) -> None:
        self.store = store

    def resolve(self, request: refs_pb2.ResolveRefRequest, visible: Visible = None) -> refs_pb2.ResolvedRef:
        """The object, or unresolved with the same caveat for a session that is not here and one
        outside the `visible` scopes."""
        if request.max_chars < 0:
            raise QuarryError(errors_pb2.INVALID_REQUEST, "max_chars must not be negative", parameter="max_chars")
        out = refs_pb2.ResolvedRef(ref=request.ref)
        try:
            ref = parse_ref(request.ref)
        except QuarryError as error:
            out.caveats.append(error.message)
            return out
        out.kind, out.session_id = ref.kind, ref.session_id
        if ref.kind == "assertion":
            out.caveats.append(
                "assertion refs are answered by AssertionService.GetAssertion, not by a partition's index"
            )
            return out
        with self.store.snapshot() as reads:  # one read snapshot for every row the answer reads
            head = reads.session_head(ref.session_id)
            if head is None or not visibility.admits(visible, head.scope):
                out.caveats.append(f"no session {ref.session_id!r} in the archive")
            elif ref.kind == "session":
                out.session.ParseFromString(head.summary)
            else:
                _READERS[ref.kind](_Lookup(reads, head.ord, ref, request.max_chars or DEFAULT_MAX_CHARS), out)
        out.resolved = out.WhichOneof("object") is not None
        return out


class _Lookup(NamedTuple):
    reads: StoreReads
    session_ord: int
    ref: PublicRef
    max_chars: int

    def missing(self) -> str:
        return f"no {self.ref.kind} {self.ref.id!r} in session {self.ref.session_id!r}"

    def message(self, message_id: str) -> tuple[int, units_pb2.Message] | None:
        return self.reads.message(self.session_ord, message_id)

    def messages(self, after: int | None = None, before: int | None = None) -> Iterator[units_pb2.Message]:
        return self.reads.messages_around(self.session_ord, after, before)

    def unit(self) -> bytes | None:
        """The serialized unit the ref names (a kind of _UNIT_KINDS); None when it is not stored."""
        return self.reads.unit_proto(_UNIT_KINDS[self.ref.kind][0], self.session_ord, self.ref.id)


def _message(lookup: _Lookup, out: refs_pb2.ResolvedRef) -> None:
    found = lookup.message(lookup.ref.id)
    if found is None:
        out.caveats.append(lookup.missing())
    else:
        out.message.CopyFrom(found[1])


def _block(lookup: _Lookup, out: refs_pb2.ResolvedRef) -> None:
    found = lookup.message(lookup.ref.id.rsplit(":", 1)[0])
    block = next((b for b in found[1].blocks if b.id == lookup.ref.id), None) if found else None
    if block is None:
        out.caveats.append(lookup.missing())
    else:
        out.block.CopyFrom(block)


def _action(lookup: _Lookup, out: refs_pb2.ResolvedRef) -> None:
    block_id = lookup.reads.action_block_id(lookup.session_ord, lookup.ref.id)
    if block_id is None:
        out.caveats.append(lookup.missing())
    else:
        out.caveats.append(f"action refs do not resolve to a payload: read the action's tool call, block:{block_id}")


def _unit(lookup: _Lookup, out: refs_pb2.ResolvedRef) -> None:
    _, cls, field = _UNIT_KINDS[lookup.ref.kind]
    proto = lookup.unit()
    if proto is None:
        out.caveats.append(lookup.missing())
    else:
        getattr(out, field).CopyFrom(cls.FromString(proto))


def _delegation(lookup: _Lookup, out: refs_pb2.ResolvedRef) -> None:
    proto = lookup.unit()
    if proto is None:
        out.caveats.append(lookup.missing())
        return
    card = out.delegation
    card.delegation.ParseFromString(proto)
    windows = [*_parent_windows(lookup, card.delegation, out.caveats), _child_window(lookup, card.delegation)]
    for window in windows:
        text = window.text[: lookup.max_chars]
        truncated = len(text) < len(window.text)
        setattr(card, window.name, text)
        setattr(card, f"{window.name}_truncated", truncated)
        if truncated:
            out.caveats.append(f"{window.name} bounded to {lookup.max_chars} of {len(window.text)} characters")
        elif not window.text:
            out.caveats.append(window.missing)


def _parent_windows(lookup: _Lookup, delegation: units_pb2.Delegation, caveats: list[str]) -> list[_Window]:
    """The dispatch result, the parent's context before the dispatch, and its follow-up after the result."""
    block_id = delegation.tool_use_ref.removeprefix("block:")
    found = lookup.message(block_id.rsplit(":", 1)[0])
    index = next((i for i, b in enumerate(found[1].blocks) if b.id == block_id), None) if found else None
    if found is None or index is None:
        caveats.append(f"the dispatch {delegation.tool_use_ref!r} is not stored: no parent-side windows")
        return []
    dispatch_ord, dispatch = found
    use = dispatch.blocks[index]

    context = dialogue_text(dispatch.blocks[:index])
    if not context:
        context = next((t for m in lookup.messages(before=dispatch_ord) if (t := _dialogue(m))), "")

    result = _result_in(dispatch.blocks[index + 1 :], use.tool_use_id)
    later = lookup.messages(after=dispatch_ord)
    if result is None:  # in a later message: the follow-up comes after that one
        result = next((r for m in later if (r := _result_in(m.blocks, use.tool_use_id)) is not None), None)
        if result is None:
            later = lookup.messages(after=dispatch_ord)
    follow_up = next((t for m in later if m.role == "assistant" and (t := _dialogue(m))), "")
    return [
        _Window("dispatch_result", result.text if result else "", "no tool result recorded for the dispatch"),
        _Window("parent_context", context, "no parent text before the dispatch"),
        _Window("parent_follow_up", follow_up, "no parent reply with text after the dispatch result"),
    ]


def _child_window(lookup: _Lookup, delegation: units_pb2.Delegation) -> _Window:
    child = delegation.child_session_id
    if not child:
        return _Window("child_excerpt", "", "the delegation names no child session")
    child_ord = lookup.reads.session_ord(child)
    if child_ord is None:
        return _Window("child_excerpt", "", f"child session {child!r} is not in the archive")
    return _Window("child_excerpt", lookup.reads.final_text(child_ord), f"child session {child!r} has no final answer")


def _result_in(blocks: Iterable[units_pb2.Block], tool_use_id: str) -> units_pb2.Block | None:
    if not tool_use_id:
        return None
    return next((b for b in blocks if b.type == "tool_result" and b.tool_use_id == tool_use_id), None)


def _dialogue(message: units_pb2.Message) -> str:
    return "" if message.surface == "log-only" else dialogue_text(message.blocks)


_READERS: dict[str, Callable[[_Lookup, refs_pb2.ResolvedRef], None]] = {
    "message": _message,
    "block": _block,
    "action": _action,
    "run": _unit,
    "observed-event": _unit,
    "context-snapshot": _unit,
    "delegation": _delegation,
}
