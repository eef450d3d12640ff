"""A workflow run's decisions: what its start, one input and its failure record, as data for the run's writer.

The engine's `apply` decides a transition (on a sandbox worker, through the `WorkflowPorts` the store gives);
this module turns it into the run's records (the input, its steps, `run_deferred`, the ending), the events it
emits (each in its own stream, in the same append), and its due-work changes (timers, the outbox of calls,
cancels and answers, the marks of the entries the input came from). Nothing here appends: the run's actor
(`runs.RunWriter`) does, with the version the state was loaded at, and decides again on a version clash.

Rules kept from the store this came from:
- a start whose run's stream exists already is stale (nothing appended), whoever asked first;
- an input the state has taken already, or ignores, is stale and appends nothing; a stale answer holds only on
  the state as the ledger holds it now (`Decision.fresh_only`), since another server may have moved the run;
- a run asked to cancel takes the cancel before any other input: the pending cancel is applied, and the input
  it came with is stale;
- an input that records more facts than one append takes raises `TransitionTooLarge` (nothing appended).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from auto_runtime.events.cloudevents import read_event
from auto_runtime.functions.workflow.engine.decider import new_state
from auto_runtime.functions.workflow.engine.model import (
    ArmTimer,
    CancelCall,
    CancelRequested,
    CancelTimer,
    EmitEvent,
    Input,
    Settle,
    StartCall,
    Started,
    Transition,
)
from auto_runtime.functions.workflow.engine.state import EngineState
from auto_runtime.functions.workflow.engine.state_codec import dump_state
from auto_runtime.functions.workflow.listeners import LISTENING_METADATA, open_listeners
from auto_runtime.functions.workflow.outbox import (
    answer_key,
    answer_payload,
    call_key,
    call_payload,
    callee_cancel_key,
    caller_call_key,
    cancel_key,
    cancel_of,
    cancel_payload,
    in_request,
)
from auto_runtime.functions.workflow.run_errors import TransitionTooLarge, UnknownRun
from auto_runtime.functions.workflow.run_state import STATE_METADATA, WORKFLOW_INPUT_APPLIED
from auto_runtime.json_limits import canonical_digest
from auto_runtime.ledger import (
    MAX_RECORDS_PER_APPEND,
    DueEntry,
    DueKey,
    DueWorkChanges,
    NewRecord,
    PlaybookScope,
    Record,
    StreamWrite,
    uuid7,
)
from auto_runtime.playbooks.event_publishing import EVENT_PUBLISHED, event_stream, published_data
from auto_runtime.runs import NO_DUE_WORK, Decision, Loaded
from auto_runtime.runs.facts import RUN_FAILED, RUN_REJECTED, RUN_STARTED, RUN_SUCCEEDED
from auto_runtime.runs.workflow_messages import (
    Applied,
    ApplyWorkflowInput,
    Definition,
    FailWorkflowRun,
    StartWorkflowRun,
)

RUN_DEFERRED = "run_deferred"
PARENT_ENDED = "The workflow run {run_id} that waited for this run ended first."
DEADLINE = "The workflow that waited for this run ran out of time."
__all__ = ["Applied", "Definition", "LoadedRun", "WorkflowFailure", "WorkflowInput", "WorkflowStart"]

DOCUMENT_DIGEST = "document_sha256"
"""The key under which a stored state names its document, kept once as content instead of in every record."""


@dataclass(frozen=True)
class LoadedRun:
    """A run as its last applied input left it: its state, the metadata its records repeat, its stream version."""

    state: EngineState
    metadata: dict[str, Any]
    version: int
    document_digest: str
    """The digest its document is kept under as content."""
    cancel: dict[str, Any] | None = None
    """The request to cancel the run recorded and not yet taken (`run_state`: the `cancel:` entry's payload)."""

    @property
    def call_depth(self) -> int:
        depth = self.metadata.get("call_depth", 0)
        return depth if isinstance(depth, int) else 0


@dataclass(frozen=True)
class RunAt:
    """A loaded run and the playbook it is in (a workflow input's state)."""

    scope: PlaybookScope
    run: LoadedRun


@dataclass(frozen=True)
class StoredRun:
    """A run as a failure reads it: its stored state as plain JSON (it may be what broke down), its metadata,
    whether it has ended, and the keys of its armed due entries."""

    scope: PlaybookScope
    run_id: str
    ended: bool
    metadata: dict[str, Any]
    armed: tuple[str, ...]


class WorkflowPorts(Protocol):
    """What the decisions read and compute through (the store: the projection, content, the sandbox pool)."""

    def clock(self) -> int:
        """Now, in milliseconds since 1970 UTC."""

    def transition(self, scope: PlaybookScope, state: EngineState, applied: Input) -> Awaitable[Transition]:
        """The engine's transition, computed on a sandbox worker."""

    def load(self, scope: PlaybookScope, run_id: str) -> Awaitable[LoadedRun | None]:
        """The run as its last input left it, or None when the playbook has no workflow run `run_id`."""

    def load_stored(self, scope: PlaybookScope, run_id: str) -> Awaitable[Loaded[StoredRun] | None]:
        """The run as a failure reads it, or None."""

    def keep_document(self, scope: PlaybookScope, document: dict[str, Any]) -> Awaitable[str]:
        """Keep a run's document as content (idempotent); its digest."""


def moment(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def _ending(settle: Settle, metadata: Mapping[str, Any]) -> NewRecord:
    if settle.status == "succeeded":
        return NewRecord(RUN_SUCCEEDED, {"output": settle.output, "record": {}}, dict(metadata))
    rejection = settle.rejection or {}
    data = {key: value for key, value in rejection.items() if value not in (None, [], ())}
    data["record"] = {}
    return NewRecord(RUN_REJECTED, data, dict(metadata))


def input_records(
    transition: Transition,
    metadata: Mapping[str, Any],
    run_id: str,
    document_digest: str,
    *,
    first: bool = False,
) -> list[NewRecord]:
    """The run's records of a transition: the input, its steps, `run_deferred` after the first input of a run it
    did not end, and the ending. `first`: the append also holds `run_started`.

    The input's record carries the new state in its metadata, its document named by `document_digest` (kept once
    as content), and the run's open listens (`listening`: listener id → literal types) for the listeners
    projection, which cannot read the document."""
    dumped = dump_state(transition.state)
    listening = open_listeners(dumped)
    dumped.pop("document")
    state = json.loads(json.dumps({**dumped, DOCUMENT_DIGEST: document_digest}))
    applied_id = transition.facts[0].id
    records: list[NewRecord] = []
    for fact in transition.facts:
        shown = {**metadata, "causation_id": fact.causation_id}
        if fact.type == WORKFLOW_INPUT_APPLIED:
            shown[STATE_METADATA] = state
            shown[LISTENING_METADATA] = listening
        records.append(NewRecord(fact.type, dict(fact.data), shown, id=fact.id))
    settle = next((o for o in transition.outputs if isinstance(o, Settle)), None)
    if first and settle is None:
        records.append(NewRecord(RUN_DEFERRED, {"waits": True}, {**metadata, "causation_id": applied_id}))
    if settle is not None:
        records.append(_ending(settle, {**metadata, "causation_id": applied_id}))
    emitted = sum(1 for o in transition.outputs if isinstance(o, EmitEvent))
    total = len(records) + emitted + (1 if first else 0)
    if total > MAX_RECORDS_PER_APPEND:
        raise TransitionTooLarge(
            f"the input {applied_id} of the run {run_id} records {total} facts, "
            f"more than the {MAX_RECORDS_PER_APPEND} one append takes"
        )
    return records


def emitted_writes(transition: Transition, scope: PlaybookScope, metadata: Mapping[str, Any]) -> list[StreamWrite]:
    """The events the input emits, each recorded as `publish_event` would (`event_published`, in the stream of its
    source and id), in the input's append: an emit is recorded exactly when its step is.

    Metadata names the run, its definition and `depth` (the run's depth + 1); the cause is the input."""
    writes: list[StreamWrite] = []
    depth = metadata.get("depth", 0)
    for output in transition.outputs:
        if not isinstance(output, EmitEvent):
            continue
        event = read_event(output.event)
        event_id = str(output.event["id"])
        time = str(output.event["time"])
        record = NewRecord(
            EVENT_PUBLISHED,
            published_data(event, event_id, time, []),
            {
                "correlation_id": metadata.get("correlation_id"),
                "causation_id": transition.facts[0].id,
                "by": metadata.get("by"),
                "run_id": metadata.get("run_id"),
                "definition": metadata.get("definition"),
                "depth": (depth if isinstance(depth, int) else 0) + 1,
            },
        )
        writes.append(StreamWrite(event_stream(scope, event.source, event_id), 0, [record]))
    return writes


def transition_due_work(
    transition: Transition,
    scope: PlaybookScope,
    run_id: str,
    at: int,
    metadata: Mapping[str, Any],
    before: EngineState | None = None,
    fired: Sequence[DueKey] = (),
) -> DueWorkChanges:
    """The due-work changes of a transition: its timers, the outbox entries of its calls, cancels and ending (see
    `functions.workflow.outbox`), and the marks of the entries the input came from (`fired`)."""
    arm: list[DueEntry] = []
    cancel: list[DueKey] = []
    now = moment(at)
    callee_types = _callee_types(before, transition)
    for o in transition.outputs:
        if isinstance(o, ArmTimer):
            arm.append(DueEntry(scope, run_id, o.timer_id, moment(o.due_at), {"purpose": o.purpose}))
        elif isinstance(o, CancelTimer):
            cancel.append(DueKey(scope, run_id, o.timer_id))
        elif isinstance(o, StartCall):
            arm.append(DueEntry(scope, run_id, call_key(o.run_id), now, call_payload(o)))
        elif isinstance(o, CancelCall):
            cancel.append(DueKey(scope, run_id, call_key(o.run_id)))
            callee_type = callee_types.get(o.run_id, "workflow")
            if not in_request(callee_type):
                reason = PARENT_ENDED.format(run_id=run_id) if o.kind == "parent_ended" else DEADLINE
                payload = cancel_payload(o.kind, run_id, transition.facts[0].id, reason)
                arm.append(DueEntry(scope, o.run_id, callee_cancel_key(callee_type, o.run_id), now, payload))
        elif isinstance(o, Settle) and isinstance(metadata.get("called_by"), dict):
            called_by = metadata["called_by"]
            payload = answer_payload(caller_call_key(called_by), o.status, o.output, o.rejection)
            arm.append(DueEntry(scope, str(called_by["run_id"]), answer_key(run_id), now, payload))
    return DueWorkChanges(arm=arm, cancel=cancel, fire=fired)


def _callee_types(before: EngineState | None, transition: Transition) -> dict[str, str]:
    """The type of each callee the run knew before the input or started in it, by callee run id."""
    types = {call.run_id: call.definition_type for call in (before.calls.values() if before else ())}
    types.update({o.run_id: o.definition_type for o in transition.outputs if isinstance(o, StartCall)})
    return types


@dataclass(frozen=True)
class Transitioned:
    """A decision's reply before the append: the transition and its due work (`applied_of` makes the `Applied`
    once the records are appended); None for a stale input."""

    transition: Transition | None
    due_work: DueWorkChanges = NO_DUE_WORK
    arms: bool = False
    """For a stale input that took a pending cancel first: whether that cancel armed due work."""


def applied_of(transitioned: Transitioned, appended: list[Record]) -> Applied:
    """What a start or input did, once its decision is appended."""
    transition = transitioned.transition
    if transition is None:
        return Applied(stale=True, arms=transitioned.arms)
    settle = next((o for o in transition.outputs if isinstance(o, Settle)), None)
    rest = tuple(o for o in transition.outputs if not isinstance(o, ArmTimer | CancelTimer | Settle))
    return Applied(False, appended, rest, settle, arms=bool(transitioned.due_work.net_arms))


STALE = Transitioned(None)


class WorkflowStart:
    """The decision of `StartWorkflowRun`: `run_started` and the `Started` input's transition at version 0."""

    kind = "workflow-start"

    def __init__(self, ports: WorkflowPorts, *, runtime_version: str, max_duration_ms: int) -> None:
        self.ports = ports
        self.runtime_version = runtime_version
        self.max_duration_ms = max_duration_ms

    async def load(self, ledger: Any, scope: PlaybookScope, run_id: str) -> Loaded[tuple[PlaybookScope, str]]:
        """A start decides on nothing but the run's address; its append expects version 0."""
        return Loaded((scope, run_id), 0)

    async def decide(
        self, loaded: Loaded[tuple[PlaybookScope, str]], message: StartWorkflowRun
    ) -> Decision[Transitioned]:
        scope, run_id = loaded.state
        definition = message.definition
        metadata: dict[str, Any] = {
            "correlation_id": run_id,
            **(message.extra_metadata or {}),
            "by": message.caller_id,
            "run_id": run_id,
            "definition": definition.reference,
        }
        started = NewRecord(
            RUN_STARTED,
            {"input": message.run_input, "input_digest": canonical_digest(message.run_input), "waits": True},
            {**metadata, "causation_id": message.causation_id},
        )
        state = new_state(
            run_id,
            definition.document,
            runtime_version=self.runtime_version,
            max_duration_ms=self.max_duration_ms,
            call_bounds_ms=message.call_bounds_ms,
        )
        applied = Started(uuid7(), self.ports.clock(), message.run_input, started.id, seed=run_id)
        transition = await self.ports.transition(scope, state, applied)
        if transition.stale:
            return Decision(STALE)
        digest = await self.ports.keep_document(scope, definition.document)
        records = [started, *input_records(transition, metadata, run_id, digest, first=True)]
        due = transition_due_work(transition, scope, run_id, applied.at, metadata, fired=message.fired)
        return Decision(
            Transitioned(transition, due),
            records,
            due,
            emitted_writes(transition, scope, metadata),
            message.fence,
        )

    def evolve(self, loaded: Loaded[Any], appended: Sequence[Record]) -> None:
        """A started run's next input loads it from the projection."""
        return None


class WorkflowInput:
    """The decision of `ApplyWorkflowInput` on the run as its last input left it (see the module's rules)."""

    kind = "workflow"

    def __init__(self, ports: WorkflowPorts) -> None:
        self.ports = ports

    async def load(self, ledger: Any, scope: PlaybookScope, run_id: str) -> Loaded[RunAt]:
        loaded = await self.ports.load(scope, run_id)
        if loaded is None:
            raise UnknownRun(f"the playbook {scope.playbook} has no workflow run {run_id}")
        return Loaded(RunAt(scope, loaded), loaded.version)

    async def decide(self, loaded: Loaded[RunAt], message: ApplyWorkflowInput) -> Decision[Transitioned]:
        scope, run = loaded.state.scope, loaded.state.run
        run_id = run.state.run_id
        applied = message.input
        fired = tuple(message.fired)
        if run.cancel is not None and not isinstance(applied, CancelRequested):
            applied = cancel_of(run.cancel, str(uuid7()), self.ports.clock())
            fired = (DueKey(scope, run_id, cancel_key(run_id)),)
            taken = await self._decide(scope, run, applied, message, fired)
            transitioned = taken.reply
            return Decision(
                Transitioned(None, arms=transitioned.transition is not None and bool(transitioned.due_work.net_arms)),
                taken.records,
                taken.due_work,
                taken.other_writes,
                taken.fence,
                fresh_only=taken.fresh_only,
                state_after=taken.state_after,
            )
        return await self._decide(scope, run, applied, message, fired)

    async def _decide(
        self,
        scope: PlaybookScope,
        run: LoadedRun,
        applied: Input,
        message: ApplyWorkflowInput,
        fired: Sequence[DueKey],
    ) -> Decision[Transitioned]:
        run_id = run.state.run_id
        transition = await self.ports.transition(scope, run.state, applied)
        if transition.stale:
            return Decision(STALE, fresh_only=True)
        records = input_records(transition, run.metadata, run_id, run.document_digest)
        due = transition_due_work(transition, scope, run_id, applied.at, run.metadata, run.state, fired)
        after = RunAt(scope, LoadedRun(transition.state, run.metadata, run.version + len(records), run.document_digest))
        return Decision(
            Transitioned(transition, due),
            records,
            due,
            emitted_writes(transition, scope, run.metadata),
            message.fence,
            state_after=after,
        )

    def evolve(self, loaded: Loaded[RunAt], appended: Sequence[Record]) -> None:
        """The state after an input is the decision's (`state_after`); never folded from records."""
        return None


class WorkflowFailure:
    """The decision of `FailWorkflowRun`: `run_failed` with the incident, its armed entries cancelled (those it
    came from marked fired), and a caller waiting for it answered `failed`; nothing for an ended run."""

    kind = "workflow-failure"

    def __init__(self, ports: WorkflowPorts) -> None:
        self.ports = ports

    async def load(self, ledger: Any, scope: PlaybookScope, run_id: str) -> Loaded[StoredRun | None]:
        stored = await self.ports.load_stored(scope, run_id)
        if stored is None:
            return Loaded(None, 0)
        return Loaded(stored.state, stored.version)

    def decide(self, loaded: Loaded[StoredRun | None], message: FailWorkflowRun) -> Decision[bool]:
        run = loaded.state
        if run is None or run.ended:
            return Decision(False)
        scope, run_id = run.scope, run.run_id
        failed = NewRecord(
            RUN_FAILED,
            {"reason": "internal", "detail": "The run failed inside the server.", "instance": message.incident},
            {**run.metadata, "causation_id": None},
        )
        arm: list[DueEntry] = []
        called_by = run.metadata.get("called_by")
        if isinstance(called_by, dict):
            payload = {"key": caller_call_key(called_by), "status": "failed", "incident": message.incident}
            arm.append(
                DueEntry(scope, str(called_by["run_id"]), answer_key(run_id), moment(self.ports.clock()), payload)
            )
        fired = tuple(message.fired)
        cancel = [DueKey(scope, run_id, key) for key in run.armed if DueKey(scope, run_id, key) not in fired]
        return Decision(True, [failed], DueWorkChanges(arm=arm, cancel=cancel, fire=fired), fence=message.fence)

    def evolve(self, loaded: Loaded[Any], appended: Sequence[Record]) -> None:
        """A failed run has ended: nothing to keep."""
        return None
