"""The run actors, hosted by their playbook's actor (`playbook_host`). `RunIdActor`, the run actor of
`run_definition`: one per run id that a request is running, the one place in this process where a run under
that id is started, run and answered. `KeptStateActor`: one per workflow run with inputs to apply (below).

Life: spawned by the first request under the run id, it lives while a request for the run is in hand or queued
and passivates once none is: a computation or reasoning run lives in it for its whole life (from `run_started`
to its ending, within its request), and a second request under the same id waits in its mailbox, then finds
the run's ending recorded and is answered from it ("Retrying under a run id"), never running it twice. A
workflow's start goes through it too (a second start under the id finds the run started).

Faults: a `Rejection` (the run's own, or the request's) and a `LedgerError` are the request's answer, returned
rather than raised, so the life goes on. Any other error ends the life: the playbook's `run-id-actors`
registry counts it against its restart intensity (past it, it escalates to the playbook's actor) and the next
request starts a new life, which knows only what the ledger recorded.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from auto_runtime.actors import Actor
from auto_runtime.ledger import LedgerError
from auto_runtime.problems import Rejection

RunIdKey = tuple[str, str, str]
"""(org, playbook, run id)."""


@dataclass(frozen=True)
class RunUnderId:
    """Run (or answer again) the request's run: `run` is the service's decision for this request."""

    run: Callable[[], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class RunRefused:
    error: Rejection | LedgerError


class RunIdActor(Actor[RunUnderId, "dict[str, Any] | RunRefused"]):
    """One life of a run id's actor; it holds nothing between requests but its place in the mailbox order."""

    async def receive(self, message: RunUnderId) -> dict[str, Any] | RunRefused:
        try:
            return await message.run()
        except (Rejection, LedgerError) as error:
            return RunRefused(error)


@dataclass(frozen=True)
class RunStep:
    """One input of a run, applied to what the run's actor kept from the input before it (None when it kept
    nothing): `step` answers the reply and what to keep for the next input (None to keep nothing)."""

    step: Callable[[Any], Awaitable[tuple[Any, Any]]]


class KeptStateActor(Actor[RunStep, Any]):
    """One life of a run's input actor (a workflow run's, `workflow_host.run_actor`): it applies its run's inputs
    one at a time and keeps, between two of them, what the last one left (the decoded engine state). What it
    keeps is dropped before each step, so a step that raises leaves nothing stale for the next life."""

    def __init__(self) -> None:
        self.kept: Any = None
        self.applied = 0
        """Inputs this life applied."""

    async def receive(self, message: RunStep) -> Any:
        kept, self.kept = self.kept, None
        answer, self.kept = await message.step(kept)
        self.applied += 1
        return answer
