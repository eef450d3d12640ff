"""Holding a store's actor busy, so that what a test queues behind it is handled together once let go."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from typing import Any

from auto_runtime.ledger import Ledger
from auto_runtime.ledger.postgres.store import PostgresLedger
from auto_runtime.ledger.sqlite.store import SqliteLedger


async def hold_the_actor(ledger: Ledger, gate: threading.Event, entered: threading.Event) -> None:
    """Work that keeps the store's actor busy until `gate` opens."""
    if isinstance(ledger, SqliteLedger):

        def block(conn: sqlite3.Connection) -> None:
            entered.set()
            gate.wait(30)

        await ledger.write(block)
    else:
        assert isinstance(ledger, PostgresLedger)

        async def block_on_loop(conn: Any) -> None:
            entered.set()
            await asyncio.get_running_loop().run_in_executor(None, gate.wait, 30)

        await ledger.with_connection(block_on_loop)
