"""The messages that change a workflow run: its start, one input, and its failure when an input broke down."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from auto_runtime.functions.workflow.engine.model import Input, Output, Settle
from auto_runtime.ledger import DueKey, LeaseFence, Record
from auto_runtime.runs.messages import RunMessage


@dataclass(frozen=True)
class Definition:
    """The workflow definition a run runs: its name and version, and the checked document."""

    name: str
    version: int
    document: dict[str, Any]

    @property
    def reference(self) -> dict[str, Any]:
        return {"type": "workflow", "name": self.name, "version": self.version}


@dataclass(frozen=True)
class Applied:
    """What one start or input did. `stale`: the state had taken it (or the run had ended or started already),
    and nothing was appended. `outputs` are the transition's outputs other than timers and `Settle`, to dispatch
    now that the facts are appended."""

    stale: bool
    records: list[Record] = field(default_factory=list)
    outputs: tuple[Output, ...] = ()
    ending: Settle | None = None
    """How the run ended when this input ended it."""
    arms: bool = False
    """Whether the input left due work armed (a timer, a call, an answer, a cancel): the timer loop should look
    at the due-work table again now rather than at its next sweep. An input that arms and cancels the same key
    (a deadline armed and cancelled within the input) leaves nothing armed: False."""

    @property
    def status(self) -> str | None:
        """`succeeded` or `rejected` when this input ended the run."""
        return None if self.ending is None else self.ending.status


@dataclass(frozen=True)
class StartWorkflowRun(RunMessage[Applied]):
    """Record `run_started` and apply the `Started` input in one append (a run id whose stream exists is stale)."""

    definition: Definition
    run_input: Any
    caller_id: str
    call_bounds_ms: Mapping[str, int] | None = None
    causation_id: str | None = None
    extra_metadata: Mapping[str, Any] | None = None
    fence: LeaseFence | None = None
    fired: Sequence[DueKey] = ()
    """The due entries the start came from (a start another server took), marked fired in its append."""


@dataclass(frozen=True)
class ApplyWorkflowInput(RunMessage[Applied]):
    """Apply one input (a timer fired, an answer, an event, a cancel) and mark the due entries it came from."""

    input: Input
    fence: LeaseFence | None = None
    fired: Sequence[DueKey] = ()


@dataclass(frozen=True)
class FailWorkflowRun(RunMessage[Record | None]):
    """End a run whose input broke down `failed` with its incident (None: it had ended, nothing recorded)."""

    incident: str
    fence: LeaseFence | None = None
    fired: Sequence[DueKey] = ()
