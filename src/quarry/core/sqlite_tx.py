"""Transactions on SQLite connections opened in autocommit mode (`isolation_level=None`), written once
for every store that owns one (the partition store, the assertion store, the vector store).

- `transaction(conn)`: one write transaction, `BEGIN IMMEDIATE` (the write lock taken at once, so two
  writers wait on each other at the start, never deadlock half-way); committed when the block ends,
  rolled back when it raises.
- `snapshot(conn)`: one read transaction (`BEGIN`), so every statement of the block reads the same
  committed state (in WAL mode a reader never blocks the writer); ended when the block ends, whatever
  happens in it.

A connection serves one thread at a time: a store that shares its writer between threads passes the
lock guarding it (`lock`), held from BEGIN to COMMIT.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Protocol, TypeVar


class Connection(Protocol):
    """What these helpers use of a connection (the standard sqlite3 module's, or pysqlite3's)."""

    @property
    def in_transaction(self) -> bool: ...

    def execute(self, sql: str, /) -> Any: ...


C = TypeVar("C", bound=Connection)


@contextmanager
def transaction(conn: C, lock: AbstractContextManager[object] | None = None) -> Iterator[C]:
    """`conn` in one write transaction (module docstring), under `lock` when given."""
    with lock if lock is not None else nullcontext():
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # a failed COMMIT may have ended it already
                conn.execute("ROLLBACK")
            raise


@contextmanager
def snapshot(conn: C) -> Iterator[C]:
    """`conn` in one read transaction (module docstring)."""
    conn.execute("BEGIN")
    try:
        yield conn
    finally:
        conn.execute("COMMIT")
