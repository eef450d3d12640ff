"""Appends per second of 1 KB records through the ledger, beside raw baselines measured in the same run.

    .venv/bin/python benchmarks/ledger_appends.py [--appends N] [--repeats R] [--database-url URL]
                                                   [--skip-postgres]

For 1, 16 and 64 concurrent appenders (Trio tasks, each appending one record per call to a stream of
its own with the version it read), on SQLite (a fresh file: WAL, synchronous=FULL, group commit) and
on PostgreSQL (a fresh schema in `--database-url`, dropped afterwards). Baselines: a bare `sqlite3`
loop committing one row per transaction on the same settings, and a bare asyncpg loop inserting one
row per statement (autocommit) under plain asyncio, in a thread of its own. Each figure is the median
of `--repeats` runs; baseline and ledger runs are interleaved so that load from elsewhere weighs on
both alike.
The ratio to the baseline is printed, never asserted.

Then WAL frames written per append (SQLite): the growth of the `-wal` file over `--frame-appends` appends
at 1 and 64 appenders, beside the raw one-row commit. A read transaction held open meanwhile keeps SQLite
from restarting the WAL, so its growth counts every frame written.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import asyncpg
import trio

from auto_runtime.ledger import Ledger, NewRecord, PlaybookScope, StreamWrite, open_ledger

PAYLOAD = "x" * 1000
APPENDERS = (1, 16, 64)
SCOPE = PlaybookScope("bench", "appends")


def raw_sqlite(path: Path, count: int) -> float:
    """Rows per second: one INSERT per transaction, WAL, synchronous=FULL."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE IF NOT EXISTS raw (seq INTEGER PRIMARY KEY, stream TEXT, body TEXT)")
    started = time.perf_counter()
    for number in range(count):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO raw (stream, body) VALUES (?, ?)", (f"s{number}", PAYLOAD))
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - started
    conn.close()
    return count / elapsed


async def _raw_asyncpg(url: str, count: int) -> float:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("CREATE TABLE IF NOT EXISTS raw (seq bigserial PRIMARY KEY, stream text, body text)")
        started = time.perf_counter()
        for number in range(count):
            await conn.execute("INSERT INTO raw (stream, body) VALUES ($1, $2)", f"s{number}", PAYLOAD)
        return count / (time.perf_counter() - started)
    finally:
        await conn.close()


def raw_asyncpg(url: str, count: int) -> float:
    """Rows per second: one INSERT per statement (autocommit) on one connection, plain asyncio."""
    return asyncio.run(_raw_asyncpg(url, count))


