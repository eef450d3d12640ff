"""Applying inputs to workflow runs durably: one input, one append.

`RunStore.start_run` and `RunStore.apply_input` load the run's state from the `workflow_runs` projection,
call the engine (`decider.apply`) with a `SandboxEvaluator` on a worker thread, and append in ONE append,
stating the run stream's version they read:

- `run_started` (on start only, `data.waits: true`), then `workflow_input_applied` (id = the input's id,
  carrying the new state in its `state` metadata) and the step events `<input id>_<n>` with the
  causation the engine gives them, then `run_succeeded` / `run_rejected` when the engine settles the run;
- with the due-work changes of the transition's `ArmTimer` / `CancelTimer` outputs, and its calls to
  functions that finish within their request kept in the outbox (`outbox`: `StartCall` arms, `CancelCall`
  cancels), in the same transaction (`Ledger.append(..., due_work=...)`), and under the lease's `fence`
  when one is given;
- with the marks of the due-work entries the input came from (`fired`: the timer, answer or cancel entry
  the timer loop fired, the call entry an answer takes out of the outbox), so an input and its entry's mark
  commit together and need no commit of their own. A stale input appends nothing and marks nothing.

Concurrency: appliers of one run race on the stream's version. A `VersionConflict` means another applier
won: the store reloads and applies again, and an input the state has already taken is stale and appends
nothing. A failing append (`LeaseLost`, a projection error, …) changes nothing, neither facts nor timers;
the caller sees the exception (`TransitionTooLarge` when the input records more than one append takes).
Outputs other than timers and `Settle` are returned for the caller to dispatch after the append, each
idempotent by its key.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any, TypeVar

import trio

from auto_runtime.events.cloudevents import read_event
from auto_runtime.functions.workflow.engine.decider import apply, new_state
from auto_runtime.functions.workflow.engine.model import (
    ArmTimer,
    CancelCall,
    CancelRequested,
    CancelTimer,
    EmitEvent,
    Input,
    Output,
    Settle,
    StartCall,
    Started,
    Transition,
)
from auto_runtime.functions.workflow.engine.sandbox_evaluator import SandboxEvaluator
from auto_runtime.functions.workflow.engine.state import EngineState
from auto_runtime.functions.workflow.engine.state_codec import dump_state, load_state
from auto_runtime.json_limits import canonical_digest
from auto_runtime.ledger import (
    MAX_RECORDS_PER_APPEND,
    DueEntry,
    DueKey,
    DueWorkChanges,
    LeaseFence,
    Ledger,
    NewRecord,
    PlaybookScope,
    Record,
    StreamWrite,
    VersionConflict,
    uuid7,
)
from auto_runtime.playbooks.actor_limits import ActorLimits
from auto_runtime.playbooks.event_publishing import EVENT_PUBLISHED, event_stream, published_data
from auto_runtime.playbooks.playbook_host import RUN_ACTORS_INTENSITY, PlaybookActors
from auto_runtime.playbooks.run_facts import RUN_FAILED, RUN_REJECTED, RUN_STARTED, RUN_SUCCEEDED, run_stream
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.fair_queue import JobOwner
from auto_runtime.sandbox.interruption import RunControl
from auto_runtime.sandbox.workers import NoWorkerFree, WorkerPool
from auto_runtime.supervision import RestartIntensity
from auto_runtime.workflow_host.listeners import LISTENING_METADATA, open_listeners
from auto_runtime.workflow_host.outbox import (
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
from auto_runtime.workflow_host.run_actor import InputRefused, between_inputs, input_step
from auto_runtime.workflow_host.run_errors import RunStoreConflict, TransitionTooLarge, UnknownRun
from auto_runtime.workflow_host.run_state import (
    STATE_METADATA,
    WORKFLOW_INPUT_APPLIED,
    WORKFLOW_RUNS_PROJECTION,
)

__all__ = ["Applied", "Definition", "LoadedRun", "RunStore", "RunStoreConflict", "TransitionTooLarge", "UnknownRun"]

T = TypeVar("T")
RUN_DEFERRED = "run_deferred"
PARENT_ENDED = "The workflow run {run_id} that waited for this run ended first."
DEADLINE = "The workflow that waited for this run ran out of time."
MAX_ATTEMPTS = 16
DOCUMENT_DIGEST = "document_sha256"
"""The key under which a stored state names its document, kept once as content instead of in every record."""
DOCUMENTS_KEPT = 256
WORKER_WAIT_SECONDS = 10.0
"""How long one ask for a sandbox worker waits before asking again (an input waits until it gets one)."""
"""Version conflicts one input survives before `RunStoreConflict` (each means another applier won)."""


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
    """What one `start_run` / `apply_input` did. `stale`: the state had taken it (or the run had ended or
    started already), and nothing was appended. `outputs` are the transition's outputs other than timers
    and `Settle`, to dispatch now that the facts are appended."""

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
class LoadedRun:
    """A run as its last applied input left it: its state, the metadata its records repeat, its stream version."""

    state: EngineState
    metadata: dict[str, Any]
    version: int
    document_digest: str | None = None
    """The digest its document is kept under as content (None in a state that still holds its document)."""
    cancel: dict[str, Any] | None = None
    """The request to cancel the run recorded and not yet taken (`run_state`: the `cancel:` entry's payload)."""

    @property
    def call_depth(self) -> int:
        depth = self.metadata.get("call_depth", 0)
        return depth if isinstance(depth, int) else 0


def now_ms() -> int:
    return int(datetime.now(UTC).timestamp() * 1000)


def _moment(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def _evaluate(engine: SandboxEngine, state: EngineState, applied: Input) -> Transition:
    evaluator = SandboxEvaluator(engine, applied.at)
    try:
        return apply(state, applied, evaluator)
    finally:
        evaluator.close()


def _ending(settle: Settle, metadata: Mapping[str, Any]) -> NewRecord:
    if settle.status == "succeeded":
        return NewRecord(RUN_SUCCEEDED, {"output": settle.output, "record": {}}, dict(metadata))
    rejection = settle.rejection or {}
    data = {key: value for key, value in rejection.items() if value not in (None, [], ())}
    data["record"] = {}
    return NewRecord(RUN_REJECTED, data, dict(metadata))


class RunStore:
    """Starts workflow runs and applies their inputs, one append per input (see the module's rules).

    The ledger must have been opened with `WORKFLOW_RUNS_PROJECTION` (and, for `get_run`, the `runs`
    projection). `clock` gives the time of `Started` inputs in milliseconds since 1970 UTC.
    """

    def __init__(
        self,
        ledger: Ledger,
        engine: SandboxEngine,
        *,
        runtime_version: str,
        max_duration_ms: int,
        clock: Callable[[], int] = now_ms,
        workers: WorkerPool | None = None,
        limits: ActorLimits | None = None,
        intensity: RestartIntensity = RUN_ACTORS_INTENSITY,
        playbooks: PlaybookActors | None = None,
    ) -> None:
        self.ledger = ledger
        self.engine = engine
        self.workers = workers
        self.runtime_version = runtime_version
        self.max_duration_ms = max_duration_ms
        self.clock = clock
        self._documents: dict[str, dict[str, Any]] = {}
        """Run documents by digest, the last `DOCUMENTS_KEPT` used. Not a cache of definitions (those are the
        playbook actors', `playbooks.definition_documents`): a run's state names the document it started with by
        its digest, kept once as content in the ledger; it is immutable, may be a version long replaced or of a
        retired definition, and is addressed by content rather than by definition and version, so decoding a
        waiting run's state never asks the definitions anything."""
        self._kept: dict[tuple[str, str], None] = {}
        """(playbook, digest) pairs put as content already, the last `DOCUMENTS_KEPT` (a forgotten one is put
        again, which changes nothing)."""
        self.playbooks = playbooks or PlaybookActors(ledger, {}, limits, run_intensity=intensity)
        """The playbook actors that host each run's actor (the definitions' own in a server; a host of its own
        for a store used without definitions); run them before the first input."""
        self.actors = self.playbooks.inputs
        """One actor per run that has inputs to apply (see `apply_input`), under its playbook's actor."""

    async def _transition(self, scope: PlaybookScope, state: EngineState, applied: Input) -> Transition:
        """Apply the input on a worker of the sandbox pool (`COMPUTATION_WORKERS`, shared with computation
        runs: spec settled point 4), waiting in the playbook's place of its fair queue as long as it takes for
        a free one (the wait counts against no bound of the input); without a pool, on a thread of Trio's own."""
        if self.workers is None:
            return await trio.to_thread.run_sync(_evaluate, self.engine, state, applied)
        engine = self.engine

        def job(control: RunControl) -> tuple[Transition, bool]:
            return _evaluate(engine, state, applied), False

        while True:
            try:
                return await self.workers.submit(
                    job, RunControl(time.monotonic() + WORKER_WAIT_SECONDS), owner=JobOwner(scope.org, scope.playbook)
                )
            except NoWorkerFree:
                continue

    async def _row(self, scope: PlaybookScope, run_id: str) -> dict[str, Any] | None:
        """The run's `workflow_runs` row, its state still as stored (JSON), or None."""
        rows = await self.ledger.fetch(
            "SELECT * FROM workflow_runs WHERE org = ? AND playbook = ? AND run_id = ?",
            [scope.org, scope.playbook, run_id],
        )
        return WORKFLOW_RUNS_PROJECTION.decode_row(rows[0]) if rows else None

    async def is_running(self, scope: PlaybookScope, run_id: str) -> bool:
        """Whether the playbook has a workflow run `run_id` that has not ended (one row read, no history)."""
        row = await self._row(scope, run_id)
        return row is not None and not row["state"].get("ended", False)

    async def load(self, scope: PlaybookScope, run_id: str) -> LoadedRun | None:
        """The run as its last applied input left it, or None when it is no workflow run of the playbook."""
        row = await self._row(scope, run_id)
        if row is None:
            return None
        stored = dict(row["state"])
        digest = stored.pop(DOCUMENT_DIGEST, None)
        if isinstance(digest, str):
            stored["document"] = await self._document(scope, digest)
        cancel = row.get("cancel")
        return LoadedRun(
            load_state(stored),
            dict(row["metadata"]),
            int(row["version"]),
            digest if isinstance(digest, str) else None,
            cancel if isinstance(cancel, dict) else None,
        )

    async def _document(self, scope: PlaybookScope, digest: str) -> dict[str, Any]:
        """The document a run's state names by its digest (kept once as content when a run started)."""
        found = self._documents.pop(digest, None)
        if found is None:
            kept = await self.ledger.get_content(scope, digest)
            if kept is None:
                raise LookupError(f"the workflow document {digest} is not kept in the playbook")
            found = json.loads(kept)
        self._documents[digest] = found
        while len(self._documents) > DOCUMENTS_KEPT:
            self._documents.pop(next(iter(self._documents)))
        return found

    async def _keep_document(self, scope: PlaybookScope, document: dict[str, Any]) -> str:
        """Keep a run's document as content (idempotent, once per playbook and document); answers its digest."""
        text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        digest = hashlib.sha256(text).hexdigest()
        if (scope.key, digest) not in self._kept:
            await self.ledger.put_content(scope, text)
            self._kept[(scope.key, digest)] = None
            while len(self._kept) > DOCUMENTS_KEPT:
                self._kept.pop(next(iter(self._kept)))
            self._documents[digest] = document
            while len(self._documents) > DOCUMENTS_KEPT:
                self._documents.pop(next(iter(self._documents)))
        return digest

    async def start_run(
        self,
        scope: PlaybookScope,
        run_id: str,
        definition: Definition,
        run_input: Any,
        caller_id: str,
        *,
        call_bounds_ms: Mapping[str, int] | None = None,
        causation_id: str | None = None,
        extra_metadata: Mapping[str, Any] | None = None,
        fence: LeaseFence | None = None,
    ) -> Applied:
        """Record `run_started` and apply the `Started` input in one append (stream version 0).

        `causation_id` is the cause of `run_started` (a caller's `step_waiting`); `extra_metadata` adds to
        (or, for `correlation_id`, replaces) the metadata every record of the run carries: a callee's
        `called_by`, `call_depth` and its tree's top run as `correlation_id`.
        A run id whose stream exists already is stale: nothing is appended (a second start of one run
        changes nothing, whoever asked first).
        """
        stream = run_stream(scope, run_id)
        metadata: dict[str, Any] = {
            "correlation_id": run_id,
            **(extra_metadata or {}),
            "by": caller_id,
            "run_id": run_id,
            "definition": definition.reference,
        }
        started = NewRecord(
            RUN_STARTED,
            {"input": run_input, "input_digest": canonical_digest(run_input), "waits": True},
            {**metadata, "causation_id": causation_id},
        )
        state = new_state(
            run_id,
            definition.document,
            runtime_version=self.runtime_version,
            max_duration_ms=self.max_duration_ms,
            call_bounds_ms=call_bounds_ms,
        )
        applied = Started(uuid7(), self.clock(), run_input, started.id, seed=run_id)
        transition = await self._transition(scope, state, applied)
        if transition.stale:
            return Applied(stale=True)
        digest = await self._keep_document(scope, definition.document)
        records = [started, *self._records(transition, metadata, run_id, digest, first=True)]
        try:
            appended = await self.ledger.append(
                [StreamWrite(stream, 0, records), *self._emitted(transition, scope, metadata)],
                due_work=(due := self._due_work(transition, scope, run_id, applied.at, metadata)),
                fence=fence,
            )
        except VersionConflict:
            return Applied(stale=True)
        return self._applied(transition, appended, due)

    async def apply_input(
        self,
        scope: PlaybookScope,
        run_id: str,
        applied: Input,
        fence: LeaseFence | None = None,
        *,
        fired: Sequence[DueKey] = (),
    ) -> Applied:
        """Apply one input to the run: the facts, the ending, the timer changes and the marks of the `fired`
        entries (those the input came from) in one append.

        The input goes through the run's actor (`run_actor`): the inputs of one run are applied one at a time,
        in the order they were sent, and a second queued input finds the run's decoded state in the actor's
        memory. The actor passivates once no input of the run waits. A full mailbox raises `MailboxFull`.

        `UnknownRun` when the playbook has no workflow run `run_id`; stale (nothing appended) when the
        state has taken the input already or ignores it (an ended run, a timer or call it no longer has).
        """
        if isinstance(applied, Started):
            raise TypeError("start a run with start_run")
        key = (scope.org, scope.playbook, run_id)
        try:
            step = input_step(partial(self.apply_to, scope, run_id, applied=applied, fence=fence, fired=tuple(fired)))
            outcome = await self.actors.ask(key, step, timeout=None)
        finally:
            self.actors.passivate(key)
        if isinstance(outcome, InputRefused):
            raise outcome.error
        assert isinstance(outcome, Applied)
        return outcome

    async def between_inputs(self, scope: PlaybookScope, run_id: str, work: Callable[[], Awaitable[T]]) -> T:
        """Do `work` in the run's actor, between two of its inputs, so that no input of the run is applied in this
        process meanwhile (`run_actor.between_inputs`); raises what `work` raised. A full mailbox raises
        `MailboxFull`."""
        key = (scope.org, scope.playbook, run_id)
        try:
            outcome = await self.actors.ask(key, between_inputs(work), timeout=None)
        finally:
            self.actors.passivate(key)
        if isinstance(outcome, InputRefused):
            raise outcome.error
        answer: T = outcome
        return answer

    async def apply_to(
        self,
        scope: PlaybookScope,
        run_id: str,
        loaded: LoadedRun | None,
        applied: Input,
        fence: LeaseFence | None = None,
        fired: Sequence[DueKey] = (),
    ) -> tuple[Applied, LoadedRun | None]:
        """Apply `applied` to the run as `loaded` holds it (read from the ledger when None, and again after a
        `VersionConflict`: another applier moved the run). Returns what the input did and the run as it left
        it (None when that is unknown: read it again for the next input). Called by the run's actor only.

        A stale answer is only given on the state as the ledger holds it now: a kept state that finds the input
        stale is read again first (another applier may have moved the run to where the input applies), since a
        stale input appends nothing and so meets no version check.

        A run asked to cancel takes the cancel before any other input (the request is a fact of its stream,
        `LoadedRun.cancel`): it ends then, and `applied` is stale."""
        stream = run_stream(scope, run_id)
        for _ in range(MAX_ATTEMPTS):
            read_now = loaded is None
            if loaded is None:
                loaded = await self.load(scope, run_id)
                if loaded is None:
                    raise UnknownRun(f"the playbook {scope.playbook} has no workflow run {run_id}")
            if loaded.cancel is not None and not isinstance(applied, CancelRequested):
                taken, after = await self.apply_to(
                    scope,
                    run_id,
                    loaded,
                    cancel_of(loaded.cancel, str(uuid7()), self.clock()),
                    fence,
                    (DueKey(scope, run_id, cancel_key(run_id)),),
                )
                return Applied(stale=True, arms=taken.arms), after
            transition = await self._transition(scope, loaded.state, applied)
            if transition.stale:
                if not read_now:
                    loaded = None
                    continue
                return Applied(stale=True), loaded
            digest = loaded.document_digest or await self._keep_document(scope, loaded.state.document)
            records = self._records(transition, loaded.metadata, run_id, digest)
            try:
                appended = await self.ledger.append(
                    [
                        StreamWrite(stream, loaded.version, records),
                        *self._emitted(transition, scope, loaded.metadata),
                    ],
                    due_work=(
                        due := self._due_work(
                            transition, scope, run_id, applied.at, loaded.metadata, loaded.state, fired
                        )
                    ),
                    fence=fence,
                )
            except VersionConflict:
                loaded = None
                continue
            after = LoadedRun(transition.state, loaded.metadata, loaded.version + len(records), digest)
            return self._applied(transition, appended, due), after
        raise RunStoreConflict(f"other appliers kept winning the run {run_id}; try the input again")

    async def fail_run(
        self,
        scope: PlaybookScope,
        run_id: str,
        incident: str,
        fence: LeaseFence | None = None,
        *,
        fired: Sequence[DueKey] = (),
    ) -> Record | None:
        """End a run whose input could not be applied (a breakdown inside the runtime) `failed`, with its
        incident, and cancel its timers (marking the `fired` entries, those the input came from, fired in the
        same append); a caller waiting for it is answered `failed`. None when the run had ended or is unknown
        (nothing appended, nothing marked). Reads the stored state as plain JSON, since it may be what broke
        down."""
        for _ in range(MAX_ATTEMPTS):
            row = await self._row(scope, run_id)
            if row is None:
                return None
            state, metadata, version = row["state"], dict(row["metadata"]), int(row["version"])
            history = await self.ledger.read_stream(run_stream(scope, run_id), from_position=version)
            if state.get("ended") is True or any(r.type in (RUN_SUCCEEDED, RUN_REJECTED, RUN_FAILED) for r in history):
                return None
            failed = NewRecord(
                RUN_FAILED,
                {"reason": "internal", "detail": "The run failed inside the server.", "instance": incident},
                {**metadata, "causation_id": None},
            )
            arm: list[DueEntry] = []
            called_by = metadata.get("called_by")
            if isinstance(called_by, dict):
                payload = {"key": caller_call_key(called_by), "status": "failed", "incident": incident}
                arm.append(DueEntry(scope, str(called_by["run_id"]), answer_key(run_id), _moment(now_ms()), payload))
            armed = [
                row.key for row in await self.ledger.due_work.entries_of_run(scope, run_id) if row.state == "armed"
            ]
            cancel = [DueKey(scope, run_id, key) for key in armed if DueKey(scope, run_id, key) not in fired]
            try:
                appended = await self.ledger.append(
                    [StreamWrite(run_stream(scope, run_id), version, [failed])],
                    due_work=DueWorkChanges(arm=arm, cancel=cancel, fire=fired),
                    fence=fence,
                )
            except VersionConflict:
                continue
            return appended[0]
        raise RunStoreConflict(f"other appliers kept winning the run {run_id}; it was not marked failed")

    def _records(
        self,
        transition: Transition,
        metadata: Mapping[str, Any],
        run_id: str,
        document_digest: str,
        *,
        first: bool = False,
    ) -> list[NewRecord]:
        """The run's records of a transition: the input, its steps, `run_deferred` after the first input of a
        run it did not end, and the ending. `first`: the append also holds `run_started`.

        The input's record carries the new state in its metadata, its document named by `document_digest`
        (kept once as content), and the run's open listens (`listening`: listener id → literal types) for the
        listeners projection, which cannot read the document."""
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

    def _emitted(self, transition: Transition, scope: PlaybookScope, metadata: Mapping[str, Any]) -> list[StreamWrite]:
        """The events the input emits, each recorded as `publish_event` would (`event_published`, in the stream
        of its source and id), in the input's append: an emit is recorded exactly when its step is.

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

    def _due_work(
        self,
        transition: Transition,
        scope: PlaybookScope,
        run_id: str,
        at: int,
        metadata: Mapping[str, Any],
        before: EngineState | None = None,
        fired: Sequence[DueKey] = (),
    ) -> DueWorkChanges:
        """The due-work changes of a transition: its timers, the outbox entries of its calls, cancels and
        ending (see `outbox`), and the marks of the entries the input came from (`fired`)."""
        arm: list[DueEntry] = []
        cancel: list[DueKey] = []
        now = _moment(at)
        callee_types = self._callee_types(before, transition)
        for o in transition.outputs:
            if isinstance(o, ArmTimer):
                arm.append(DueEntry(scope, run_id, o.timer_id, _moment(o.due_at), {"purpose": o.purpose}))
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

    @staticmethod
    def _callee_types(before: EngineState | None, transition: Transition) -> dict[str, str]:
        """The type of each callee the run knew before the input or started in it, by callee run id."""
        types = {call.run_id: call.definition_type for call in (before.calls.values() if before else ())}
        types.update({o.run_id: o.definition_type for o in transition.outputs if isinstance(o, StartCall)})
        return types

    def _applied(self, transition: Transition, appended: list[Record], due: DueWorkChanges) -> Applied:
        settle = next((o for o in transition.outputs if isinstance(o, Settle)), None)
        rest = tuple(o for o in transition.outputs if not isinstance(o, ArmTimer | CancelTimer | Settle))
        return Applied(False, appended, rest, settle, arms=bool(due.net_arms))
