"""PostgreSQL: cancelling the Trio task cancels the query running on the asyncio thread."""

from __future__ import annotations

import pytest
import trio

from tests.stored_rows import stored_rows

from .conftest import Target

pytestmark = pytest.mark.postgres


async def test_a_trio_cancel_cancels_the_running_query(postgres_url: str) -> None:
    async with Target("postgres", None, postgres_url).open() as ledger:
        with trio.move_on_after(0.3) as scope:
            await stored_rows(ledger, "SELECT pg_sleep(30), 'ledger-cancel-probe' AS probe")
        assert scope.cancelled_caught
        running: list[dict[str, object]] = []
        for _ in range(400):
            running = await stored_rows(
                ledger,
                "SELECT pid FROM pg_stat_activity WHERE query LIKE ? AND pid <> pg_backend_pid()",
                ["%ledger-cancel-probe%"],
            )
            if not running:
                break
            await trio.sleep(0.05)
        assert running == []
        assert await stored_rows(ledger, "SELECT 1 AS one") == [{"one": 1}]