async def ledger_rate(ledger: Ledger, appenders: int, count: int, run: int) -> float:
    """Appends per second with `appenders` tasks sharing `count` appends."""
    per_task = max(1, count // appenders)

    async def appender(task: int) -> None:
        stream = SCOPE.stream("bench", f"r{run}-a{appenders}-t{task}")
        for version in range(per_task):
            await ledger.append([StreamWrite(stream, version, [NewRecord("appended", {"body": PAYLOAD})])])

    started = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for task in range(appenders):
            nursery.start_soon(appender, task)
    return per_task * appenders / (time.perf_counter() - started)


async def measure(
    open_it: Callable[[], AbstractAsyncContextManager[Ledger]],
    raw: Callable[[int], float],
    count: int,
    repeats: int,
) -> tuple[float, dict[int, float]]:
    """Medians of the raw baseline and of the ledger at each concurrency, measured interleaved
    (raw, then 1, 16, 64 appenders, repeated) so a busy machine weighs on both alike."""
    baseline: list[float] = []
    samples: dict[int, list[float]] = {appenders: [] for appenders in APPENDERS}
    async with open_it() as ledger:
        await ledger_rate(ledger, 16, 200, -1)
        for run in range(repeats):
            baseline.append(await trio.to_thread.run_sync(raw, count))
            for appenders in APPENDERS:
                samples[appenders].append(await ledger_rate(ledger, appenders, count, run))
    return statistics.median(baseline), {n: statistics.median(rates) for n, rates in samples.items()}


class WalFrames:
    """Counts the frames written to a SQLite file's WAL while open (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._wal = Path(f"{path}-wal")
        self._reader = sqlite3.connect(path, isolation_level=None)
        self._page = int(self._reader.execute("PRAGMA page_size").fetchone()[0])
        self._reader.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self._reader.execute("BEGIN")
        self._reader.execute("SELECT count(*) FROM sqlite_master").fetchone()
        self._start = self._size()

    def _size(self) -> int:
        return max(self._wal.stat().st_size - 32, 0) if self._wal.exists() else 0

    def close(self) -> float:
        """The frames written since construction."""
        frames = (self._size() - self._start) / (self._page + 24)
        self._reader.execute("COMMIT")
        self._reader.close()
        return frames


def raw_frames(path: Path, count: int) -> float:
    """WAL frames per row of `raw_sqlite`."""
    raw_sqlite(path, 10)
    frames = WalFrames(path)
    raw_sqlite(path, count)
    return frames.close() / count


async def ledger_frames(path: Path, count: int) -> dict[int, float]:
    """WAL frames per append of the ledger at 1 and 64 appenders."""
    result: dict[int, float] = {}
    async with open_ledger(ledger_file=path) as ledger:
        await ledger_rate(ledger, 16, 64, -1)
        for appenders in (1, 64):
            frames = WalFrames(path)
            await ledger_rate(ledger, appenders, count, 1000 + appenders)
            result[appenders] = frames.close() / (max(1, count // appenders) * appenders)
    return result


async def _admin(url: str, statement: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


def print_rows(store: str, baseline_name: str, baseline: float, rates: dict[int, float]) -> None:
    print(f"\n{store}: raw baseline ({baseline_name}) {baseline:,.0f}/s")
    print(f"  {'appenders':>9}  {'appends/s':>11}  {'× raw':>6}")
    for appenders, rate in rates.items():
        print(f"  {appenders:>9}  {rate:>11,.0f}  {rate / baseline:>6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--appends", type=int, default=2000, help="appends per measurement")
    parser.add_argument("--repeats", type=int, default=3, help="measurements per figure (median)")
    parser.add_argument("--database-url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--frame-appends", type=int, default=256, help="appends per WAL frame count")
    parser.add_argument("--skip-postgres", action="store_true")
    options = parser.parse_args()
    print(f"1 KB records, {options.appends} appends per measurement, median of {options.repeats}")

    with tempfile.TemporaryDirectory() as folder:
        raw_files = iter(range(1_000_000))
        baseline, rates = trio.run(
            measure,
            lambda: open_ledger(ledger_file=Path(folder) / "ledger.db"),
            lambda count: raw_sqlite(Path(folder) / f"raw{next(raw_files)}.db", count),
            options.appends,
            options.repeats,
        )
        print_rows("SQLite", "sqlite3, one commit per row", baseline, rates)
        raw = raw_frames(Path(folder) / "frames-raw.db", options.frame_appends)
        frames = trio.run(ledger_frames, Path(folder) / "frames.db", options.frame_appends)
        print(
            f"\nSQLite WAL frames per append: raw row {raw:.2f}, "
            + ", ".join(
                f"{appenders} appender{'s' if appenders > 1 else ''} {value:.2f}" for appenders, value in frames.items()
            )
        )

    if options.skip_postgres:
        return
    schema = f"bench_{secrets.token_hex(6)}"
    asyncio.run(_admin(options.database_url, f"CREATE SCHEMA {schema}"))
    url = f"{options.database_url}?search_path={schema}"
    try:
        baseline, rates = trio.run(
            measure,
            lambda: open_ledger(database_url=url),
            lambda count: raw_asyncpg(url, count),
            options.appends,
            options.repeats,
        )
        print_rows("PostgreSQL", "asyncpg, one insert per statement", baseline, rates)
    finally:
        asyncio.run(_admin(options.database_url, f"DROP SCHEMA {schema} CASCADE"))


if __name__ == "__main__":
    main()
