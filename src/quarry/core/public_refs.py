"""Public refs (`<kind>:<id>`, docs/search-api.md#public-refs): parsing, and the session a ref
belongs to, which is what routes it to a partition.

Every unit id is its owning session's id followed by the unit's own suffix (quarry.core.refs and the
derived-unit ids of units.proto). A session id is `<origin>:<native id>` whose native id may hold `:`
and `/` (child sessions), so the session is what is left once the unit's suffix is removed from the
end. Assertion ids are global: only the store holding one knows its session.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from quarry.core import session_ids
from quarry.core.errors import QuarryError
from quarry.core.vocab import ORIGINS
from quarry.v1 import errors_pb2

ASSERTION_PREFIX = "assertion:"

# kind -> (id pattern, the form an error message shows)
_UNIT_SUFFIX = {
    "message": (re.compile(r"(?P<session>.+):m\d+"), "<session id>:m<seq>"),
    "block": (re.compile(r"(?P<session>.+):m\d+:\d+"), "<session id>:m<seq>:<index>"),
    "action": (re.compile(r"(?P<session>.+):action:\d+"), "<session id>:action:<seq>"),
    "run": (re.compile(r"(?P<session>.+):run:(?:main|\d+)"), "<session id>:run:main|<n>"),
    "observed-event": (re.compile(r"(?P<session>.+):event:\d+"), "<session id>:event:<seq>"),
    "context-snapshot": (re.compile(r"(?P<session>.+):snapshot:\d+"), "<session id>:snapshot:<seq>"),
    "delegation": (re.compile(r"(?P<session>.+):delegation:\d+"), "<session id>:delegation:<n>"),
}
REF_KINDS = ("session", "assertion", *_UNIT_SUFFIX)


class PublicRef(NamedTuple):
    kind: str
    id: str
    session_id: str  # "" for an assertion ref


def _bad(parameter: str, message: str) -> QuarryError:
    return QuarryError(errors_pb2.BAD_VALUE, message, parameter=parameter)


def session_of(value: str, parameter: str) -> str:
    """`value` when it is a session id (`[<scope>@]<origin>:<native id>`, the origin well formed: one Quarry
    does not read names a session it does not hold); BAD_VALUE otherwise."""
    if not session_ids.well_formed(value):
        raise _bad(
            parameter,
            f"{value!r} does not name a session ([<scope>@]<origin>:<native id>, the origin in lower-case words "
            f"joined by -, e.g. {ORIGINS[0]})",
        )
    return value


def parse_ref(ref: str, parameter: str = "ref") -> PublicRef:
    """The kind, id and owning session of a public ref; BAD_VALUE naming `parameter` for anything else."""
    kind, _, object_id = ref.partition(":")
    if kind not in REF_KINDS or not object_id:
        raise _bad(parameter, f"{ref!r} is not a public ref <kind>:<id> with kind one of {', '.join(REF_KINDS)}")
    if kind == "assertion":
        return PublicRef(kind, object_id, "")
    if kind == "session":
        return PublicRef(kind, object_id, session_of(object_id, parameter))
    pattern, form = _UNIT_SUFFIX[kind]
    match = pattern.fullmatch(object_id)
    if match is None:
        raise _bad(parameter, f"{ref!r}: a {kind} id is {form}")
    return PublicRef(kind, object_id, session_of(match["session"], parameter))


def bare_assertion_id(value: str) -> str:
    """An assertion id without its `assertion:` ref prefix (both forms name the same assertion)."""
    return value.removeprefix(ASSERTION_PREFIX)
