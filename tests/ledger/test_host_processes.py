"""The lease and due work across processes: two servers racing for the lease on one PostgreSQL, and
armed timers surviving a SIGKILL of the process that armed them (both stores)."""

from __future__ import annotations

import json
import signal
from datetime import timedelta
from typing import Any

import pytest
import trio

from auto_runtime.ledger import Lease

from .children import ROOT, acknowledged_before_sigkill, child_command, where
from .conftest import Target
from .host_child import SCOPE

ROUNDS = 20
ACKS_BEFORE_KILL = 300


class LineReader:
    """Lines from a child's stdout."""

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self._stream = stream
        self._buffer = b""

    async def line(self) -> str:
        while b"\n" not in self._buffer:
            chunk = await self._stream.receive_some()
            assert chunk, "the child ended early"
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode()


async def wait_until_lapsed(lease: Lease) -> None:
    while True:
        if (await lease.holder()).holder is None:
            return
        await trio.sleep(0.01)


@pytest.mark.postgres
async def test_two_processes_racing_for_a_free_or_lapsed_lease_one_takes_it(postgres_url: str) -> None:
    target = Target("postgres", None, postgres_url)
    holders = ["server-1", "server-2"]
    children = [
        await trio.lowlevel.open_process(
            child_command("host_child", "claim", postgres_url, holder),
            cwd=ROOT,
            stdin=-1,
            stdout=-1,
        )
        for holder in holders
    ]
    try:
        readers = [LineReader(child.stdout) for child in children if child.stdout is not None]
        with trio.fail_after(120):
            assert [await reader.line() for reader in readers] == ["ready", "ready"]
            async with target.open() as ledger:
                for round_number in range(ROUNDS):
                    name = f"race-{round_number}"
                    lapsed = round_number % 2 == 1
                    if lapsed:
                        await ledger.lease(name).claim("gone", timedelta(milliseconds=20))
                        await wait_until_lapsed(ledger.lease(name))
                    go = f"go {name}\n".encode()
                    for child in children:
                        assert child.stdin is not None
                        await child.stdin.send_all(go)
                    answers: list[dict[str, Any]] = [json.loads(await reader.line()) for reader in readers]
                    winners = [h for h, a in zip(holders, answers, strict=True) if a["holder"] == h]
                    assert len(winners) == 1, answers
                    assert {a["holder"] for a in answers} == {winners[0]}
                    assert {a["fencing"] for a in answers} == {2 if lapsed else 1}
                    state = await ledger.lease(name).holder()
                    assert (state.holder, state.fencing) == (winners[0], 2 if lapsed else 1)
            for child in children:
                assert child.stdin is not None
                await child.stdin.send_all(b"end\n")
                await child.wait()
                assert child.returncode == 0
    finally:
        for child in children:
            if child.returncode is None:
                child.kill()
                await child.wait()


async def test_a_standby_takes_over_once_a_killed_holders_claim_lapses(target: Target) -> None:
    command = child_command("host_child", "hold", where(target), "doomed")
    process = await trio.lowlevel.open_process(command, cwd=ROOT, stdout=-1)
    assert process.stdout is not None
    reader = LineReader(process.stdout)
    with trio.fail_after(60):
        answers = [json.loads(await reader.line()) for _ in range(3)]
    assert {(a["holder"], a["fencing"]) for a in answers} == {("doomed", 1)}
    process.send_signal(signal.SIGKILL)
    with trio.fail_after(30):
        await process.wait()
    await process.stdout.aclose()

    async with target.open() as ledger:
        lease = ledger.lease()
        with trio.fail_after(30):
            await wait_until_lapsed(lease)
        taken = await lease.claim("standby", timedelta(seconds=60))
        assert taken.held_by("standby")
        assert taken.fencing == 2


@pytest.mark.slow
async def test_every_acknowledged_timer_survives_sigkill(target: Target) -> None:
    command = child_command("host_child", "arm", where(target), "6")
    lines = await acknowledged_before_sigkill(command, ACKS_BEFORE_KILL)
    acknowledged = [line.decode().split() for line in lines]
    assert len(acknowledged) >= ACKS_BEFORE_KILL

    async with target.open() as ledger:
        for task in range(6):
            run_id = f"run{task}"
            rows = await ledger.due_work.entries_of_run(SCOPE, run_id)
            armed = {row.key for row in rows if row.state == "armed"}
            assert {key for run, key in acknowledged if run == run_id} <= armed
            # Every timer belongs to an input recorded in the run's log, and the other way round.
            log = await ledger.read_stream(SCOPE.stream("run-logs", run_id))
            assert {record.data["timer"] for record in log} == armed
