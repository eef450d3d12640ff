"""Delivery attempts on their schedule, driven in-process by a clock the test moves (interaction-format §4), on
each ledger (see `clocked`)."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from auto_runtime.functions.interaction.delivery_decisions import LOST_AFTER, next_attempt_wait
from auto_runtime.ledger import Ledger
from auto_runtime.workflow_host.run_store import RunStore
from tests.fakes.gateway_process import McpToolServerProcess
from tests.interaction_host.clocked import Host, desk, hosted, numbers
from tests.workflow_host.conftest import SCOPE, engine, ledger, postgres_database, postgres_url, store, target

__all__ = ["desk", "engine", "ledger", "postgres_database", "postgres_url", "store", "target"]

NOTIFICATION = """---
to: ana
expires: PT1H
deliver:
  server: desk
  tool: TOOL
  with: { text: '{{ message }}', to: '{{ to }}', retry_after: 150 }
---
Shipped.
"""


async def notify(host: Host, tool: str) -> str:
    source = NOTIFICATION.replace("TOOL", tool)
    await host.runs.definitions.create(SCOPE, "interaction", "shipped", source, "tester")
    run_id = str(uuid.uuid4())
    started: dict[str, Any] = await host.runs.run_definition(SCOPE, "interaction", "shipped", {}, run_id, "tester")
    assert started["status"] == "started", started
    return run_id


async def test_a_failing_tool_is_attempted_five_times_on_the_schedule_then_the_notification_is_undelivered(
    ledger: Ledger, store: RunStore, desk: McpToolServerProcess
) -> None:
    async with hosted(ledger, store, desk) as host:
        run_id = await notify(host, "crash")
        start = host.clock()
        await host.sweep_at(start)
        await host.until(run_id, "delivery_failed")
        history = await host.failing_on_schedule(run_id)
        assert numbers(history, "delivery_started") == [1, 2, 3, 4, 5]
        assert {record.data["because"] for record in history if record.type == "delivery_failed"} == {"server_failure"}
        history = await host.until(run_id, "run_rejected")
        rejected = history[-1]
        assert (rejected.data["reason"], rejected.data["kind"]) == ("unanswered", "undelivered")
        assert rejected.metadata["causation_id"] == history[-2].id and history[-2].type == "delivery_failed"
        await host.sweep_at(host.clock() + timedelta(days=1))
        assert numbers(await host.history(run_id), "delivery_started") == [1, 2, 3, 4, 5]


async def test_a_retry_after_longer_than_the_schedule_sets_the_next_attempt(
    ledger: Ledger, store: RunStore, desk: McpToolServerProcess
) -> None:
    """The fake's `swamped` answers 429 with the `retry_after` it is given (150 s here, the schedule's 60 s)."""
    async with hosted(ledger, store, desk) as host:
        run_id = await notify(host, "swamped")
        await host.sweep_at(host.clock())
        history = await host.until(run_id, "delivery_failed")
        (failed,) = [record for record in history if record.type == "delivery_failed"]
        assert failed.data["retry_after_ms"] == 150_000
        wait = next_attempt_wait(1, 150_000)
        assert wait == timedelta(seconds=150) > next_attempt_wait(1, None)
        failed_at = host.clock()
        await host.sweep_at(failed_at + next_attempt_wait(1, None))
        assert numbers(await host.history(run_id), "delivery_started") == [1]
        await host.sweep_at(failed_at + wait - timedelta(milliseconds=1))
        assert numbers(await host.history(run_id), "delivery_started") == [1]
        await host.sweep_at(failed_at + wait)
        history = await host.until(run_id, "delivery_failed", 2)
        assert numbers(history, "delivery_started") == [1, 2]


async def test_an_attempt_unfinished_a_minute_after_it_started_is_lost_and_the_next_is_armed(
    ledger: Ledger, store: RunStore, desk: McpToolServerProcess
) -> None:
    """The fake's `hang` never answers: the attempt is still in flight when the clock passes its minute."""
    async with hosted(ledger, store, desk) as host:
        run_id = await notify(host, "hang")
        started_at = host.clock()
        await host.sweep_at(started_at)
        assert numbers(await host.history(run_id), "delivery_started") == [1]
        await host.sweep_at(started_at + LOST_AFTER - timedelta(milliseconds=1))
        assert numbers(await host.history(run_id), "delivery_failed") == []
        await host.sweep_at(started_at + LOST_AFTER)
        history = await host.until(run_id, "delivery_failed")
        (lost,) = [record for record in history if record.type == "delivery_failed"]
        assert lost.data["because"] == "lost" and lost.data["number"] == 1
        started = next(record for record in history if record.type == "delivery_started")
        assert lost.metadata["causation_id"] == started.id
        lost_at = host.clock()
        await host.sweep_at(lost_at + next_attempt_wait(1, None) - timedelta(milliseconds=1))
        assert numbers(await host.history(run_id), "delivery_started") == [1]
        await host.sweep_at(lost_at + next_attempt_wait(1, None))
        assert numbers(await host.history(run_id), "delivery_started") == [1, 2]
