"""A session's identity in the archive: its scope and its source's id.

A parser names a session `<origin>:<native id>` (quarry.core.refs and the parsers). The archive names it
by that id in the scope `default`, and `<scope>@<origin>:<native id>` in any other scope, so a scope owns
its sessions: two scopes may each hold their own copy of the same native session (two teammates
ingesting one shared log), and no write in one scope can replace, block or reveal a session of
another, because they never share an id. Every id derived from a session's (its messages, blocks,
actions, units, refs) starts with it, and a child session's id starts with its root's, so the scope
travels with all of them: routing (a family's partition), lineage and ref resolution need nothing more.

Scope names are `[a-z0-9][a-z0-9._-]*` and origins lower-case words joined by `-`, so `@` before the
first `:` can only be the scope's mark.
"""

from __future__ import annotations

from quarry.core.tokens import DEFAULT_SCOPE, SCOPE_PATTERN
from quarry.core.vocab import well_formed_origin

SCOPE_MARK = "@"


def scoped_id(scope: str, session_id: str) -> str:
    """The archive's id of a parser's session id (`<origin>:<native id>`) ingested into `scope`."""
    return session_id if scope == DEFAULT_SCOPE else f"{scope}{SCOPE_MARK}{session_id}"


def split_scope(session_id: str) -> tuple[str, str]:
    """(scope, the parser's id) of an archive session id."""
    head, colon, _ = session_id.partition(":")
    scope, mark, _ = head.partition(SCOPE_MARK)
    if not colon or not mark:
        return DEFAULT_SCOPE, session_id
    return scope, session_id[len(scope) + len(SCOPE_MARK) :]


def scope_of(session_id: str) -> str:
    return split_scope(session_id)[0]


def origin_of(session_id: str) -> str:
    """The origin a session id names (`claude-code-session` of `team-a@claude-code-session:…`)."""
    return split_scope(session_id)[1].partition(":")[0]


def well_formed(session_id: str) -> bool:
    """Whether the value is spelled as a session id is: `[<scope>@]<origin>:<native id>`, the scope a
    scope name, the origin lower-case words joined by `-`, the native id not empty."""
    head, colon, native = session_id.partition(":")
    scope, mark, origin = head.rpartition(SCOPE_MARK)
    if mark and (scope == DEFAULT_SCOPE or not SCOPE_PATTERN.fullmatch(scope)):
        return False
    return bool(colon and native) and well_formed_origin(origin)
