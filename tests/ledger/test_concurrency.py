"""Concurrent appenders: Trio tasks, threads, and (PostgreSQL) two processes on one database."""

from __future__ import annotations

import subprocess

import pytest
import trio

from auto_runtime.ledger import Ledger, NewRecord, PlaybookScope, StreamWrite, VersionConflict

from .appender import SHARED, append_with_retry
from .children import ROOT, child_command
from .conftest import Target

ACME = PlaybookScope("acme", "finance")


async def assert_counted(ledger: Ledger, expected: dict[str, int]) -> None:
    records = await ledger.read_stream(SHARED)
    assert [r.position for r in records] == list(range(1, sum(expected.values()) + 1))
    for label, count in expected.items():
        assert sorted(r.data["n"] for r in records if r.data["by"] == label) == list(range(count))


async def test_many_tasks_appending_to_one_stream_each_land_once(ledger: Ledger) -> None:
    async def worker(label: str) -> None:
        for number in range(10):
            await append_with_retry(ledger, label, number)

    async with trio.open_nursery() as nursery:
        for task in range(16):
            nursery.start_soon(worker, f"task{task}")
    await assert_counted(ledger, {f"task{task}": 10 for task in range(16)})


async def test_exactly_one_of_several_clashing_appends_wins(ledger: Ledger) -> None:
    won: list[int] = []

    async def attempt(number: int) -> None:
        try:
            await ledger.append([StreamWrite(SHARED, 0, [NewRecord("counted", {"by": "x", "n": number})])])
            won.append(number)
        except VersionConflict:
            pass

    async with trio.open_nursery() as nursery:
        for number in range(32):
            nursery.start_soon(attempt, number)
    assert len(won) == 1
    assert [r.data["n"] for r in await ledger.read_stream(SHARED)] == won


async def test_appenders_on_several_threads_each_land_once(ledger: Ledger) -> None:
    def thread_worker(label: str) -> None:
        for number in range(10):
            trio.from_thread.run(append_with_retry, ledger, label, number)

    async with trio.open_nursery() as nursery:
        for thread in range(4):
            nursery.start_soon(trio.to_thread.run_sync, thread_worker, f"thread{thread}")
    await assert_counted(ledger, {f"thread{thread}": 10 for thread in range(4)})


@pytest.mark.postgres
async def test_two_processes_appending_to_one_stream_each_land_once(postgres_url: str) -> None:
    target = Target("postgres", None, postgres_url)
    command = child_command("appender", "contend", postgres_url, "other", "150")
    async with target.open() as ledger:
        finished: list[subprocess.CompletedProcess[bytes]] = []

        async def run_other() -> None:
            finished.append(await trio.run_process(command, cwd=ROOT, capture_stdout=True))

        with trio.fail_after(120):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(run_other)
                generation = ledger.appended.generation
                while await ledger.stream_version(SHARED) == 0:
                    await ledger.appended.wait_beyond(generation)
                    generation = ledger.appended.generation
                async with trio.open_nursery() as here:
                    for task in range(4):
                        here.start_soon(_append_many, ledger, f"here{task}", 15)
        assert finished[0].stdout.decode().strip() == "done"
        await assert_counted(ledger, {"other": 150, **{f"here{task}": 15 for task in range(4)}})


async def _append_many(ledger: Ledger, label: str, count: int) -> None:
    for number in range(count):
        await append_with_retry(ledger, label, number)
