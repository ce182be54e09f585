"""Searches from several threads while one thread upserts: no errors, and writes are visible at once."""

from __future__ import annotations

import faulthandler
import threading

from quarry.index.lexical.partition import LexicalPartition
from tests.index import plans as p
from tests.index.conftest import corpus, sid
from tests.index.sessions import Msg, session

BATCHES = 20
DEADLOCK_S = 90  # the batches take about 5 s here


def test_searches_during_upserts(fresh: LexicalPartition) -> None:
    fresh.upsert(corpus())
    stop = threading.Event()
    errors: list[BaseException] = []
    searches = [0]

    def reader() -> None:
        try:
            while not stop.is_set():
                hits = fresh.search(p.search(p.text("sqlite", "locking"))).hits
                assert {h.session.id for h in hits} == {sid("lock-same"), sid("lock-user")}
                assert fresh.query_units(p.units("actions", p.field("tool", "bash"))).rows
                searches[0] += 1
        except BaseException as error:  # reported by the main thread
            errors.append(error)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for thread in threads:
        thread.start()
    try:
        for batch in range(6):
            sessions = [session(f"w{batch}-{i}", [Msg("user", f"batchword{batch} filler {i}")]) for i in range(10)]
            fresh.upsert(sessions)
            # visible as soon as upsert returns, from this thread and from others
            found = fresh.search(p.search(p.text(f"batchword{batch}"), limit=20)).hits
            assert len(found) == 10
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert not errors, errors[0]
    assert searches[0] > 0
    assert fresh.stats().sessions == 9 + 60


def test_concurrent_upserts_are_serialized(fresh: LexicalPartition) -> None:
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for batch in range(3):
                fresh.upsert([session(f"t{n}-{batch}", [Msg("user", f"writer{n} text")])])
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[0]
    assert fresh.stats().sessions == 9
    assert len(fresh.search(p.search(p.text("writer1"))).hits) == 3


def test_stats_answer_while_the_log_is_applied(fresh: LexicalPartition) -> None:
    """A replica's Stats (its log checkpoint) from other threads while batches of the log are applied.
    SQLite runs Python (`quarry_unpack`) inside an INSERT's statement: a reader that touched the writer
    connection then held the interpreter lock and waited on the connection's mutex, the writer waited
    on the interpreter lock, and the node stopped for good (seen in the cluster under load). A deadlock
    stops this process too, so faulthandler's watchdog ends it, with every thread's stack."""
    done = threading.Event()
    errors: list[BaseException] = []
    reads = [0]

    def stats() -> None:
        try:
            while not done.is_set():
                assert fresh.stats().applied_seq >= 0
                reads[0] += 1
        except BaseException as error:  # reported by the main thread
            errors.append(error)

    def apply() -> None:
        try:
            for batch in range(1, BATCHES + 1):
                texts = [Msg("user", f"applied{batch} message {m} " * 20) for m in range(30)]
                fresh.upsert([session(f"log-{batch}-{i}", texts) for i in range(4)], applied_seq=batch)
        except BaseException as error:
            errors.append(error)
        finally:
            done.set()

    threads = [threading.Thread(target=stats) for _ in range(3)]
    threads.append(threading.Thread(target=apply))
    faulthandler.dump_traceback_later(DEADLOCK_S, exit=True)
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        faulthandler.cancel_dump_traceback_later()
    assert not errors, errors[0]
    assert reads[0] > 0 and fresh.stats().applied_seq == BATCHES
