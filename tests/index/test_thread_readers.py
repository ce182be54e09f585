"""Each thread reads through its own connection; closing the pool closes every one of them."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from quarry.core.readers import ThreadReaders


def test_one_connection_per_thread_and_all_closed_together(tmp_path: Path) -> None:
    opened: list[sqlite3.Connection] = []

    def connect() -> sqlite3.Connection:
        conn = sqlite3.connect(tmp_path / "db.sqlite3", check_same_thread=False)
        opened.append(conn)
        return conn

    readers = ThreadReaders(connect)
    here = readers.get()
    assert readers.get() is here  # the same thread keeps its connection
    seen: list[sqlite3.Connection] = []
    worker = threading.Thread(target=lambda: seen.append(readers.get()))
    worker.start()
    worker.join()
    assert seen[0] is not here and len(opened) == 2
    readers.close()
    for conn in opened:
        try:
            conn.execute("SELECT 1")
        except sqlite3.ProgrammingError:
            continue
        raise AssertionError("a reader was left open")
