"""The workflow runtime of one server: starts workflow runs, takes sent events and cancellations, and runs
the timer loop that moves every waiting run on.

`RunService.run_definition` hands runs of type `workflow` to `start` (through the `WaitingRuns` interface),
after it checked the input's limits, the definition and the run id's earlier runs. `start` checks the input
against the document's `input.schema`, then records `run_started`, the first input and (unless the run ended
in it) `run_deferred` in one append (`RunStore.start_run`), and wakes the loop to carry out what the input
decided (calls, timers).

Rules:

- Only the server holding a run's partition (`TimerLoop.partitions`) starts the run and applies events sent to
  it, each under the partition's fence. Any other server takes the request all the same: it records it for the
  holder (`forwarded`), which applies it; a start then waits for the run to begin and answers as the holder would.
  While the server stops, starts and sent events answer `unavailable` with `Retry-After` (seeds: "While the
  runtime is stopping, `run_definition` returns `unavailable`").
- A start that names no run id never goes to another server while this one holds partitions: `new_run_id` picks
  its id in a partition this server keeps (`runs.ids.run_id_in`), and `RunService` uses it for every run that
  waits (workflows, interaction requests, builds: their later work is due work of the run's partition). Should the
  partition change hands between the pick and the start's append, the append's fence refuses it (`LeaseLost`)
  and the start goes to the new holder as any other. A server holding none (one that just started) picks any id,
  and a server holding every partition (SQLite's) draws nothing.
- `cancel` records `run_cancel_requested` on any server, with the `cancel:` outbox entry the holder carries
  out in the same append (woken by `LISTEN/NOTIFY` when it is another server); asking again before the run ended
  records nothing.
- A waiting run holds nothing in memory: its state is in the `workflow_runs` projection, its timers and
  effects in the due-work table.

Supervision: `run` (or `child_spec`, the server's `workflows` child) runs the runtime's own supervisor,
one_for_one: the timer loop first (its first sweep claims its partitions before it reports started), then each follower
added with `add_follower`, a child of its own with its restart type. A follower that fails is restarted alone;
the timer loop and the other followers keep running. Past `WORKFLOW_HOST_INTENSITY` the supervisor stops every
child and fails upward. Nothing a child holds in memory is needed again: each resumes from what the ledger keeps
(the timer loop and the deliveries from the due-work table, the reactions from their partitions' saved feed
positions, the recall keeper from the views' checkpoints).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Any, Final

import trio

from auto_runtime.clock_text import iso_utc
from auto_runtime.events.cloudevents import read_event
from auto_runtime.functions.workflow.engine.model import EventReceived
from auto_runtime.functions.workflow.outbox import cancel_key, cancel_payload
from auto_runtime.json_limits import json_size
from auto_runtime.ledger import (
    DueEntry,
    DueKey,
    Fences,
    LeaseFence,
    LeaseLost,
    Ledger,
    LedgerUnavailable,
    NewRecord,
    PlaybookScope,
    uuid7,
)
from auto_runtime.playbooks.actor_limits import ActorLimits
from auto_runtime.playbooks.definition_registry import DefinitionVersion
from auto_runtime.playbooks.run_service import RunService
from auto_runtime.problems import InputIssue, Rejection, invalid_input, not_found, unavailable
from auto_runtime.runs import RunWriter
from auto_runtime.runs.cancels import CancelRun, record_cancel_request
from auto_runtime.runs.ids import canonical_run_id, is_run_id, run_id_in
from auto_runtime.runs.view import RunState
from auto_runtime.runs.workflow_messages import StartWorkflowRun
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.workers import WorkerPool
from auto_runtime.schema_issues import check_off_the_loop
from auto_runtime.server_clock import ServerClock
from auto_runtime.supervision import ChildContext, ChildSpec, Restart, RestartIntensity, Supervisor
from auto_runtime.workflow_host.calls import CallDispatcher
from auto_runtime.workflow_host.forwarded import EVENT_PREFIX, OFFER_PREFIX, START_KEY, ForwardedRequests
from auto_runtime.workflow_host.run_store import Applied, Definition, RunStore, UnknownRun
from auto_runtime.workflow_host.timer_loop import DueHandler, TimerLoop

RETRY_AFTER_SECONDS = 1
STOPPING = "This server is stopping; send the same request again shortly."
MAX_SENT_EVENT_BYTES = 256 * 1024
"""The metadata of a run's records that `run_cancel_requested` repeats (its `by` is who asked)."""
SUPERVISOR_NAME: Final = "workflows"
TIMER_LOOP: Final = "timer-loop"
WORKFLOW_HOST_INTENSITY: Final = RestartIntensity(max_restarts=3, period=30.0)
"""The restarts the runtime's supervisor makes of its children (a follower's or the timer loop's failures, a
store fault that ended one) before it gives up and fails upward to the root."""

