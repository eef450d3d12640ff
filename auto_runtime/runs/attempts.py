"""Starting a run under its id, and the facts of a run that finishes within its request (computation,
reasoning, recall answers, a prediction's questions, an interaction call): the message `StartRun` and the
decisions its handler (`RunService`) makes through the run's writer.

`Opening` decides what a request under a run id does on the run's history: answer an earlier run again (or
refuse: another definition or input under the id, a run that may have called tools, a type that runs once),
hand the start to the type's runtime (a run that waits), or record `run_started` for a new attempt. `AttemptFact`
and `AttemptEnd` record what the attempt reports while it runs and its ending. Each is decided on the run's
records as its actor keeps them, so a fact lands right after the attempt's own last record.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from auto_runtime.ledger import NewRecord
from auto_runtime.problems import conflict
from auto_runtime.runs.deciders import HistoryDecider, RunHistory
from auto_runtime.runs.decision import Decision, Loaded
from auto_runtime.runs.facts import RUN_STARTED
from auto_runtime.runs.messages import RunMessage
from auto_runtime.runs.view import RunState, fold_run

if TYPE_CHECKING:
    from auto_runtime.telemetry.spans import RunSpan


@dataclass(frozen=True)
class StartRun(RunMessage[dict[str, Any]]):
    """Run (or answer again) a request's run under its id: the latest `definition` of `definition_type`/`name`
    on `value` (its canonical `digest`), for `caller_id`. `minted`: this server made the id (a new UUIDv7), so no
    stream is read before the first append. `span`: the request's run span, carried into the run's actor."""

    definition_type: str
    name: str
    value: Any
    digest: str
    caller_id: str
    definition: Any
    metadata: Mapping[str, Any] | None
    minted: bool
    span: RunSpan


@dataclass(frozen=True)
class AnsweredAgain:
    """An earlier run under the id answers the request."""

    shown: dict[str, Any]


@dataclass(frozen=True)
class HandedOver:
    """The type's runtime starts the run (a run that waits)."""


@dataclass(frozen=True)
class AttemptStarted:
    """`run_started` of a new attempt is recorded: the type runs now."""

    started: NewRecord
    metadata: dict[str, Any]


Opened = AnsweredAgain | HandedOver | AttemptStarted


class Opening(HistoryDecider[StartRun, Opened]):
    """What a request under a run id does (see the module's rules). `answer_again(state)` is the run service's
    retry rule (None: run it again; it raises the refusals); `waits(message)` whether the type's runtime starts
    it."""

    def __init__(
        self,
        answer_again: Callable[[RunState], dict[str, Any] | None],
        waits: Callable[[StartRun], bool],
    ) -> None:
        self.answer_again = answer_again
        self.waits = waits

    def decide(self, loaded: Loaded[RunHistory], message: StartRun) -> Decision[Opened]:
        history = loaded.state
        run_id = history.run_id
        state = fold_run(run_id, history.records)
        if state is not None:
            if (state.type, state.name) != (message.definition_type, message.name) or (
                state.input_digest != message.digest
            ):
                raise conflict(
                    f"The run id {run_id} is already used for another definition or another input; use a new run id."
                )
            answered = self.answer_again(state)
            if answered is not None:
                return Decision(AnsweredAgain(answered))
        if self.waits(message):
            return Decision(HandedOver())
        definition = message.definition
        reference = {"type": message.definition_type, "name": message.name, "version": definition.version}
        metadata = {
            "correlation_id": run_id,
            "causation_id": None,
            **(message.metadata or {}),
            "by": message.caller_id,
            "run_id": run_id,
            "definition": reference,
        }
        data: dict[str, Any] = {"input": message.value, "input_digest": message.digest}
        if definition.document.get("calls_tools"):
            data["calls_tools"] = True
        started = NewRecord(RUN_STARTED, data, metadata)
        return Decision(AttemptStarted(started, {**metadata, "causation_id": started.id}), [started])


@dataclass(frozen=True)
class Fact:
    """A record an attempt reports (`fact_type`, `data`) under the attempt's metadata."""

    fact_type: str
    data: Mapping[str, Any]
    metadata: Mapping[str, Any]


class AttemptFact(HistoryDecider[Fact, None]):
    """Records what a running attempt reports, right after the attempt's last record."""

    def decide(self, loaded: Loaded[RunHistory], message: Fact) -> Decision[None]:
        return Decision(None, [NewRecord(message.fact_type, dict(message.data), dict(message.metadata))])


ATTEMPT_FACT = AttemptFact()
