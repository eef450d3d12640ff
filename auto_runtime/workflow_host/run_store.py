"""Workflow runs in the store: their state in the `workflow_runs` projection, and the senders of their messages.

`RunStore.start_run`, `RunStore.apply_input` and `RunStore.fail_run` send the run's message to its actor (the
run's one writer, `runs.RunActor`), whose handlers (added by `serve`) decide through
`functions.workflow.decisions` and append in ONE append, stating the run stream's version the state stands for:

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

Concurrency: the run's inputs are applied one at a time by its actor, which keeps the decoded state between two
queued inputs. Across servers the append's expected version guards: the run's writer reads the run again and
decides again (`RunStoreConflict` when others kept winning). A failing append (`LeaseLost`, a projection error,
...) changes nothing, neither facts nor timers; the caller sees the exception (`TransitionTooLarge` when the
input records more than one append takes). Outputs other than timers and `Settle` are returned for the caller
to dispatch after the append, each idempotent by its key.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import trio
from cachetools import LRUCache

from auto_runtime.functions.workflow.decisions import (
    DOCUMENT_DIGEST,
    Applied,
    Definition,
    LoadedRun,
    StoredRun,
    WorkflowFailure,
    WorkflowInput,
    WorkflowStart,
    applied_of,
)
from auto_runtime.functions.workflow.engine.decider import apply
from auto_runtime.functions.workflow.engine.model import Input, Started, Transition
from auto_runtime.functions.workflow.engine.sandbox_evaluator import SandboxEvaluator
from auto_runtime.functions.workflow.engine.state import EngineState
from auto_runtime.functions.workflow.engine.state_codec import load_state
from auto_runtime.functions.workflow.run_errors import RunStoreConflict, TransitionTooLarge, UnknownRun
from auto_runtime.functions.workflow.run_state import WORKFLOW_RUNS_PROJECTION
from auto_runtime.ledger import DueKey, LeaseFence, Ledger, PlaybookScope, Record
from auto_runtime.playbooks.actor_limits import ActorLimits
from auto_runtime.playbooks.playbook_host import RUN_ACTORS_INTENSITY, PlaybookActors
from auto_runtime.runs import Loaded, RunWriter
from auto_runtime.runs.facts import RUN_ENDINGS, run_stream
from auto_runtime.runs.workflow_messages import ApplyWorkflowInput, FailWorkflowRun, StartWorkflowRun
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.fair_queue import JobOwner
from auto_runtime.sandbox.interruption import RunControl
from auto_runtime.sandbox.workers import NoWorkerFree, WorkerPool
from auto_runtime.server_clock import WALL_CLOCK
from auto_runtime.supervision import RestartIntensity

__all__ = [
    "Applied",
    "Definition",
    "LoadedRun",
    "RunStore",
    "RunStoreConflict",
    "TransitionTooLarge",
    "UnknownRun",
]

DOCUMENTS_KEPT = 256
WORKER_WAIT_SECONDS = 10.0
"""How long one ask for a sandbox worker waits before asking again (an input waits until it gets one)."""


def _evaluate(engine: SandboxEngine, state: EngineState, applied: Input) -> Transition:
    evaluator = SandboxEvaluator(engine, applied.at)
    try:
        return apply(state, applied, evaluator)
    finally:
        evaluator.close()


def _kept_moving(run_id: str) -> Callable[[], Exception]:
    return lambda: RunStoreConflict(f"other appliers kept winning the run {run_id}; try the input again")


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
        clock: Callable[[], int] = WALL_CLOCK.now_ms,
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
        self._documents: LRUCache[str, dict[str, Any]] = LRUCache(DOCUMENTS_KEPT)
        """Run documents by digest, the last `DOCUMENTS_KEPT` used. Not a cache of definitions (those are the
        playbook actors', `playbooks.definition_documents`): a run's state names the document it started with by
        its digest, kept once as content in the ledger; it is immutable, may be a version long replaced or of a
        retired definition, and is addressed by content rather than by definition and version, so decoding a
        waiting run's state never asks the definitions anything."""
        self._kept: LRUCache[tuple[str, str], None] = LRUCache(DOCUMENTS_KEPT)
        """(playbook, digest) pairs put as content already, the last `DOCUMENTS_KEPT` (a forgotten one is put
        again, which changes nothing)."""
        self.playbooks = playbooks or PlaybookActors(ledger, {}, limits, run_intensity=intensity)
        """The playbook actors that host each run's actor (the definitions' own in a server; a host of its own
        for a store used without definitions); run them before the first input."""
        self.runs = self.playbooks.runs
        """Every run's actor: the workflow runs' messages go to them."""
        self._start = WorkflowStart(self, runtime_version=runtime_version, max_duration_ms=max_duration_ms)
        self._input = WorkflowInput(self)
        self._failure = WorkflowFailure(self)
        handlers = self.runs.handlers
        handlers.add(StartWorkflowRun, self._started)
        handlers.add(ApplyWorkflowInput, self.apply_in)
        handlers.add(FailWorkflowRun, self._failed)

    # -- WorkflowPorts ---------------------------------------------------------------------------------------

    async def transition(self, scope: PlaybookScope, state: EngineState, applied: Input) -> Transition:
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
        row = await self.ledger.queries.workflow_runs.row(scope.org, scope.playbook, run_id)
        return WORKFLOW_RUNS_PROJECTION.decode_row(row) if row is not None else None

    async def is_running(self, scope: PlaybookScope, run_id: str) -> bool:
        """Whether the playbook has a workflow run `run_id` that has not ended (one row read, no history)."""
        row = await self._row(scope, run_id)
        return row is not None and not row["state"].get("ended", False)

    async def load(self, scope: PlaybookScope, run_id: str) -> LoadedRun | None:
        """The run as its last applied input left it, or None when it is no workflow run of the playbook. A state
        stored with its document (before documents were kept as content) gets it kept now (idempotent content)."""
        row = await self._row(scope, run_id)
        if row is None:
            return None
        stored = dict(row["state"])
        digest = stored.pop(DOCUMENT_DIGEST, None)
        if isinstance(digest, str):
            stored["document"] = await self._document(scope, digest)
        state = load_state(stored)
        if not isinstance(digest, str):
            digest = await self.keep_document(scope, state.document)
        cancel = row.get("cancel")
        return LoadedRun(
            state, dict(row["metadata"]), int(row["version"]), digest, cancel if isinstance(cancel, dict) else None
        )

    async def load_stored(self, scope: PlaybookScope, run_id: str) -> Loaded[StoredRun] | None:
        """The run as a failure reads it: its stored state as plain JSON (it may be what broke down), whether it
        ended (in the state, or in a record after it), and its armed due entries."""
        row = await self._row(scope, run_id)
        if row is None:
            return None
        version = int(row["version"])
        history = await self.ledger.read_stream(run_stream(scope, run_id), from_position=version)
        ended = row["state"].get("ended") is True or any(record.type in RUN_ENDINGS for record in history)
        armed = tuple(
            entry.key for entry in await self.ledger.due_work.entries_of_run(scope, run_id) if entry.state == "armed"
        )
        return Loaded(StoredRun(scope, run_id, ended, dict(row["metadata"]), armed), version)

    async def _document(self, scope: PlaybookScope, digest: str) -> dict[str, Any]:
        """The document a run's state names by its digest (kept once as content when a run started)."""
        found = self._documents.get(digest)
        if found is None:
            kept = await self.ledger.get_content(scope, digest)
            if kept is None:
                raise LookupError(f"the workflow document {digest} is not kept in the playbook")
            found = json.loads(kept)
            self._documents[digest] = found
        return found

    async def keep_document(self, scope: PlaybookScope, document: dict[str, Any]) -> str:
        """Keep a run's document as content (idempotent, once per playbook and document); answers its digest."""
        text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        digest = hashlib.sha256(text).hexdigest()
        if (scope.key, digest) not in self._kept:
            await self.ledger.put_content(scope, text)
            self._kept[(scope.key, digest)] = None
            self._documents[digest] = document
        return digest

    # -- the run actor's handlers ----------------------------------------------------------------------------

    async def _started(self, writer: RunWriter, message: StartWorkflowRun) -> Applied:
        return await self.start_in(writer, message)

    async def start_in(self, writer: RunWriter, message: StartWorkflowRun) -> Applied:
        """Start the run as its actor (`writer`): for a start that is already in the run's actor (a request's
        start, `RunService`); anyone else sends `start_run`. A run id whose stream exists is stale."""
        try:
            written = await writer.write(self._start, message, kept_moving=_stale_start, attempts=1)
        except _StaleStart:
            return Applied(stale=True)
        return applied_of(written.reply, written.appended)

    async def apply_in(self, writer: RunWriter, message: ApplyWorkflowInput) -> Applied:
        """Apply an input as the run's actor (`writer`), on the state it kept from the last input when it has one
        (see `functions.workflow.decisions.WorkflowInput`). Anyone else sends `apply_input`."""
        written = await writer.write(self._input, message, kept_moving=_kept_moving(writer.run_id))
        return applied_of(written.reply, written.appended)

    async def _failed(self, writer: RunWriter, message: FailWorkflowRun) -> Record | None:
        written = await writer.write(self._failure, message, kept_moving=_kept_moving(writer.run_id))
        return written.appended[0] if written.reply and written.appended else None

    # -- senders ---------------------------------------------------------------------------------------------

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
        fired: Sequence[DueKey] = (),
    ) -> Applied:
        """Record `run_started` and apply the `Started` input in one append (stream version 0), through the run's
        actor, with the marks of the `fired` entries the start came from.

        `causation_id` is the cause of `run_started` (a caller's `step_waiting`); `extra_metadata` adds to
        (or, for `correlation_id`, replaces) the metadata every record of the run carries: a callee's
        `called_by`, `call_depth` and its tree's top run as `correlation_id`.
        A run id whose stream exists already is stale: nothing is appended (a second start of one run
        changes nothing, whoever asked first).
        """
        message = StartWorkflowRun(
            definition, run_input, caller_id, call_bounds_ms, causation_id, extra_metadata, fence, tuple(fired)
        )
        return await self.runs.ask(scope, run_id, message)

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

        The input goes through the run's actor: the inputs of one run are applied one at a time, in the order
        they were sent, and a second queued input finds the run's decoded state in the actor's memory. The actor
        passivates once no message of the run waits. A full mailbox raises `MailboxFull`.

        `UnknownRun` when the playbook has no workflow run `run_id`; stale (nothing appended) when the
        state has taken the input already or ignores it (an ended run, a timer or call it no longer has).
        """
        if isinstance(applied, Started):
            raise TypeError("start a run with start_run")
        return await self.runs.ask(scope, run_id, ApplyWorkflowInput(applied, fence, tuple(fired)))

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
        (nothing appended, nothing marked)."""
        return await self.runs.ask(scope, run_id, FailWorkflowRun(incident, fence, tuple(fired)))


class _StaleStart(Exception):
    """A start met a stream that exists: another start won."""


def _stale_start() -> Exception:
    return _StaleStart()
