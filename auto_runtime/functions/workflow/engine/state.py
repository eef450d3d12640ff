"""A run's state between inputs: the running task runs (activations), timers, calls and counters.

Activation ids grow for the run's whole life, so an id names one task run forever. The state is plain
data; `apply` works on a deep copy and never changes the state it was given.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Activation:
    """One task run in progress (or the run itself, `kind == "root"`, reference `/`).

    A list holder (`root`, `do`, `for`, `try`) runs one list at a time: `list_pointer`, `index` of the
    running child, `data` the list's current data. `cause` is the activation whose entry caused this one's
    first entry (None: the input). `scope` holds the loop and catch names visible inside it.
    """

    id: int
    reference: str
    name: str
    kind: str
    run: int
    parent: int | None
    cause: int | None
    started_in: str = ""
    """The input that started this task run: `cause` counts only in that input (later, the input is the cause)."""
    raw_input: Any = None
    input: Any = None
    started_at: int = 0
    phase: str = "new"
    scope: dict[str, Any] = field(default_factory=dict)
    list_pointer: str | None = None
    index: int = 0
    data: Any = None
    branch: int | None = None
    items: list[Any] | None = None
    iteration: int = 0
    attempt: int = 0
    first_attempt_at: int = 0
    failed_child: int | None = None
    results: dict[int, Any] = field(default_factory=dict)
    failures: list[tuple[int, int, dict[str, Any]]] = field(default_factory=list)
    end_requested: bool = False
    waited_in: str = ""
    """The input in which this task run last recorded `waiting`."""
    taken: dict[int, dict[str, Any]] = field(default_factory=dict)
    """A listen's events taken so far, by filter index."""
    listener: str | None = None
    timer: str | None = None
    timeout_timer: str | None = None
    attempt_timer: str | None = None
    call_key: str | None = None


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


@dataclass
class RunState:
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
    activations: dict[int, Activation] = field(default_factory=dict)
    next_id: int = 1
    runs: dict[str, int] = field(default_factory=dict)
    times: dict[str, int] = field(default_factory=dict)
    held: int = 0
    """Bytes of data the run held after its last input (spec 13): the values it reaches, each once, 4 KiB per
    running task and the document."""
    timers: dict[str, TimerInfo] = field(default_factory=dict)
    calls: dict[str, CallInfo] = field(default_factory=dict)
    pending: list[tuple[str, int, Any]] = field(default_factory=list)
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
