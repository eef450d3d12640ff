"""`PostgresConnections`: how work reaches the ledger's PostgreSQL database, for the store and each of its ports.

All asyncpg work runs on the ledger's loop actor (`store.PostgresLoop`, whose lives the store serves): this object
holds the actor's address (`loop_ref`) and asks it for one `Unit` of work at a time (a whole transaction on a
pooled connection, as a task of its own; cancelling the ask cancels the task) or one `Append`. The server's
`disk_full` is a passing fault, answered `LedgerUnavailable` (nothing of the transaction was kept), as is a full
mailbox. Every method may be called from any Trio task.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import asyncpg

from auto_runtime.actors.loop_actor import LoopActorRef

from ..faults import FaultLog
from ..serving import ACTOR_MAILBOX, ask_store_actor
from .faults import full_disk_cause, server_of
from .statements import Append

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Unit:
    """One unit of work for the loop: `work(connection)` on a pooled connection; `notify` asks the listener
    to tell other processes that something was appended, `due_recorded` that due work was recorded for another
    partition's holder (`..due_wake`), `begun` that these runs began, once the work succeeded (committed)."""

    work: Callable[[Any], Awaitable[Any]]
    notify: bool = False
    due_recorded: bool = False
    begun: tuple[str, ...] = ()


LoopMessage = Unit | Append


class PostgresConnections:
    """The loop actor's address and the faults its work met (see the module docstring)."""

    def __init__(self, database_url: str) -> None:
        self.loop_ref = LoopActorRef[LoopMessage, Any]("loop", ACTOR_MAILBOX)
        self.faults = FaultLog(f"DATABASE_URL {server_of(database_url)}")

    async def with_connection(self, work: Callable[[Any], Awaitable[T]], *, notify: bool = False) -> T:
        """Run `work(connection)` on the loop with a pooled connection (cancellable)."""
        result: T = await self.ask(Unit(work, notify))
        return result

    async def ask(self, message: LoopMessage) -> Any:
        try:
            return await ask_store_actor(self.loop_ref, message)
        except asyncpg.PostgresError as error:
            cause = full_disk_cause(error)
            if cause is None:
                raise
            raise self.faults.refused(cause) from error
