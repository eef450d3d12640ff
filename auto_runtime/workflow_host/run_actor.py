"""The run actor: one per workflow run that has inputs to apply, the one applier of its inputs in this process.

Life: spawned by the first input sent to the run (`RunStore.apply_input`), it passivates as soon as no input of
the run waits in its mailbox, so a run that waits (for a timer, an answer, an event) holds no actor and 10,000
waiting runs cost no memory here. While it lives it keeps the run's decoded engine state (`LoadedRun`) as its
last input left it: a second queued input is applied to it without reading and decoding the run again.

State and the ledger: the state is read from the `workflow_runs` projection on the first input of a life. Each
append states the run stream's version the state stands for, so when something else moved the stream (a
cancel request recorded by `WorkflowRuntime.cancel`, `RunStore.fail_run`, another applier) the append clashes,
the state is read again and the input applied again (`RunStore.apply_to`); nothing stale is ever appended.

Faults: an error the callers expect (`UnknownRun`, `RunStoreConflict`, a `LedgerError` such as a lost lease or
a full disk) is the answer to that input, and the state is dropped (the next input reads it again). Any other
error while applying (a breakdown inside the runtime) ends the life: the registry (`run-actors`, a child of
the playbooks supervisor) starts the next life from the ledger on the run's next input, counts the crash
against its restart intensity and fails to its supervisor past it. The asker gets the original error (the
timer loop then ends the run `failed` once, as before). Since every effect of an input is recorded in that
input's one append, a new life never repeats a recorded effect: an input already taken is stale.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from auto_runtime.actors import Actor
from auto_runtime.functions.workflow.engine.model import Input
from auto_runtime.ledger import DueKey, LeaseFence, LedgerError, PlaybookScope
from auto_runtime.supervision import RestartIntensity
from auto_runtime.workflow_host.run_errors import RunStoreConflict, UnknownRun

if TYPE_CHECKING:
    from auto_runtime.workflow_host.run_store import Applied, LoadedRun, RunStore

RunKey = tuple[str, str, str]
"""(org, playbook, run id)."""
RUN_ACTORS_INTENSITY = RestartIntensity(max_restarts=100, period=10.0)
"""Broken-down inputs the run actors take in 10 s before their registry fails to its supervisor: each one is a
fault inside the runtime that ended one run `failed`, so the bound is wide; a storm of them is escalated."""
EXPECTED = (UnknownRun, RunStoreConflict, LedgerError)


@dataclass(frozen=True)
class ApplyInput:
    input: Input
    fence: LeaseFence | None
    fired: Sequence[DueKey]


@dataclass(frozen=True)
class InputRefused:
    """An error the caller expects (see `EXPECTED`), answered instead of raised so the life goes on."""

    error: Exception


class RunActor(Actor[ApplyInput, "Applied | InputRefused"]):
    """One life of a run's actor (see the module's rules)."""

    def __init__(self, store: RunStore, key: RunKey) -> None:
        self.store = store
        self.scope = PlaybookScope(key[0], key[1])
        self.run_id = key[2]
        self.loaded: LoadedRun | None = None
        self.applied = 0
        """Inputs this life applied (stale ones included)."""

    async def receive(self, message: ApplyInput) -> Applied | InputRefused:
        loaded, self.loaded = self.loaded, None
        try:
            applied, self.loaded = await self.store.apply_to(
                self.scope, self.run_id, loaded, message.input, message.fence, message.fired
            )
        except EXPECTED as error:
            return InputRefused(error)
        self.applied += 1
        return applied
