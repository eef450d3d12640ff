"""The SQLite store's reader threads (`sqlite.connections.ReaderPool`): reads from many tasks at once are each
answered, on the pool's own threads; a task cancelled while its read runs stops waiting and the pool answers the
next reads; reads after `close` are refused and the threads are gone."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
import trio

from auto_runtime.ledger.sqlite.connections import READERS, ReaderPool


@pytest.fixture
def path(tmp_path: Path) -> str:
    file = tmp_path / "ledger.db"
    conn = sqlite3.connect(file)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE numbers (n INTEGER)")
    conn.executemany("INSERT INTO numbers VALUES (?)", [(n,) for n in range(10)])
    conn.commit()
    conn.close()
    return str(file)


def readers_alive() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("sqlite-reader-")}


async def test_reads_from_many_tasks_are_each_answered_on_the_pool_s_threads(path: str) -> None:
    pool = ReaderPool(path)
    answers: dict[int, tuple[int, str]] = {}

    def total_above(conn: sqlite3.Connection, floor: int) -> tuple[int, str]:
        (total,) = conn.execute("SELECT sum(n) FROM numbers WHERE n > ?", (floor,)).fetchone()
        return int(total), threading.current_thread().name

    async def read(floor: int) -> None:
        answers[floor] = await pool.run(lambda conn: total_above(conn, floor))

    try:
        async with trio.open_nursery() as nursery:
            for floor in range(-1, 9):
                nursery.start_soon(read, floor)
        assert {floor: total for floor, (total, _) in answers.items()} == {
            floor: sum(n for n in range(10) if n > floor) for floor in range(-1, 9)
        }
        assert {thread for _, thread in answers.values()} <= {f"sqlite-reader-{n}" for n in range(READERS)}
        assert pool.in_flight == 0
    finally:
        pool.close()


async def test_a_cancelled_read_stops_waiting_and_the_pool_answers_the_next_reads(path: str) -> None:
    pool = ReaderPool(path)
    release = threading.Event()
    try:
        with trio.CancelScope() as scope:
            scope.cancel()  # cancelled before the read is answered: the task stops waiting at once
            await pool.run(lambda conn: release.wait())
        assert scope.cancelled_caught
        release.set()
        for _ in range(READERS * 3):
            assert await pool.run(lambda conn: conn.execute("SELECT count(*) FROM numbers").fetchone()[0]) == 10
    finally:
        release.set()
        pool.close()


async def test_reads_after_close_are_refused_and_the_threads_are_gone(path: str) -> None:
    before = readers_alive()
    pool = ReaderPool(path)
    assert await pool.run(lambda conn: 1) == 1
    own = readers_alive() - before
    assert len(own) == READERS
    pool.close()
    assert not own & readers_alive()
    with pytest.raises(RuntimeError):
        await pool.run(lambda conn: 1)
