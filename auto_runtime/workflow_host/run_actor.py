"""A workflow run's inputs through its run actor: one per workflow run that has inputs to apply, the one applier
of its inputs in this process, hosted by its playbook's actor (`playbooks.playbook_host`, `run-actors`).

Life: spawned by the first input sent to the run (`RunStore.apply_input`), it passivates as soon as no input of
the run waits in its mailbox, so a run that waits (for a timer, an answer, an event) holds no actor and 10,000
waiting runs cost no memory here. While it lives it keeps the run's decoded engine state (`LoadedRun`) as its
last input left it (`playbooks.run_actor.KeptStateActor`): a second queued input is applied to it without
reading and decoding the run again.

State and the ledger: the state is read from the `workflow_runs` projection on the first input of a life. Each
append states the run stream's version the state stands for, so when something else moved the stream (a
cancel request recorded by `WorkflowRuntime.cancel`, `RunStore.fail_run`, another applier) the append clashes,
the state is read again and the input applied again (`RunStore.apply_to`); nothing stale is ever appended.

Between two inputs, the actor also runs work that must not race the run's inputs (`between_inputs`): recording
a request to cancel the run states the stream's version like an input does, and would otherwise lose every race
against a run that moves without pause. The work drops the kept state, since it may move the stream.

Faults: an error the callers expect (`UnknownRun`, `RunStoreConflict`, a `LedgerError` such as a lost lease or
a full disk) is the answer to that input (`InputRefused`), and the state is dropped (the next input reads it
again). Any other error while applying (a breakdown inside the runtime) ends the life: the playbook's
`run-actors` registry starts the next life from the ledger on the run's next input and counts the crash
against its restart intensity; past it, it escalates to the playbook's actor (`playbook_host`). The asker gets
the original error (the timer loop then ends the run `failed` once, as before). Since every effect of an input
is recorded in that input's one append, a new life never repeats a recorded effect: an input already taken is
stale.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from auto_runtime.ledger import LedgerError
from auto_runtime.playbooks.run_actor import RunStep
from auto_runtime.problems import Rejection
from auto_runtime.workflow_host.run_errors import RunStoreConflict, UnknownRun

if TYPE_CHECKING:
    from auto_runtime.workflow_host.run_store import Applied, LoadedRun

EXPECTED = (UnknownRun, RunStoreConflict, LedgerError)


@dataclass(frozen=True)
class InputRefused:
    """An error the caller expects (see `EXPECTED`), answered instead of raised so the life goes on."""

    error: Exception


ApplyTo = Callable[["LoadedRun | None"], Awaitable[tuple["Applied", "LoadedRun | None"]]]


def input_step(apply_to: ApplyTo) -> RunStep:
    """The run actor's message for one input: `apply_to(kept)` applies it to the state the actor kept (None:
    read it from the ledger) and answers what it did and the state it left."""

    async def step(kept: Any) -> tuple[Applied | InputRefused, LoadedRun | None]:
        try:
            return await apply_to(kept)
        except EXPECTED as error:
            return InputRefused(error), None

    return RunStep(step)


def between_inputs(work: Callable[[], Awaitable[Any]]) -> RunStep:
    """The run actor's message for `work` done between two of the run's inputs: its answer, or the `Rejection` or
    `LedgerError` it raised as `InputRefused`. Nothing is kept for the next input, which reads the run again."""

    async def step(_kept: Any) -> tuple[Any, None]:
        try:
            return await work(), None
        except (Rejection, LedgerError) as error:
            return InputRefused(error), None

    return RunStep(step)
