"""VS Code's own chat session store as VS Code writes it today: a mutation log, `chatSessions/<sessionId>.jsonl`.

VS Code keeps each chat of a workspace in `workspaceStorage/<workspace id>/chatSessions/` (a window with no
folder: `globalStorage/emptyWindowChatSessions/`). Older releases wrote the whole `ISerializableChatData` as
one `<sessionId>.json` (read by `copilot`); current ones append to `<sessionId>.jsonl` instead
(`ObjectMutationLog` in microsoft/vscode src/vs/workbench/contrib/chat/common/model/objectMutationLog.ts, its
schema in chatSessionOperationLog.ts). Each line is one entry:

- `{"kind": 0, "v": {...}}` the whole chat (the first line; a compacted log starts again with one),
- `{"kind": 1, "k": [path], "v": value}` set the value at the path (object keys, array indexes),
- `{"kind": 2, "k": [path], "v": [items], "i": n}` cut the array at the path to n items (when `i` is there),
  then append the items: a markdown part that grew, a request that was removed, a reply that streamed,
- `{"kind": 3, "k": [path]}` delete the value at the path.

The entries are replayed in order, as VS Code does when it opens the chat, and the state they build is the
same `ISerializableChatData` the `.json` store holds: it is read by `copilot.parse`, so a chat keeps its id
(`copilot-chat-export:<sessionId>`) when VS Code moves it from `.json` to `.jsonl`, and is read as deeply
(prompts, replies, thinking, tool calls with their results and failures, edits, models, times, turn events).

Where VS Code gives up on the whole chat, this reader keeps what it can: a line that is not JSON, an entry of
an unknown kind or one whose path does not exist in the state is an issue naming its line, and the replay goes
on; a last line cut short (VS Code stopped while appending) loses only that entry. Entries before the first
snapshot have nothing to apply to and are issues; a log with no snapshot at all has no session.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from quarry.ingest.reader import Record, issue
from quarry.ingest.sources import SourceResult, copilot

FORMAT = "vscode-chat-log"
INITIAL, SET, PUSH, DELETE = 0, 1, 2, 3  # ObjectMutationLog's EntryKind
MAX_PATH = 64  # deeper than any path the chat schema has: a longer one is not VS Code's


def recognize_records(records: list[Record]) -> str:
    """Among the log's first values is the snapshot entry of a chat (a `requests` array beside its
    `sessionId`; VS Code writes it first, a damaged log may have something before it), or every one of
    them is an entry of the log (its snapshot line lost: the parser says so)."""
    values = [record.data for record in records if not record.malformed]
    if any(_is_snapshot(value) for value in values) or (values and all(map(_is_change, values))):
        return FORMAT
    return ""


def _is_change(value: Any) -> bool:
    """A set, push or delete entry: nothing but its kind, path and value or cut."""
    return (
        isinstance(value, dict)
        and value.get("kind") in (SET, PUSH, DELETE)
        and isinstance(value.get("k"), list)
        and not set(value) - {"kind", "k", "v", "i"}
    )


def _is_snapshot(value: Any) -> bool:
    if not isinstance(value, dict) or value.get("kind") != INITIAL or set(value) - {"kind", "v"}:
        return False
    chat = value.get("v")
    return isinstance(chat, dict) and isinstance(chat.get("requests"), list) and "sessionId" in chat


def parse(records: Iterable[Record], path: str) -> SourceResult:
    """Replay the log's entries; the chat they build is one session (see the module docstring)."""
    replay = _Replay(path)
    for record in records:
        if not record.malformed:  # the reader has already reported the line
            replay.apply(record)
    if replay.state is None:
        result = SourceResult()
        reason = f"no snapshot entry (kind 0): the log's {len(replay.orphans)} change(s) have no chat to apply to"
        result.issues.append(issue(path, 0, "invalid_record", reason))
        result.issues.extend(replay.issues)
        return result
    for line in replay.orphans:
        replay.issues.append(issue(path, line, "invalid_record", "an entry before the chat's snapshot: not applied"))
    result = copilot.parse(replay.state, path)
    result.issues[:0] = replay.issues
    return result


class _Replay:
    """The chat as the entries read so far leave it."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.state: dict[str, Any] | None = None
        self.issues: list[Any] = []
        self.orphans: list[int] = []  # lines of the entries read before any snapshot

    def apply(self, record: Record) -> None:
        entry = record.data
        kind = entry.get("kind") if isinstance(entry, dict) else None
        if kind == INITIAL:
            if isinstance(entry.get("v"), dict):
                self.state = entry["v"]
            else:
                self._problem(record, "a snapshot entry whose value is not an object")
            return
        if kind not in (SET, PUSH, DELETE):
            self._problem(record, f"not an entry of VS Code's chat log (kind {kind!r})")
            return
        if self.state is None:
            self.orphans.append(record.line)
            return
        keys = entry.get("k")
        if not isinstance(keys, list) or not keys or len(keys) > MAX_PATH:
            self._problem(record, f"an entry without a usable path (k: {str(keys)[:80]})")
            return
        where = _parent(self.state, keys[:-1])
        last = keys[-1]
        if where is None or not _fits(where, last, kind):
            self._problem(record, f"the path {_show(keys)} is not in the chat")
            return
        if kind == SET:
            _set(where, last, entry.get("v"))
        elif kind == DELETE:
            _delete(where, last)
        elif not self._push(where, last, entry):
            self._problem(record, f"a push onto {_show(keys)}, which is not a list")

    def _push(self, where: Any, last: Any, entry: dict[str, Any]) -> bool:
        items = where[last] if _has(where, last) else None
        items = [] if items is None else items
        values = entry.get("v")
        cut = entry.get("i")
        if not isinstance(items, list) or not isinstance(values, list | None):
            return False
        if isinstance(cut, int) and not isinstance(cut, bool) and cut >= 0:
            del items[cut:]
        items.extend(values or [])
        _set(where, last, items)
        return True

    def _problem(self, record: Record, reason: str) -> None:
        self.issues.append(issue(self.path, record.line, "invalid_record", reason))


def _parent(state: Any, keys: list[Any]) -> Any:
    """The object or list the path's last key is in; None when the path leaves the chat."""
    current = state
    for key in keys:
        if not _has(current, key):
            return None
        current = current[key]
    return current


def _has(container: Any, key: Any) -> bool:
    if isinstance(container, dict):
        return isinstance(key, str) and key in container
    if isinstance(container, list):
        return _index(key) and key < len(container)
    return False


def _fits(container: Any, key: Any, kind: int) -> bool:
    """Whether an entry can be applied at `key` of `container`: any key of an object; an index of a list
    that is in it (or one past its end, where JavaScript would append)."""
    if isinstance(container, dict):
        return isinstance(key, str)
    if isinstance(container, list):
        return _index(key) and (key < len(container) or (kind == SET and key == len(container)))
    return False


def _index(key: Any) -> bool:
    return isinstance(key, int) and not isinstance(key, bool) and key >= 0


def _set(container: Any, key: Any, value: Any) -> None:
    if isinstance(container, list) and key == len(container):
        container.append(value)
    else:
        container[key] = value


def _delete(container: Any, key: Any) -> None:
    """JavaScript's `obj[key] = undefined`: the key is gone from the JSON (a list keeps its slot, as null)."""
    if isinstance(container, dict):
        container.pop(key, None)
    elif key < len(container):
        container[key] = None


def _show(keys: list[Any]) -> str:
    return "/".join(str(key) for key in keys)[:120]
