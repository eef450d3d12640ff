"""Kill a process that is appending with SIGKILL, reopen the store: every acknowledged append is there."""

from __future__ import annotations

import pytest

from auto_runtime.ledger import PlaybookScope

from .children import acknowledged_before_sigkill, child_command, where
from .conftest import Target

ACKS_BEFORE_KILL = 400


@pytest.mark.slow
async def test_every_acknowledged_append_survives_sigkill(target: Target) -> None:
    command = child_command("appender", "forever", where(target), "8")
    acknowledged = await acknowledged_before_sigkill(command, ACKS_BEFORE_KILL)
    assert len(acknowledged) >= ACKS_BEFORE_KILL

    async with target.open() as ledger:
        scope = PlaybookScope("acme", "finance")
        missing = [line.decode() for line in acknowledged if await ledger.read_record(scope, line.decode()) is None]
        assert missing == []
        for task in range(8):
            records = await ledger.read_stream(scope.stream("durable", str(task)))
            assert [r.position for r in records] == list(range(1, len(records) + 1))
