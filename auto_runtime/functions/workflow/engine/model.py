"""What moves a run (inputs), what it records (facts) and what it asks the host to do (outputs).

Every input carries `id`, the id the host gives its `workflow_input_applied` event, and `at`, its time in
milliseconds since 1970 UTC; time inside a run never goes backwards. Facts are the events the input records,
in order; outputs are the side effects the host dispatches after it appended them, each idempotent by key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Started:
    """The run's first input: its input as given, its caller's record, the per-run seed (jitter)."""

    id: str
    at: int
    run_input: Any
    run_started_id: str
    seed: str = ""


@dataclass(frozen=True)
class CallAnswered:
    """A called run ended: `status` is `succeeded`, `rejected`, `failed` or `unreachable`."""

    id: str
    at: int
    key: str
    status: str
    output: Any = None
    rejection: Mapping[str, Any] | None = None
    incident: str | None = None


@dataclass(frozen=True)
class TimerFired:
    id: str
    at: int
    timer_id: str


@dataclass(frozen=True)
class EventReceived:
    """An event sent to the run (`send_run_event`), with its id, source and time filled in.

    An event no open listen takes waits in the run's inbox; an id the run received before is stale.
    """

    id: str
    at: int
    event: Mapping[str, Any]


@dataclass(frozen=True)
class EventOffered:
    """A playbook event (record `record_id`) offered to the listens that armed a listener for its type.

    Taken by no open listen, it is stale: playbook events never wait in the inbox.
    """

    id: str
    at: int
    record_id: str
    event: Mapping[str, Any]


@dataclass(frozen=True)
class CancelRequested:
    """`cancel_run` was recorded as `run_cancel_requested` (`cancel_record_id`)."""

    id: str
    at: int
    cancel_record_id: str
    by: str
    kind: str = "requested"
    reason: str | None = None


Input = Started | CallAnswered | TimerFired | EventReceived | EventOffered | CancelRequested


# -- outputs ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ArmTimer:
    timer_id: str
    due_at: int
    purpose: str


@dataclass(frozen=True)
class CancelTimer:
    timer_id: str


@dataclass(frozen=True)
class StartCall:
    """Start the callee run `run_id` (uuid5 of the call key); its `run_started` is caused by `cause_id`."""

    key: str
    run_id: str
    definition_type: str
    name: str
    input: Any
    reference: str
    run: int
    cause_id: str


@dataclass(frozen=True)
class CancelCall:
    key: str
    run_id: str
    kind: str


@dataclass(frozen=True)
class ArmListener:
    """Offer the run the playbook events whose type is one of `types` while the listen is open."""

    listener_id: str
    types: tuple[str, ...]


@dataclass(frozen=True)
class CancelListener:
    listener_id: str


@dataclass(frozen=True)
class EmitEvent:
    event: Mapping[str, Any]


@dataclass(frozen=True)
class Settle:
    """End the run: `status` `succeeded` (with `output`) or `rejected` (with `rejection`)."""

    status: str
    output: Any = None
    rejection: Mapping[str, Any] | None = None


Output = ArmTimer | CancelTimer | StartCall | CancelCall | ArmListener | CancelListener | EmitEvent | Settle

OUTPUT_KINDS: Mapping[type, str] = {
    ArmTimer: "arm_timer",
    CancelTimer: "cancel_timer",
    StartCall: "start_call",
    CancelCall: "cancel_call",
    ArmListener: "arm_listener",
    CancelListener: "cancel_listener",
    EmitEvent: "emit_event",
    Settle: "settle",
}
OUTPUT_KIND_ORDER: tuple[str, ...] = (
    "arm_timer", "cancel_timer", "start_call", "cancel_call", "arm_listener", "cancel_listener", "emit_event", "settle",
)  # fmt: skip


# -- facts --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fact:
    """One event to record: `workflow_input_applied` or a step event."""

    id: str
    type: str
    data: Mapping[str, Any]
    causation_id: str | None


@dataclass(frozen=True)
class Transition:
    """What one applied input does: the new state, the facts to append, the outputs to dispatch after."""

    state: Any
    facts: tuple[Fact, ...] = ()
    outputs: tuple[Output, ...] = ()
    stale: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)
