"""The ledger's place in the supervision tree: its store's actor (the SQLite writer, the PostgreSQL loop) under
a `ledger` supervisor, and the ask that turns the actor's back-pressure into the ledger's own errors.

A store is opened (`start`) before the tree runs, so a start error is the one-line `LedgerStartError`; the
tree's `ledger` child then runs `ledger_supervisor(store)`, whose one child serves the actor's lives (a life
that crashes is restarted with a new connection and the same mailbox, and restart intensity escalates to the
root as OTP's does); the store is closed (`stop`) after every other child, once its supervisor has stopped.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

from auto_runtime.actors.errors import ActorStoppedError, MailboxFull
from auto_runtime.actors.thread_actor import BridgedRef
from auto_runtime.supervision.child_spec import ChildSpec
from auto_runtime.supervision.supervisor import Supervisor

from .errors import LedgerClosedError, overloaded

M = TypeVar("M")
R = TypeVar("R")

ACTOR_MAILBOX = 4096
"""Units of work a store's actor holds queued or in flight; one more is refused with `LedgerUnavailable`."""
ACTOR_SHUTDOWN_SECONDS = 30.0
"""How long the actor may take to finish what is queued when the tree stops it."""


class SupervisedStore(Protocol):
    """A store whose actor the `ledger` supervisor runs."""

    def actor_spec(self) -> ChildSpec:
        """The child that serves the store's actor, one life at a time."""


def ledger_supervisor(store: SupervisedStore) -> Supervisor:
    """The `ledger` supervisor (one_for_one, OTP's default intensity): its one child is the store's actor."""
    return Supervisor("ledger", [store.actor_spec()])


async def ask_store_actor(ref: BridgedRef[M, R, Any], message: M) -> R:
    """Ask the store's actor and wait without a timeout (a write returns once durable, or fails).

    A full mailbox raises `LedgerUnavailable` (answered `unavailable` with `Retry-After`); a closed one
    raises `LedgerClosedError`."""
    try:
        return await ref.ask(message, timeout=None)
    except MailboxFull as error:
        raise overloaded(ref.name, error.capacity) from error
    except ActorStoppedError as error:
        raise LedgerClosedError("the ledger is closed") from error
