"""Kill a process that is appending with SIGKILL, reopen the store: every acknowledged append is there."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest
import trio

from auto_runtime.ledger import PlaybookScope

from .conftest import Target

ROOT = Path(__file__).resolve().parents[2]
ACKS_BEFORE_KILL = 400


@pytest.mark.slow
async def test_every_acknowledged_append_survives_sigkill(target: Target) -> None:
    where = target.database_url or str(target.ledger_file)
    command = [sys.executable, "-m", "tests.ledger.appender", "forever", where, "8"]
    process = await trio.lowlevel.open_process(command, cwd=ROOT, stdout=-1)
    assert process.stdout is not None
    received = b""
    with trio.fail_after(120):
        while received.count(b"\n") < ACKS_BEFORE_KILL:
            chunk = await process.stdout.receive_some()
            assert chunk, "the appender ended before it was killed"
            received += chunk
    process.send_signal(signal.SIGKILL)
    with trio.fail_after(30):
        await process.wait()
    assert process.returncode == -signal.SIGKILL
    await process.stdout.aclose()
    acknowledged = received.split(b"\n")[:-1]
    assert len(acknowledged) >= ACKS_BEFORE_KILL

    async with target.open() as ledger:
        scope = PlaybookScope("acme", "finance")
        missing = [line.decode() for line in acknowledged if await ledger.read_record(scope, line.decode()) is None]
        assert missing == []
        for task in range(8):
            records = await ledger.read_stream(scope.stream("durable", str(task)))
            assert [r.position for r in records] == list(range(1, len(records) + 1))
