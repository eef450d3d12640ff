"""A run driven input by input through the real decider and the real sandbox evaluator, for the tests."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from auto_runtime.functions.workflow.document import WorkflowDocument, check_document
from auto_runtime.functions.workflow.engine.decider import apply, new_state
from auto_runtime.functions.workflow.engine.model import (
    CallAnswered,
    CancelRequested,
    EventOffered,
    EventReceived,
    Fact,
    Input,
    Output,
    Settle,
    StartCall,
    Started,
    TimerFired,
    Transition,
)
from auto_runtime.functions.workflow.engine.sandbox_evaluator import SandboxEvaluator, launch_on_a_thread
from auto_runtime.functions.workflow.engine.state import EngineState
from auto_runtime.functions.workflow.engine.state_codec import dump_state, load_state
from auto_runtime.sandbox.engine import SandboxEngine

T0 = 1_790_000_000_000
RUN_ID = "0193a5b4-0000-7000-8000-000000000001"
MAX_DURATION_MS = 30 * 86_400_000


def checked(source: str) -> WorkflowDocument:
    document = check_document(source, MAX_DURATION_MS)
    assert isinstance(document, WorkflowDocument), document
    return document


@dataclass
class Run:
    """One run: its state, every fact recorded so far and the outputs of the last input."""

    engine: SandboxEngine
    source: str
    state: EngineState = field(init=False)
    history: list[Fact] = field(default_factory=list)
    last: Transition | None = None
    count: int = 0
    launches: list[int] = field(default_factory=list)
    """Sandbox instances started, per input."""

    def __post_init__(self) -> None:
        self.state = new_state(
            RUN_ID, checked(self.source).value, runtime_version="0.1.0", max_duration_ms=MAX_DURATION_MS
        )

    def next_id(self) -> str:
        self.count += 1
        return f"I{self.count}"

    def apply(self, applied: Input) -> Transition:
        started = [0]

        def launch(job: Callable[[], None]) -> None:
            started[0] += 1
            launch_on_a_thread(job)

        evaluator = SandboxEvaluator(self.engine, applied.at, launch)
        try:
            transition = apply(self.state, applied, evaluator)
        finally:
            evaluator.close()
        # Every state goes through its stored form, as a run that survives a restart would.
        self.state = load_state(json.loads(json.dumps(dump_state(transition.state))))
        self.history.extend(transition.facts)
        self.launches.append(started[0])
        self.last = transition
        return transition

    def start(self, run_input: Any, at: int = T0, seed: str = "seed") -> Transition:
        return self.apply(Started(self.next_id(), at, run_input, "run-started", seed))

    def answer(self, key: str, at: int, status: str = "succeeded", **fields: Any) -> Transition:
        return self.apply(CallAnswered(self.next_id(), at, key, status, **fields))

    def fire(self, timer_id: str, at: int) -> Transition:
        return self.apply(TimerFired(self.next_id(), at, timer_id))

    def send(self, event: dict[str, Any], at: int) -> Transition:
        return self.apply(EventReceived(self.next_id(), at, event))

    def offer(self, record_id: str, event: dict[str, Any], at: int) -> Transition:
        return self.apply(EventOffered(self.next_id(), at, record_id, event))

    def cancel(self, at: int, reason: str | None = None) -> Transition:
        return self.apply(CancelRequested(self.next_id(), at, "cancel-record", "caller-1", reason=reason))


def steps(transition: Transition) -> list[tuple[str, str, str, str | None]]:
    """(id, type, reference, causation) of each fact after `workflow_input_applied`."""
    return [(f.id, f.type, str(f.data["reference"]), f.causation_id) for f in transition.facts[1:]]


def calls(transition: Transition) -> list[StartCall]:
    return [o for o in transition.outputs if isinstance(o, StartCall)]


def settled(transition: Transition) -> Settle | None:
    return next((o for o in transition.outputs if isinstance(o, Settle)), None)


def outputs_of(transition: Transition, kind: type) -> list[Output]:
    return [o for o in transition.outputs if isinstance(o, kind)]
