"""PostgreSQL: `appends_heard` is woken by the appends' notifications, this process's own and another server's (a
start waiting for another server reads its run once a notification came, not once each local append)."""

from __future__ import annotations

import pytest
import trio

from auto_runtime.ledger import NewRecord, PlaybookScope, StreamWrite

from .conftest import Target

pytestmark = pytest.mark.postgres

ACME = PlaybookScope("acme", "finance")


async def test_an_own_append_and_another_servers_wake_appends_heard_through_their_notifications(
    postgres_url: str,
) -> None:
    target = Target("postgres", None, postgres_url)
    async with target.open() as waiting, target.open() as other:
        heard, appended = waiting.appends_heard.generation, waiting.appended.generation
        await waiting.append([StreamWrite(ACME.stream("s", "own"), 0, [NewRecord("x", {})])])
        assert waiting.appended.generation > appended
        with trio.fail_after(30):
            await waiting.appends_heard.wait_beyond(heard)  # once its notification is heard back
        heard = waiting.appends_heard.generation
        await other.append([StreamWrite(ACME.stream("s", "other"), 0, [NewRecord("x", {})])])
        with trio.fail_after(30):
            await waiting.appends_heard.wait_beyond(heard)
