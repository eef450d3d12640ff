"""The run actor: one per run with a message in hand or queued, the one writer of its run in this process.

Hosted by its playbook's actor (`playbooks.playbook_host`, registry `run-actors[org/playbook]`) and addressed
by (org, playbook, run id) through `registry.Runs`. It handles one message at a time, in arrival order, each by
the handler the table (`handlers.RunHandlers`) has for the message's type, with the run's one writer
(`writer.RunWriter`), which keeps the decided state between two queued messages.

Life: spawned by the run's first message, it passivates once no message of the run is queued (its sender asks
it to), so a run that waits (for a timer, an answer, an event) holds no actor. A computation or reasoning run
lives in its actor from `run_started` to its ending, within its request, and a second request under the same
run id waits in the mailbox and then finds the ending recorded ("Retrying under a run id").

Faults: an error the sender expects (`Rejection`, `LedgerError`, `RunRefusal`) is the message's answer
(`Refused`) and drops what the writer kept; any other error ends the life: the playbook's `run-actors`
registry counts it against `RUN_ACTORS_INTENSITY` (past it, it escalates to the playbook's actor), and the
next message starts a new life that knows only what the ledger recorded. Every effect of a message is
recorded in its appends, so a new life never repeats one.
"""

from __future__ import annotations

from typing import Any

from auto_runtime.actors import Actor
from auto_runtime.ledger import Ledger, LedgerError, PlaybookScope
from auto_runtime.problems import Rejection
from auto_runtime.runs.handlers import RunHandlers
from auto_runtime.runs.messages import Refused, RunMessage, RunRefusal
from auto_runtime.runs.writer import RunWriter

RunKey = tuple[str, str, str]
"""(org, playbook, run id)."""

EXPECTED = (Rejection, LedgerError, RunRefusal)


class RunActor(Actor[RunMessage[Any], Any]):
    """One life of a run's actor (see the module's rules)."""

    def __init__(self, ledger: Ledger, key: RunKey, handlers: RunHandlers) -> None:
        self.writer = RunWriter(ledger, PlaybookScope(key[0], key[1]), key[2])
        self.handlers = handlers

    async def receive(self, message: RunMessage[Any]) -> Any:
        try:
            handler = self.handlers.handler_for(message)
            return await handler(self.writer, message)
        except EXPECTED as error:
            self.writer.forget()
            return Refused(error)