Follower = Callable[[Fences], Awaitable[None]]
"""Follows the ledger beside the timer loop until cancelled, writing only under the fences it is given (those of
the partitions this server holds; called, partition 0's)."""


class _RuntimeFences:
    """The runtime's `Fences`: its timer loop's partitions, none while the runtime stops."""

    def __init__(self, runtime: WorkflowRuntime) -> None:
        self._runtime = runtime

    def __call__(self) -> LeaseFence | None:
        return None if self._runtime.stopping else self._runtime.loop.partitions()

    def of_key(self, key: str) -> LeaseFence | None:
        return None if self._runtime.stopping else self._runtime.loop.partitions.of_key(key)

    def fence_of(self, partition: int) -> LeaseFence | None:
        return None if self._runtime.stopping else self._runtime.loop.partitions.fence_of(partition)

    def held(self) -> frozenset[int]:
        return frozenset() if self._runtime.stopping else self._runtime.loop.partitions.held()


class WorkflowRuntime:
    """One server's workflow runs: `start`, `send_event`, `cancel`, and `run` (the supervisor of the timer loop and
    the followers; they work in the partitions the server holds). See the module's rules."""

    runs_once = True
    """A workflow runs once for its id (seeds, "Retrying under a run id")."""

    def __init__(
        self,
        ledger: Ledger,
        engine: SandboxEngine,
        runs: RunService,
        *,
        server_id: str,
        runtime_version: str,
        max_duration: timedelta,
        sweep: timedelta,
        nested_runs: int,
        max_open_calls: int = 1000,
        handlers: Mapping[str, DueHandler] | None = None,
        workers: WorkerPool | None = None,
        limits: ActorLimits | None = None,
        clock: ServerClock | None = None,
    ) -> None:
        self.ledger = ledger
        self.clock = clock or ServerClock()
        """The server's clock: run inputs' times, due times, and the sweep's reading of what is due."""
        self.runs = runs
        self.max_duration_ms = int(max_duration.total_seconds() * 1000)
        self.store = RunStore(
            ledger,
            engine,
            runtime_version=runtime_version,
            max_duration_ms=self.max_duration_ms,
            workers=workers,
            limits=limits,
            playbooks=runs.definitions.actors,
            clock=self.clock.now_ms,
        )
        self.loop = TimerLoop(
            self.store,
            server_id,
            sweep,
            CallDispatcher(self.store, runs, max_open_calls),
            nested_runs=nested_runs,
            handlers=handlers,
            clock=self.clock.now,
        )
        self.stopping = False
        self.fences: Fences = _RuntimeFences(self)
        self.forwarded = ForwardedRequests(ledger, self.store, runs, self.fences, self.loop.wake, sweep, self.clock)
        self.loop.handlers[START_KEY] = self.forwarded.apply_start
        self.loop.handlers[EVENT_PREFIX] = self.forwarded.apply_event
        self.loop.handlers[OFFER_PREFIX] = self.forwarded.apply_offer
        """The fences of the partitions this server holds, as the followers and the run services see them."""
        self._children: list[ChildSpec] = [ChildSpec(TIMER_LOOP, self._run_timer_loop, restart=Restart.PERMANENT)]
        self._supervisor: Supervisor | None = None

    def add_due_handler(self, prefix: str, handler: DueHandler) -> None:
        """Carry out the due entries whose keys start with `prefix` with `handler` (a schedule trigger's, say), for
        a handler built after this runtime (it needs the runtime's store); call before `run`."""
        if prefix in self.loop.handlers:
            raise ValueError(f"due entries under {prefix!r} have a handler already")
        self.loop.handlers[prefix] = handler

    def add_follower(self, name: str, follower: Follower, restart: Restart = Restart.PERMANENT) -> None:
        """Run `follower(fences)` beside the timer loop (a reactor that follows the ledger, writing under the fences
        it is given), as the supervisor's child `name`, started after the timer loop and the followers added before
        it; call before `run` or `child_spec`."""
        if self._supervisor is not None:
            raise RuntimeError("followers are added before the runtime's supervisor is built")

        async def run(context: ChildContext) -> None:
            context.started()
            await follower(self.fences)

        self._children.append(ChildSpec(name, run, restart=restart))

    @property
    def supervisor(self) -> Supervisor:
        """The supervisor of the timer loop and the followers (see the module), built on first use."""
        if self._supervisor is None:
            self._supervisor = Supervisor(SUPERVISOR_NAME, self._children, intensity=WORKFLOW_HOST_INTENSITY)
        return self._supervisor

    def child_spec(self, *, shutdown: float = math.inf) -> ChildSpec:
        """The runtime's supervisor as a permanent child of another supervisor (the server's root)."""
        return self.supervisor.child_spec(restart=Restart.PERMANENT, shutdown=shutdown)

    async def after_applied(self, scope: PlaybookScope, run_id: str, applied: Applied) -> None:
        """Carry out what an input applied elsewhere (a trigger's start, an offered event) decided: its effects
        are due work, so the loop looks at the table now."""
        if applied.arms:
            self.loop.wake()

    def fence(self) -> LeaseFence | None:
        """Partition 0's fence while this server holds it and runs workflows, else None."""
        return self.fences()

    def new_run_id(self) -> str:
        """The id of a run started here whose caller named none: in a partition this server keeps, so the run is
        applied here (see the module's rules), else any new id (a server holding none, or stopping)."""
        partitions = self.loop.partitions
        keeping = frozenset[int]() if self.stopping else partitions.keeping()
        if len(keeping) == partitions.count:
            return uuid7()
        return run_id_in(keeping, partitions.count) or uuid7()

    def _taking(self) -> None:
        """Refuse a start or a sent event while the server stops."""
        if self.stopping:
            raise unavailable(STOPPING, retry_after=RETRY_AFTER_SECONDS)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run the supervisor of the timer loop and the followers until cancelled (or until it gives up: it then
        raises `SupervisorFailedError`); `started` once every child has started."""
        await self.supervisor.run(task_status=task_status)

    async def _run_timer_loop(self, context: ChildContext) -> None:
        """The timer loop as a child: its first claim of its partitions is made before `started`, so a server that can
        run workflows does from its first request (unless the ledger cannot take writes at start: then the loop
        claims once it can, and until then starts answer `unavailable`)."""
        with contextlib.suppress(LedgerUnavailable):  # a full disk: the loop claims again after its back-off
            await self.loop.sweep_once()
        async with trio.open_nursery() as nursery:
            await nursery.start(self.loop.run)
            context.started()

    # -- WaitingRuns -----------------------------------------------------------------------------------------

    async def start(
        self,
        writer: RunWriter,
        scope: PlaybookScope,
        definition: DefinitionVersion,
        value: Any,
        run_id: str,
        caller_id: str,
        metadata: Mapping[str, Any] | None,
    ) -> None:
        """Start a run of `definition` under `run_id` (a new id: `RunService` answered earlier runs). Raises the
        run's rejection when it ended rejected in its first input, as a run that ends within its request does."""
        schema = definition.document.get("input_schema")
        if isinstance(schema, dict):
            issues = await check_off_the_loop(schema, value, "/input")
            if issues:
                raise invalid_input(issues)
        self._taking()
        document = await self.runs.definitions.actors.documents.parsed(
            (scope.org, scope.playbook), "workflow", definition.name, definition.version, definition.source
        )
        if isinstance(document, Rejection):
            raise document
        extra = dict(metadata or {})
        cause = extra.pop("causation_id", None)
        causation_id = cause if isinstance(cause, str) else None
        call_bounds = await self._call_bounds(scope, definition)
        fence = self.fences.of_key(run_id)
        forwarded = False
        while True:
            if fence is None:  # another server holds the run's partition: it begins the run
                forwarded = True
                fence = await self.forwarded.record_start(
                    scope, definition, value, run_id, caller_id, causation_id, extra, call_bounds
                )
                if fence is None:
                    return
            message = StartWorkflowRun(
                Definition(definition.name, definition.version, document),
                value,
                caller_id,
                call_bounds_ms=call_bounds,
                causation_id=causation_id,
                extra_metadata=extra,
                fence=fence,
            )
            try:
                applied = await self.store.start_in(writer, message)
                break
            except LeaseLost:  # the partition changed hands since its fence was read: its holder begins the run
                self.loop.partitions.lost_key(run_id)
                fence = None
        if forwarded:  # this server took the partition while the start waited: its entry is done with
            await self.ledger.due_work.mark_fired([DueKey(scope, run_id, START_KEY)], fence=fence)
        if applied.arms:
            self.loop.wake()
        ending = applied.ending
        if ending is not None and ending.status == "rejected":
            raise Rejection.from_record(ending.rejection or {})

    async def _call_bounds(self, scope: PlaybookScope, definition: DefinitionVersion) -> dict[str, int]:
        """The longest runs of the callees the workflow names literally whose bound its document cannot know: an
        interaction function's (its request's `expires`, or a call's 70 s), as its latest version says
        (`longest_run_ms`), by `interaction/<name>` (workflow-format §6, "Wait bound")."""
        bounds: dict[str, int] = {}
        uses = definition.document.get("uses")
        for use in uses if isinstance(uses, list) else []:
            if not isinstance(use, dict) or use.get("type") != "interaction" or not isinstance(use.get("name"), str):
                continue
            try:
                callee = await self.runs.definitions.latest(scope, "interaction", use["name"])
            except Rejection:
                continue
            longest = callee.document.get("longest_run_ms")
            if isinstance(longest, int) and not isinstance(longest, bool):
                bounds[f"interaction/{use['name']}"] = longest
        return bounds

    async def cancel(self, writer: RunWriter, scope: PlaybookScope, state: RunState, message: CancelRun) -> None:
        """Record `run_cancel_requested` and the `cancel:` entry that makes the run apply it, unless the run was
        asked already (a second request records nothing). Called in the run's actor, so no input of the run moves
        its stream meanwhile on this server; the run then takes the cancel before any other input
        (`functions.workflow.decisions.WorkflowInput`)."""

        def entry_of(record: NewRecord) -> DueEntry:
            payload = cancel_payload("requested", message.caller_id, record.id, message.reason)
            return DueEntry(scope, state.run_id, cancel_key(state.run_id), self.clock.now(), payload)

        if await record_cancel_request(writer, message, entry_of):
            self.loop.wake()  # the holder of the run's partition, when another server, the ledger wakes itself

    async def send_event(
        self, scope: PlaybookScope, run_id: str, given: Mapping[str, Any], caller_id: str
    ) -> dict[str, Any]:
        """Deliver an event to a run still `started` (seeds, "Sending an event to a run")."""
        run_id = canonical_run_id(run_id)
        event = dict(given)
        source_given = "source" in event
        checked = read_event(event if source_given else {**event, "source": "/sent"})
        event_id = checked.id if checked.id is not None else str(uuid7())
        time = iso_utc(self.clock.now())
        delivered: dict[str, Any] = {
            "specversion": "1.0",
            "id": event_id,
            "source": checked.source if source_given else f"/callers/{caller_id}",
            "type": checked.type,
            "time": time,
        }
        if checked.subject is not None:
            delivered["subject"] = checked.subject
        if "data" in event:
            delivered["data"] = event["data"]
        size = json_size(delivered)
        if size > MAX_SENT_EVENT_BYTES:
            raise invalid_input(
                [
                    InputIssue(
                        f"event: expected at most {MAX_SENT_EVENT_BYTES:,} bytes as JSON with its id, source and time "
                        f"filled in, not {size:,}.",
                        "/event",
                    )
                ]
            )
        if not (is_run_id(run_id) and await self.store.is_running(scope, run_id)):
            raise not_found(f"The playbook {scope.playbook} has no running workflow with the run id {run_id}.")
        self._taking()
        fence = self.fences.of_key(run_id)
        if fence is None:  # another server holds the run's partition: it applies the event
            await self.forwarded.record_event(scope, run_id, delivered)
            return {"run_id": run_id, "event": delivered}
        try:
            applied = await self.store.apply_input(
                scope, run_id, EventReceived(str(uuid7()), self.clock.now_ms(), delivered), fence=fence
            )
        except LeaseLost:  # the partition changed hands since its fence was read: its holder applies the event
            self.loop.partitions.lost_key(run_id)
            await self.forwarded.record_event(scope, run_id, delivered)
            return {"run_id": run_id, "event": delivered}
        except UnknownRun:
            raise not_found(
                f"The playbook {scope.playbook} has no running workflow with the run id {run_id}."
            ) from None
        if applied.arms:
            self.loop.wake()
        return {"run_id": run_id, "event": delivered}
