"""One SQLite read connection per thread, for stores with one writer and many concurrent readers.

A connection must not be used by two threads at once; with WAL, each thread's reader runs beside the
writer without blocking it. Connections are opened on a thread's first read and closed together."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar


class Closable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=Closable)


class ThreadReaders(Generic[C]):
    def __init__(self, connect: Callable[[], C]) -> None:
        self._connect = connect
        self._local = threading.local()
        self._opened: list[C] = []
        self._lock = threading.Lock()

    def get(self) -> C:
        """This thread's read connection."""
        conn: C | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
            with self._lock:
                self._opened.append(conn)
        return conn

    def close(self) -> None:
        with self._lock:
            for conn in self._opened:
                conn.close()
            self._opened.clear()
