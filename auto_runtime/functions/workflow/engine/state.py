"""A run's state between inputs: the running task runs (by activation id), timers, calls and counters, and the
decider's queued messages.

The state is plain data; `apply` works on a deep copy and never changes the state it was given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from auto_runtime.functions.workflow.engine.model import CallAnswered
from auto_runtime.functions.workflow.engine.task_runs import TaskRun


@dataclass
class TimerInfo:
    activation: int | None
    purpose: str
    armed_in: str
    due_at: int
    armed_at: int = 0


@dataclass
class CallInfo:
    activation: int
    run_id: str
    definition_type: str
    name: str
    waited_in: str


@dataclass(frozen=True)
class Begin:
    """Begin a task run the decider started (its entry, its body)."""

    activation: int


@dataclass(frozen=True)
class TimerDue:
    """A timer the task run armed fired."""

    activation: int
    timer: TimerInfo


@dataclass(frozen=True)
class Answered:
    """The run a call task run started ended."""

    activation: int
    answer: CallAnswered


@dataclass(frozen=True)
class EventTaken:
    """A listen took an event."""

    activation: int
    event: Mapping[str, Any]


QueuedMessage = Begin | TimerDue | Answered | EventTaken
"""A message in the decider's queue for the task run `activation`, processed in order within an input."""


@dataclass
class EngineState:
    """The workflow engine's state of one run (the decider's; a run's view for callers is `playbooks.run_view`)."""

    run_id: str
    document: dict[str, Any]
    runtime_version: str
    max_duration_ms: int
    call_bounds_ms: dict[str, int] = field(default_factory=dict)
    started_at: int = 0
    last_at: int = 0
    seed: str = ""
    run_input: Any = None
    context: Any = field(default_factory=dict)
    activations: dict[int, TaskRun] = field(default_factory=dict)
    next_id: int = 1
    runs: dict[str, int] = field(default_factory=dict)
    times: dict[str, int] = field(default_factory=dict)
    held: int = 0
    """Bytes of data the run held after its last input (spec 13): the values it reaches, each once, 4 KiB per
    running task and the document."""
    timers: dict[str, TimerInfo] = field(default_factory=dict)
    calls: dict[str, CallInfo] = field(default_factory=dict)
    pending: list[QueuedMessage] = field(default_factory=list)
    """What a yield left for the next input (only `Begin` messages, which is all a stored state keeps)."""
    inbox: list[dict[str, Any]] = field(default_factory=list)
    received: list[str] = field(default_factory=list)
    """Ids of the events sent to the run, so an id sent again is stale."""
    received_bytes: int = 0
    emitted: int = 0
    emitted_bytes: int = 0
    tasks_since_wait: int = 0
    quick_inputs: int = 0
    """Inputs in a row in which the run woke itself (a yield, a timer of less than `decider.OUTSIDE_WAIT_MS`); any
    other input sets it back to 0 (spec 13, "Inputs without waiting")."""
    inputs: int = 0
    started: bool = False
    ended: bool = False
