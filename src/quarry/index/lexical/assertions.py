"""Assertions of a partition and the judgment of candidates (WriteAssertion, ListCandidates, JudgeCandidate:
docs/search-api.md#calls; their fields: docs/query-language.md#assertion-fields).

Assertions are user-written data, so they live in their own SQLite file beside the partition's archive
rows: a re-ingest or a rebuild of the archive never touches them. Durability and threading follow
store.py: WAL with `synchronous=FULL` (a write has been fsynced when the call returns), one writer
connection under a lock, one reader connection per thread.

The judgment rules are enforced here, once, for every writer:
- any author but `user` lands as `candidate` (promotion_required, never injected into context),
  except kind `tag` (categorization, not a claim: lands active) and except an id that already carries
  a terminal judgment, which keeps it (a re-run detector never resurrects a rejected claim);
- only a pending candidate can be judged; accept / supersede create an active assertion whose
  evidence cites the candidate and whose `supersedes` points at it, reject / defer keep a judgment
  record (an inactive note with the reason). Each judgment is one transaction.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import orjson

from quarry.core import sqlite_tx
from quarry.core.errors import QuarryError
from quarry.core.public_refs import ASSERTION_PREFIX, bare_assertion_id, parse_ref
from quarry.core.readers import ThreadReaders
from quarry.core.vocab import ASSERTION_AUTHORS, ASSERTION_KINDS, ASSERTION_STATUSES
from quarry.v1 import assertions_pb2, errors_pb2, units_pb2

# Outcomes of a judgment: an assertion holding one is never turned back into a candidate by a write.
TERMINAL_STATUSES = ("accepted", "rejected", "deferred", "superseded", "deleted")
JUDGMENTS = ("accept", "reject", "defer", "supersede")
JUDGED_STATUS = {"accept": "accepted", "reject": "rejected", "defer": "deferred", "supersede": "superseded"}
DISABLED_REASONS = {
    "accepted": "candidate_already_accepted",
    "rejected": "candidate_already_rejected",
    "deferred": "candidate_deferred",
    "superseded": "candidate_superseded",
}
DEFAULT_LIMIT = 50
MAX_LIMIT = 1000
FORMAT_VERSION = 1  # PRAGMA user_version of the layout below

_DDL = """
CREATE TABLE IF NOT EXISTS assertions (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  status TEXT NOT NULL,
  target_ref TEXT NOT NULL,
  session_id TEXT NOT NULL,
  body TEXT NOT NULL,
  author TEXT NOT NULL,
  evidence_refs TEXT NOT NULL,  -- JSON array of public refs
  supersedes TEXT NOT NULL,
  reason TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  promotion_required INTEGER NOT NULL,
  context_inject INTEGER NOT NULL,
  was_candidate INTEGER NOT NULL  -- 1 once the row has been a candidate: it stays in the review list
) WITHOUT ROWID;
-- list and review select by status (IN the candidate and judged ones for review), then by target
CREATE INDEX IF NOT EXISTS assertions_status_target ON assertions (status, target_ref, created_ms, id);
-- cluster mode: the outcome of each write or judgment applied from the log, by its operation id
CREATE TABLE IF NOT EXISTS op_outcomes (op_id TEXT PRIMARY KEY, outcome BLOB NOT NULL) WITHOUT ROWID;
"""

COLUMNS = (
    "id",
    "kind",
    "status",
    "target_ref",
    "session_id",
    "body",
    "author",
    "evidence_refs",
    "supersedes",
    "reason",
    "created_ms",
    "updated_ms",
    "promotion_required",
    "context_inject",
)
_SELECT = f"SELECT {', '.join(COLUMNS)} FROM assertions"
_UPSERT = (
    f"INSERT INTO assertions ({', '.join(COLUMNS)}, was_candidate) VALUES ({', '.join('?' * (len(COLUMNS) + 1))}) "
    "ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in COLUMNS[1:])
    + ", was_candidate = MAX(was_candidate, excluded.was_candidate)"
)


def _bad(parameter: str, message: str, expected: Sequence[str] = ()) -> QuarryError:
    return QuarryError(errors_pb2.BAD_VALUE, message, parameter=parameter, expected=list(expected))


def _closed(value: str, vocabulary: Sequence[str], parameter: str) -> str:
    if value not in vocabulary:
        raise _bad(parameter, f"{parameter} must be one of {', '.join(vocabulary)}, not {value!r}", vocabulary)
    return value


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:32]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def from_row(row: Sequence[object]) -> units_pb2.Assertion:
    values = dict(zip(COLUMNS, row, strict=True))
    values["evidence_refs"] = orjson.loads(values["evidence_refs"])  # type: ignore[arg-type]
    values["promotion_required"] = bool(values["promotion_required"])
    values["context_inject"] = bool(values["context_inject"])
    return units_pb2.Assertion(**values)  # type: ignore[arg-type]


def _to_row(a: units_pb2.Assertion, was_candidate: bool) -> tuple[object, ...]:
    return (
        a.id,
        a.kind,
        a.status,
        a.target_ref,
        a.session_id,
        a.body,
        a.author,
        orjson.dumps(list(a.evidence_refs)).decode(),
        a.supersedes,
        a.reason,
        a.created_ms,
        a.updated_ms,
        int(a.promotion_required),
        int(a.context_inject),
        int(was_candidate),
    )


def _set_status(a: units_pb2.Assertion, status: str) -> None:
    """The status and the flags that follow from it: a candidate awaits promotion and is never
    injected into compiled context; only an active assertion is."""
    a.status = status
    a.promotion_required = status == "candidate"
    a.context_inject = status == "active"


class AssertionStore:
    """The assertions of one partition, in `<partition dir>/assertions.sqlite3`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._write_lock = threading.Lock()
        self._writer = self._connect()
        (version,) = self._writer.execute("PRAGMA user_version").fetchone()
        exists = self._writer.execute("SELECT 1 FROM sqlite_master WHERE name = 'assertions'").fetchone()
        if exists and version != FORMAT_VERSION:
            self._writer.close()
            raise QuarryError(
                errors_pb2.NODE_UNAVAILABLE,
                f"{path} holds assertion store format {version}; this build reads format {FORMAT_VERSION}",
            )
        self._writer.executescript(_DDL)
        self._writer.execute(f"PRAGMA user_version={FORMAT_VERSION}")
        self._readers = ThreadReaders(self._connect_reader)

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA busy_timeout=10000")
        return conn

    def _reader(self) -> sqlite3.Connection:
        return self._readers.get()

    def _connect_reader(self) -> sqlite3.Connection:
        conn = self._connect()
        conn.execute("PRAGMA query_only=1")
        return conn

    def close(self) -> None:
        self._readers.close()
        with self._write_lock:
            self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._writer.close()

    # ---- reads ---------------------------------------------------------------------------------

    def get(self, assertion_id: str) -> units_pb2.Assertion | None:
        """The assertion with this id (`assertion:` prefix optional), or None."""
        return self._get(self._reader(), bare_assertion_id(assertion_id))

    @staticmethod
    def _get(conn: sqlite3.Connection, assertion_id: str) -> units_pb2.Assertion | None:
        row = conn.execute(f"{_SELECT} WHERE id = ?", (assertion_id,)).fetchone()
        return from_row(row) if row else None

    def list_candidates(
        self, target_ref: str = "", review: bool = False, limit: int = 0
    ) -> list[assertions_pb2.CandidateEntry]:
        """Candidates awaiting judgment, oldest first (`review=False`); with `review=True`, those and
        then the judged ones, each judged one with why it can no longer be acted on. `target_ref` ""
        is every target; `limit` 0 is DEFAULT_LIMIT."""
        if target_ref:
            parse_ref(target_ref, "target_ref")
        if not 0 <= limit <= MAX_LIMIT:
            raise QuarryError(errors_pb2.INVALID_REQUEST, f"limit must be 0..{MAX_LIMIT}", parameter="limit")
        if review:
            reviewed = ", ".join(f"'{status}'" for status in ("candidate", *DISABLED_REASONS))
            where = ["was_candidate = 1", f"status IN ({reviewed})"]
        else:
            where = ["status = 'candidate'"]
        params: list[object] = []
        if target_ref:
            where.append("target_ref = ?")
            params.append(target_ref)
        order = "status != 'candidate', created_ms, id" if review else "created_ms, id"
        rows = self._reader().execute(
            f"{_SELECT} WHERE {' AND '.join(where)} ORDER BY {order} LIMIT ?", (*params, limit or DEFAULT_LIMIT)
        )
        entries = []
        for row in rows:
            assertion = from_row(row)
            if assertion.status == "candidate":
                entries.append(assertions_pb2.CandidateEntry(assertion=assertion, actions=JUDGMENTS))
            else:
                reason = DISABLED_REASONS[assertion.status]
                entries.append(assertions_pb2.CandidateEntry(assertion=assertion, disabled_reason=reason))
        return entries

    # ---- writes --------------------------------------------------------------------------------

    def write(self, assertion: units_pb2.Assertion, now_ms: int | None = None, op_id: str = "") -> units_pb2.Assertion:
        """Create or update an assertion under the judgment rules (module docstring); returns it as
        stored. The id is the given one, else a digest of (author, kind, target, body), so a writer
        that writes the same claim again updates its row. From the log (cluster mode), `now_ms` is the
        time the query node took for the write and `op_id` records its outcome in the same transaction."""
        a = units_pb2.Assertion()
        a.CopyFrom(assertion)
        _closed(a.kind, ASSERTION_KINDS, "assertion.kind")
        _closed(a.author, ASSERTION_AUTHORS, "assertion.author")
        if a.status:
            _closed(a.status, ASSERTION_STATUSES, "assertion.status")
        if not a.body.strip():
            raise _bad("assertion.body", "an assertion needs a body")
        for ref in a.evidence_refs:
            parse_ref(ref, "assertion.evidence_refs")
        a.supersedes = bare_assertion_id(a.supersedes)
        a.id = bare_assertion_id(a.id) or _digest(a.author, a.kind, a.target_ref, a.body)
        with sqlite_tx.transaction(self._writer, self._write_lock) as conn:
            a.session_id = self._target_session(conn, a.target_ref)
            existing = self._get(conn, a.id)
            if a.author == "user":
                status = a.status or "active"
            elif existing is not None and existing.status in TERMINAL_STATUSES:
                status = existing.status
            elif a.kind == "tag":
                status = "active"
            else:
                status = "candidate"
            _set_status(a, status)
            if existing is not None:
                a.created_ms = existing.created_ms
                a.reason = a.reason or existing.reason
            a.updated_ms = now_ms if now_ms is not None else _now_ms()
            a.created_ms = a.created_ms or a.updated_ms
            conn.execute(_UPSERT, _to_row(a, was_candidate=status == "candidate"))
            if op_id:
                self._record(conn, op_id, assertions_pb2.OperationOutcome(applied=True, assertion=a))
        return a

    def delete_sessions(self, session_ids: Sequence[str]) -> int:
        """Remove every assertion about these sessions (their session is gone from the archive);
        returns how many there were."""
        with self._write_lock:
            cursor = self._writer.execute(
                "DELETE FROM assertions WHERE session_id IN (SELECT value FROM json_each(?))",
                (orjson.dumps(list(session_ids)).decode(),),
            )
            return cursor.rowcount

    def _target_session(self, conn: sqlite3.Connection, target_ref: str) -> str:
        kind, object_id, session_id = parse_ref(target_ref, "assertion.target_ref")
        if kind != "assertion":
            return session_id
        target = self._get(conn, object_id)
        if target is None:
            raise QuarryError(
                errors_pb2.NOT_FOUND, f"no assertion {object_id!r} in this partition", parameter="assertion.target_ref"
            )
        return target.session_id

    def judge(
        self,
        assertion_id: str,
        judgment: str,
        reason: str = "",
        kind: str = "",
        body: str = "",
        now_ms: int | None = None,
        op_id: str = "",
    ) -> assertions_pb2.JudgeCandidateResponse:
        """Judge a pending candidate (module docstring), in one transaction. `kind` and `body` are the
        replacement claim of a `supersede`; `reason` is required to reject or defer. `now_ms` and `op_id`:
        as in `write`."""
        _closed(judgment, JUDGMENTS, "judgment")
        if judgment in ("reject", "defer") and not reason.strip():
            raise _bad("reason", f"{judgment} needs a reason (it is the durable judgment record)")
        if judgment == "supersede":
            _closed(kind, ASSERTION_KINDS, "kind")
            if not body.strip():
                raise _bad("body", "supersede needs the replacement claim's body")
        candidate_id = bare_assertion_id(assertion_id)
        with sqlite_tx.transaction(self._writer, self._write_lock) as conn:
            candidate = self._get(conn, candidate_id)
            if candidate is None:
                raise QuarryError(errors_pb2.NOT_FOUND, f"no assertion {candidate_id!r}", parameter="id")
            if candidate.status != "candidate":
                why = DISABLED_REASONS.get(candidate.status, f"assertion_{candidate.status}")
                raise QuarryError(
                    errors_pb2.NOT_JUDGEABLE,
                    f"{why}: assertion {candidate_id!r} is {candidate.status}, only a candidate can be judged",
                    parameter="id",
                )
            now = now_ms if now_ms is not None else _now_ms()
            _set_status(candidate, JUDGED_STATUS[judgment])
            candidate.reason = reason
            candidate.updated_ms = now
            created = self._judgment_result(candidate, judgment, reason, kind, body, now)
            conn.execute(_UPSERT, _to_row(candidate, was_candidate=True))
            conn.execute(_UPSERT, _to_row(created, was_candidate=False))
            judged = assertions_pb2.JudgeCandidateResponse(candidate=candidate, created=created)
            if op_id:
                self._record(conn, op_id, assertions_pb2.OperationOutcome(applied=True, judged=judged))
        return judged

    # ---- operations from the log (cluster mode) --------------------------------------------------

    def outcome(self, op_id: str) -> assertions_pb2.OperationOutcome | None:
        """The recorded outcome of an operation applied from the log; None before it is applied."""
        row = self._reader().execute("SELECT outcome FROM op_outcomes WHERE op_id = ?", (op_id,)).fetchone()
        return assertions_pb2.OperationOutcome.FromString(row[0]) if row else None

    def record_failure(self, op_id: str, error: QuarryError) -> None:
        """An operation from the log that failed typed (it changed nothing): its outcome is that error,
        the same on every replica, since every replica applies the same operations in the same order."""
        with self._write_lock:
            self._record(self._writer, op_id, assertions_pb2.OperationOutcome(applied=True, error=error.to_detail()))

    @staticmethod
    def _record(conn: sqlite3.Connection, op_id: str, outcome: assertions_pb2.OperationOutcome) -> None:
        conn.execute(
            "INSERT OR REPLACE INTO op_outcomes (op_id, outcome) VALUES (?, ?)", (op_id, outcome.SerializeToString())
        )

    @staticmethod
    def _judgment_result(
        candidate: units_pb2.Assertion, judgment: str, reason: str, kind: str, body: str, now: int
    ) -> units_pb2.Assertion:
        """What a judgment creates: the active claim (accept / supersede) or the judgment record."""
        candidate_ref = ASSERTION_PREFIX + candidate.id
        created = units_pb2.Assertion(
            id=_digest("judgment", candidate.id, judgment),
            target_ref=candidate.target_ref,
            session_id=candidate.session_id,
            author="user",
            reason=reason,
            created_ms=now,
            updated_ms=now,
        )
        if judgment in ("accept", "supersede"):
            created.kind = candidate.kind if judgment == "accept" else kind
            created.body = candidate.body if judgment == "accept" else body
            created.evidence_refs.extend([r for r in candidate.evidence_refs if r != candidate_ref] + [candidate_ref])
            created.supersedes = candidate.id
            _set_status(created, "active")
        else:
            created.kind = "note"
            created.body = reason
            created.target_ref = candidate_ref
            created.evidence_refs.append(candidate_ref)
            _set_status(created, "inactive")
        return created
