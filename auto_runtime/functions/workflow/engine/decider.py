"""The decider: `apply(state, input, evaluator) -> Transition`, deterministic and free of effects.

One input moves the run as far as it can go: tasks run until each running one waits (a timer, a call) or
the run ends. The work is a queue of typed messages (`state.Begin`, `TimerDue`, `Answered`, `EventTaken`)
processed in order, so the same state, input and answers always give the same facts and outputs. Each task run
the input moved gets one step entry with the outcome it had when the input ended (spec 12.2); entries are
numbered `<input id>_<n>` in the order they first moved, and each names its cause (spec 12.2 "Causes").

Everything is dispatched by tables keyed by type, never by a name: `INPUT_RULES` by the input's type,
`MESSAGE_HANDLERS` by the queued message's, `TASK_BODIES` by the task run's kind (`task_runs`), and
`TIMER_HANDLERS` by the purpose a task run armed its timer for. A type a table lacks is refused (`NoHandler`).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import random
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum
from typing import Any, Generic, NoReturn, TypeVar

from auto_runtime.events.cloudevents import RESERVED_ATTRIBUTES, RESERVED_TYPES, read_event
from auto_runtime.functions.durations import duration_ms
from auto_runtime.functions.workflow.engine import errors as E  # noqa: N812
from auto_runtime.functions.workflow.engine.evaluation import (
    Evaluator,
    Failed,
    evaluate_condition,
    evaluate_shaping,
    evaluate_template,
)
from auto_runtime.functions.workflow.engine.handlers import NoHandler, handler_for
from auto_runtime.functions.workflow.engine.model import (
    OUTPUT_KIND_ORDER,
    OUTPUT_KINDS,
    ArmListener,
    ArmTimer,
    CallAnswered,
    CancelCall,
    CancelListener,
    CancelRequested,
    CancelTimer,
    EmitEvent,
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
from auto_runtime.functions.workflow.engine.run_values import output_mismatch
from auto_runtime.functions.workflow.engine.state import (
    Answered,
    Begin,
    CallInfo,
    EngineState,
    EventTaken,
    QueuedMessage,
    TimerDue,
    TimerInfo,
)
from auto_runtime.functions.workflow.engine.task_runs import (
    CallRun,
    DoRun,
    EmitRun,
    ForkRun,
    ForRun,
    ListenRun,
    ListHolder,
    RaiseRun,
    RootRun,
    SetRun,
    SwitchRun,
    TaskRun,
    TryRun,
    WaitingRun,
    WaitRun,
    expect,
    task_run_kind,
)
from auto_runtime.functions.workflow.expressions import wrapped_expression
from auto_runtime.json_pointers import escape, tokens_of
from auto_runtime.problems import Rejection

CALL_NAMESPACE = uuid.UUID("9b1f3a52-6c0d-4b8e-9f27-3e5d1c7a2b40")
TASKS_PER_INPUT = 100
TASKS_WITHOUT_WAITING = 10_000
OUTSIDE_WAIT_MS = 1_000
"""The shortest timer a run waits on that counts as waiting (spec 13): a wait, a retry delay or a timeout of at
least a second, the default `WORKFLOW_SWEEP_INTERVAL`. A shorter one, or a yield, is the run waking itself: it
neither resets `tasks_since_wait` nor counts as an input from outside (`quick_inputs`). Fixed rather than read
from the server's sweep, so that a run moves alike on every server whatever its settings."""
INPUTS_WITHOUT_WAITING = 1_000
"""How many inputs in a row a run may wake itself (`OUTSIDE_WAIT_MS`) before it ends `unavailable` with
`WOKE_ITSELF`: a run that loops on a zero wait would otherwise take inputs as fast as the server applies them,
for as long as `MAX_INPUTS` lets it, recording three facts and its state each time. A real workflow does not
get near it: its short waits sit between calls, events or answers, each of which starts the count again, and a
straight run of `TASKS_WITHOUT_WAITING` tasks yields only 100 times (`TASKS_PER_INPUT`); more yields in a row
come only from expressions that pass half an input's work each time, minutes of work waiting for nothing. A
runaway run ends after at most this many inputs, so what it records is bounded by it."""
MAX_INPUTS = 100_000
TOO_MANY_INPUTS = "The run took more than the 100,000 inputs a run may take"
MAX_OUTPUT_BYTES = 1_048_574
MAX_CALL_INPUT_BYTES = 262_144
DEFAULT_CALL_BOUNDS_MS: Mapping[str, int] = {
    "computation": 10_000,
    "recall": 10_000,
    "prediction": 20_000,
    "interaction": 70_000,
    "reasoning": 600_000,
}
CALL_GRACE_MS = 60_000

FOR_IN_NOT_ARRAY = "for.in must give an array to iterate over"
WITH_NOT_MAPPING = "run_definition takes with: { type, name, input }"
WITH_NOT_STRINGS = "run_definition needs a string type and a string name"
CALL_INPUT_TOO_LARGE = "The input of run_definition takes {n} bytes as JSON, more than the 262144 a run takes"
RAISE_NO_ERROR = "raise names no error with a type and a status"
NOT_FINISHED = "The task did not finish within {ms} ms"
INVALID_DURATION = "A duration of the task is not valid: {problem}"
EMIT_REFUSED = "The event to emit is not one the playbook takes: {why}"
TOO_MANY_TASKS = "The workflow ran 10000 tasks without waiting for anything; it would never end (at {reference})"
WOKE_ITSELF = (
    "The workflow woke itself 1000 times in a row without waiting for anything outside itself; "
    "it would never end (at {reference})"
)
INBOX_FULL = "The run's inbox holds more than 64 events or 1 MiB that no listen took"
INBOX_LIFE = "The run received more than 1,024 events or 4 MiB over its life"
EMIT_TOO_LARGE = "The event to emit takes {n} bytes as JSON, more than the 245760 an event takes"
EMIT_BOUND = "The run emitted more than 1,024 events or 4 MiB"
MAX_EVENT_BYTES = 240 * 1024
ENVELOPE_FIELDS = ("specversion", "id", "type", "source", "time")
OUTPUT_TOO_LARGE = "The output of the workflow takes {n} bytes as JSON, more than the 1048574 a run records"
MAX_HELD_BYTES = 4 * 1024 * 1024
MAX_CHANGE_BYTES = 1_572_864
RUNNING_TASK_BYTES = 4096
HOLDS_TOO_MUCH = "The run would hold {n} bytes of data, more than the 4 MiB (4194304 bytes) a run may hold"
CHANGED_TOO_MUCH = "One input added {n} bytes to the data the run holds, more than the 1572864 an input may add"


def new_state(
    run_id: str,
    document: dict[str, Any],
    *,
    runtime_version: str,
    max_duration_ms: int,
    call_bounds_ms: Mapping[str, int] | None = None,
) -> EngineState:
    """The state of a run that has not taken its `started` input yet.

    `call_bounds_ms` are the callees' longest runs the host resolved at the start, by `type/name` or by type
    (an interaction request's `expires`, a reasoning function's model deadline); the defaults stand for the rest.
    """
    return EngineState(run_id, document, runtime_version, max_duration_ms, call_bounds_ms=dict(call_bounds_ms or {}))


def call_run_id(run_id: str, reference: str, run: int) -> str:
    """The callee's run id: `uuid5(NS, "<workflow run id><reference>#<run>")` (spec 6)."""
    return str(uuid.uuid5(CALL_NAMESPACE, f"{run_id}{reference}#{run}"))


def call_key(run_id: str, reference: str, run: int) -> str:
    return json.dumps([run_id, reference, run], separators=(",", ":"), ensure_ascii=False)


def started_at(ms: int) -> dict[str, Any]:
    """`startedAt` as expressions read it (spec 4.4)."""
    moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    iso = moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"
    return {"iso8601": iso, "epoch": {"seconds": ms // 1000, "milliseconds": ms}}


def json_size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


@dataclass
class _Entry:
    activation: int
    name: str
    reference: str
    run: int
    outcome: str
    cause: int | None
    waits_for: str | None = None
    callee: str | None = None
    error: dict[str, Any] | None = None


class _Ended(Exception):
    """Raised inside the queue when the run ended: nothing more moves."""


@dataclass
class _Apply:
    state: EngineState
    input: Input
    evaluator: Evaluator
    now: int
    entries: dict[int, _Entry] = field(default_factory=dict)
    outputs: list[Output] = field(default_factory=list)
    call_activations: dict[str, int] = field(default_factory=dict)
    input_cause: str | None = None
    stale: bool = False
    queue: deque[QueuedMessage] = field(default_factory=deque)
    outer: list[deque[QueuedMessage]] = field(default_factory=list)
    """The queues a fork set aside while it ran one branch on its own (`drain_branch`)."""
    yielded: bool = False
    begun: int = 0

    # -- documents ----------------------------------------------------------------------------------------
    def at(self, pointer: str) -> Any:
        value: Any = self.state.document
        for token in tokens_of(pointer):
            value = value[int(token)] if isinstance(value, list) else value[token]
        return value

    def definition(self, a: TaskRun) -> dict[str, Any]:
        value = self.at(a.reference)
        return value if isinstance(value, dict) else {}

    # -- entries ------------------------------------------------------------------------------------------
    def move(self, a: TaskRun, outcome: str, **details: Any) -> None:
        entry = self.entries.get(a.id)
        if entry is None:
            # A cause is an entry this input moved before this one: each event comes after the event that
            # caused it. A loop whose next iteration starts in a later input has not moved yet in it, so that
            # iteration's first task is caused by the input (and the loop's entry, if it moves, comes after).
            cause = a.cause if a.started_in == self.input.id and a.cause in self.entries else None
            entry = _Entry(a.id, a.name, a.reference, a.run, outcome, cause)
            self.entries[a.id] = entry
        entry.outcome = outcome
        entry.waits_for = details.get("waits_for")
        entry.callee = details.get("callee")
        entry.error = details.get("error")

    def record_waiting(self, a: WaitingRun, waits_for: str, callee: str | None = None) -> None:
        a.waited_in = self.input.id
        self.move(a, "waiting", waits_for=waits_for, callee=callee)

    # -- variables ----------------------------------------------------------------------------------------
    def workflow_var(self) -> dict[str, Any]:
        s = self.state
        return {
            "id": s.run_id,
            "definition": s.document,
            "input": s.run_input,
            "startedAt": started_at(s.started_at),
        }

    def runtime_var(self) -> dict[str, Any]:
        return {"name": "auto-runtime", "version": self.state.runtime_version, "metadata": {"type": "workflow"}}

    def task_vars(self, a: TaskRun, data: Any, **extra: Any) -> dict[str, Any]:
        task: dict[str, Any] = {
            "name": a.name,
            "reference": a.reference,
            "definition": self.definition(a),
            "input": a.raw_input,
            "startedAt": started_at(a.started_at),
        }
        if "task_output" in extra:
            task["output"] = extra.pop("task_output")
        variables: dict[str, Any] = {
            "data": data,
            "context": self.state.context,
            "workflow": self.workflow_var(),
            "runtime": self.runtime_var(),
            "task": task,
        }
        variables.update(a.scope)
        variables.update(extra)
        return variables

    def failed(self, a: TaskRun, failure: Failed) -> dict[str, Any]:
        return E.error(failure.short, failure.status, a.reference, failure.title, failure.detail)

    # -- outputs ------------------------------------------------------------------------------------------
    def arm(self, timer_id: str, due_at: int, purpose: str, activation: int | None) -> None:
        self.state.timers[timer_id] = TimerInfo(activation, purpose, self.input.id, due_at, self.now)
        self.outputs.append(ArmTimer(timer_id, due_at, purpose))

    def disarm(self, timer_id: str | None) -> None:
        if timer_id is not None and timer_id in self.state.timers:
            del self.state.timers[timer_id]
            self.outputs.append(CancelTimer(timer_id))

    def timer_id(self, a: TaskRun, purpose: str) -> str:
        return f"{self.state.run_id}{a.reference}#{a.run}:{purpose}"

    # -- the queue ----------------------------------------------------------------------------------------
    def push(self, message: QueuedMessage) -> None:
        if self.yielded:
            self.state.pending.append(message)
        else:
            self.queue.append(message)

    def drain(self) -> None:
        while self.queue and not self.yielded:
            message = self.queue[0]
            if isinstance(message, Begin):
                if self.begun >= TASKS_PER_INPUT or (self.begun > 0 and self.evaluator.wants_yield()):
                    # What is left goes on in the next input: this queue, then the ones set aside around it.
                    self.state.pending = list(self.queue) + [m for queue in reversed(self.outer) for m in queue]
                    self.queue.clear()
                    for queue in self.outer:
                        queue.clear()
                    self.yielded = True
                    root = self.state.activations[0]
                    self.arm(f"{self.state.run_id}/#{self.state.inputs}:yield", self.now, "yield", root.id)
                    return
                self.begun += 1
                self.state.tasks_since_wait += 1
            self.queue.popleft()
            a = self.state.activations.get(message.activation)
            if a is None:
                continue
            handler_for(MESSAGE_HANDLERS, message, "queued message")(self, a, message)

    # -- starting tasks -----------------------------------------------------------------------------------
    def start_in_list(self, holder: ListHolder, index: int, data: Any, cause: int | None) -> None:
        assert holder.list_pointer is not None
        entries = self.at(holder.list_pointer)
        if index >= len(entries):
            self.list_done(holder, data, exited=False)
            return
        holder.index = index
        holder.data = data
        name, _definition = next(iter(entries[index].items()))
        self.start_task(holder, f"{holder.list_pointer}/{index}/{escape(name)}", str(name), data, cause)

    def start_task(
        self, parent: ListHolder | ForkRun, reference: str, name: str, data: Any, cause: int | None
    ) -> TaskRun:
        s = self.state
        a = task_run_kind(self.at(reference))(
            id=s.next_id,
            reference=reference,
            name=name,
            run=0,
            parent=parent.id,
            cause=cause,
            started_in=self.input.id,
            raw_input=data,
            started_at=self.now,
            scope=dict(parent.scope),
        )
        s.next_id += 1
        s.activations[a.id] = a
        self.push(Begin(a.id))
        return a

    def on_begin(self, a: TaskRun, _message: Begin) -> None:
        if self.state.tasks_since_wait > TASKS_WITHOUT_WAITING:
            self.end_rejected(E.RunRejection("unavailable", TOO_MANY_TASKS.format(reference=a.reference)))
        definition = self.definition(a)
        s = self.state
        s.runs[a.reference] = s.runs.get(a.reference, 0) + 1
        a.run = s.runs[a.reference]
        self.move(a, "started")
        t = self.task_vars(a, a.raw_input)
        if "if" in definition:
            holds = evaluate_condition(self.evaluator, definition["if"], t)
            if isinstance(holds, Failed):
                self.raise_error(a, self.failed(a, holds))
                return
            if not holds:
                self.move(a, "skipped")
                self.leave(a)
                self.child_done(a, a.raw_input, "continue", skipped=True)
                return
        if "timeout" in definition:
            ms = self.duration_of(a, self.timeout_after(definition["timeout"]), t)
            if isinstance(ms, dict):
                self.raise_error(a, ms)
                return
            if ms is not None:
                a.timeout_timer = self.timer_id(a, "timeout")
                self.arm(a.timeout_timer, self.now + ms, "timeout", a.id)
        a.input = a.raw_input
        if "input" in definition and isinstance(definition["input"], dict) and "from" in definition["input"]:
            shaped = evaluate_shaping(self.evaluator, definition["input"]["from"], t)
            if isinstance(shaped, Failed):
                self.raise_error(a, self.failed(a, shaped))
                return
            a.input = shaped
        handler_for(TASK_BODIES, a, "task run")(self, a, definition)

    def body_vars(self, a: TaskRun, data: Any | None = None) -> dict[str, Any]:
        return self.task_vars(a, a.input if data is None else data, input=a.input)

    def timeout_after(self, timeout: Any) -> Any:
        if isinstance(timeout, str):
            timeout = self.state.document.get("use", {}).get("timeouts", {}).get(timeout)
        return timeout.get("after") if isinstance(timeout, dict) else None

    def duration_of(self, a: TaskRun, value: Any, variables: Mapping[str, Any]) -> int | dict[str, Any] | None:
        """Milliseconds of a duration (literal or computed), or the error it raises."""
        if value is None:
            return None
        if wrapped_expression(value) is not None:
            computed = evaluate_template(self.evaluator, value, variables)
            if isinstance(computed, Failed):
                return self.failed(a, computed)
            value = computed
        ms = duration_ms(value)
        if isinstance(ms, str):
            return E.error("configuration", 400, a.reference, INVALID_DURATION.format(problem=ms))
        if ms > self.state.max_duration_ms:
            return E.error(
                "configuration", 400, a.reference, INVALID_DURATION.format(problem="longer than WORKFLOW_MAX_DURATION")
            )
        return ms

    # -- finishing and raising ----------------------------------------------------------------------------
    def leave(self, a: TaskRun) -> None:
        self.disarm(a.timeout_timer)
        if isinstance(a, WaitRun | CallRun | TryRun):
            self.disarm(a.timer)
        if isinstance(a, TryRun):
            self.disarm(a.attempt_timer)
        if isinstance(a, ListenRun) and a.listener is not None:
            self.outputs.append(CancelListener(a.listener))
            a.listener = None
        self.state.activations.pop(a.id, None)

    def finish(self, a: TaskRun, body_output: Any, then: Any = None) -> None:
        definition = self.definition(a)
        output = body_output
        shaping = definition.get("output")
        if isinstance(shaping, dict) and "as" in shaping:
            shaped = evaluate_shaping(
                self.evaluator, shaping["as"], self.task_vars(a, body_output, input=a.input, task_output=body_output)
            )
            if isinstance(shaped, Failed):
                self.raise_error(a, self.failed(a, shaped))
                return
            output = shaped
        export = definition.get("export")
        if isinstance(export, dict) and "as" in export:
            exported = evaluate_shaping(
                self.evaluator,
                export["as"],
                self.task_vars(a, output, input=a.input, output=output, task_output=body_output),
            )
            if isinstance(exported, Failed):
                self.raise_error(a, self.failed(a, exported))
                return
            self.state.context = exported
        self.move(a, "completed")
        self.leave(a)
        self.child_done(a, output, then if then is not None else definition.get("then", "continue"))

    def raise_error(self, a: TaskRun, raised: dict[str, Any], outcome: str = "raised") -> None:
        self.cancel_children(a, "parent_ended")
        self.move(a, outcome, error=raised)
        self.leave(a)
        parent = self.state.activations.get(a.parent) if a.parent is not None else None
        if parent is not None:
            self.child_raised(parent, a, raised)

    def cancel(self, a: TaskRun, kind: str) -> None:
        """Cancel a task run and its work, inner tasks first (spec 12.2 `cancelled`).

        A task that was to start in this input and has not (a later branch of a fork a first branch already
        decided) is dropped without a step: it never ran."""
        if a.run == 0:
            self.state.activations.pop(a.id, None)
            return
        self.cancel_children(a, kind)
        if isinstance(a, CallRun) and a.call_key is not None and a.call_key in self.state.calls:
            info = self.state.calls.pop(a.call_key)
            self.outputs.append(CancelCall(a.call_key, info.run_id, kind))
        self.move(a, "cancelled")
        self.leave(a)

    def cancel_children(self, a: TaskRun, kind: str) -> None:
        for child in [c for c in self.state.activations.values() if c.parent == a.id]:
            self.cancel(child, kind)

    # -- children -----------------------------------------------------------------------------------------
    def child_done(self, child: TaskRun, output: Any, then: Any, skipped: bool = False) -> None:
        parent = self.state.activations.get(child.parent) if child.parent is not None else None
        if parent is None:
            return
        if isinstance(parent, ForkRun):
            self.branch_done(parent, child, output, then)
            return
        if not isinstance(parent, ListHolder):
            raise TypeError(f"the task run {parent.reference} is a {parent.KIND} task run, which holds no list")
        assert parent.list_pointer is not None
        if skipped:
            then = "continue"
        parent.data = output
        if then == "end":
            self.end_run(output)
        elif then == "exit":
            self.list_done(parent, output, exited=True)
        elif then == "continue" or not isinstance(then, str):
            self.start_in_list(parent, parent.index + 1, output, child.id)
        else:
            names = [str(next(iter(entry))) for entry in self.at(parent.list_pointer)]
            if then not in names:
                self.raise_error(
                    parent,
                    E.error("configuration", 400, child.reference, f"then: {then} names no task in the same list"),
                )
                return
            self.start_in_list(parent, names.index(then), output, child.id)

    def child_raised(self, parent: TaskRun, child: TaskRun, raised: dict[str, Any]) -> None:
        if isinstance(parent, RootRun):
            self.end_rejected(E.uncaught(raised))
        elif isinstance(parent, TryRun) and parent.phase == "trying":
            self.catch(parent, child, raised)
        elif isinstance(parent, ForkRun):
            self.branch_raised(parent, child, raised)
        else:
            self.raise_error(parent, raised)

    def list_done(self, holder: ListHolder, data: Any, *, exited: bool) -> None:
        if isinstance(holder, RootRun):
            self.end_run(data)
        elif isinstance(holder, ForRun):
            holder.data = data
            holder.iteration += 1
            if exited:
                self.finish(holder, data)
            else:
                self.next_iteration(holder)
        else:
            self.finish(holder, data)

    # -- kinds --------------------------------------------------------------------------------------------
    def body_set(self, a: SetRun, definition: dict[str, Any]) -> None:
        result = evaluate_template(self.evaluator, definition["set"], self.body_vars(a))
        if isinstance(result, Failed):
            self.raise_error(a, self.failed(a, result))
            return
        self.finish(a, result)

    def body_do(self, a: DoRun, definition: dict[str, Any]) -> None:
        a.list_pointer = f"{a.reference}/do"
        self.start_in_list(a, 0, a.input, a.id)

    def body_switch(self, a: SwitchRun, definition: dict[str, Any]) -> None:
        cases = [
            next(iter(case.values())) for case in definition["switch"] if isinstance(case, dict) and len(case) == 1
        ]
        cases = [case for case in cases if isinstance(case, dict)]
        variables = self.body_vars(a)
        for case in cases:
            if "when" in case:
                holds = evaluate_condition(self.evaluator, case["when"], variables)
                if isinstance(holds, Failed):
                    self.raise_error(a, self.failed(a, holds))
                    return
                if holds:
                    self.finish(a, a.input, case.get("then", "continue"))
                    return
        default = next((case for case in cases if "when" not in case), None)
        self.finish(a, a.input, default.get("then", "continue") if default is not None else None)

    def body_for(self, a: ForRun, definition: dict[str, Any]) -> None:
        loop = definition["for"]
        items = evaluate_shaping(self.evaluator, loop["in"], self.body_vars(a))
        if isinstance(items, Failed):
            self.raise_error(a, self.failed(a, items))
            return
        if not isinstance(items, list):
            self.raise_error(a, E.error("validation", 400, a.reference, FOR_IN_NOT_ARRAY))
            return
        a.items = items
        a.iteration = 0
        a.data = a.input
        a.list_pointer = f"{a.reference}/do"
        self.next_iteration(a)

    def next_iteration(self, a: ForRun) -> None:
        definition = self.definition(a)
        assert a.items is not None
        if a.iteration >= len(a.items):
            self.finish(a, a.data)
            return
        loop = definition["for"]
        parent_scope = self.state.activations[a.parent].scope if a.parent in self.state.activations else {}
        a.scope = dict(parent_scope)
        a.scope[loop.get("each", "item")] = a.items[a.iteration]
        a.scope[loop.get("at", "index")] = a.iteration
        if "while" in definition:
            holds = evaluate_condition(self.evaluator, definition["while"], self.task_vars(a, a.data, input=a.input))
            if isinstance(holds, Failed):
                self.raise_error(a, self.failed(a, holds))
                return
            if not holds:
                self.finish(a, a.data)
                return
        self.start_in_list(a, 0, a.data, a.id)

    def body_fork(self, a: ForkRun, definition: dict[str, Any]) -> None:
        """Start the branches in branch order, each run on its own until it waits or ends before the next
        starts (README settled point 18). So of competing branches that complete in the same input the lowest
        index wins (spec 3.2) and a branch after the winner never starts; and when a later branch of a plain
        fork fails, the earlier branches' first steps were recorded and are cancelled, not dropped unstarted.
        Once the input has yielded, the branches left are queued for the next input, in branch order."""
        branches = definition["fork"].get("branches", [])
        compete = bool(definition["fork"].get("compete", False))
        if not branches:
            self.finish(a, None if compete else [])
            return
        for index in range(len(branches)):
            if a.id not in self.state.activations:
                return
            if not self.yielded:
                self.drain_branch(a, index)
            else:
                self.start_branch(a, index)

    def start_branch(self, fork: ForkRun, index: int) -> None:
        entry = self.definition(fork)["fork"]["branches"][index]
        name = str(next(iter(entry)))
        reference = f"{fork.reference}/fork/branches/{index}/{escape(name)}"
        self.start_task(fork, reference, name, fork.input, fork.id).branch = index

    def drain_branch(self, fork: ForkRun, index: int) -> None:
        """Start one branch and run it until it waits or ends, before what was queued around it."""
        self.outer.append(self.queue)
        self.queue = deque()
        try:
            self.start_branch(fork, index)
            self.drain()
        finally:
            self.queue = self.outer.pop()

    def branch_done(self, fork: ForkRun, child: TaskRun, output: Any, then: Any) -> None:
        assert child.branch is not None
        compete = bool(self.definition(fork)["fork"].get("compete", False))
        if then == "end":
            fork.end_requested = True
        if compete:
            self.cancel_children(fork, "parent_ended")
            self.finish_fork(fork, output)
            return
        fork.results[child.branch] = output
        if len(fork.results) == len(self.definition(fork)["fork"]["branches"]):
            self.finish_fork(fork, [fork.results[i] for i in sorted(fork.results)])

    def finish_fork(self, fork: ForkRun, output: Any) -> None:
        self.finish(fork, output, "end" if fork.end_requested else None)

    def branch_raised(self, fork: ForkRun, child: TaskRun, raised: dict[str, Any]) -> None:
        assert child.branch is not None
        if not self.definition(fork)["fork"].get("compete", False):
            self.raise_error(fork, raised)
            return
        fork.failures.append((self.now, child.branch, raised))
        if len(fork.failures) == len(self.definition(fork)["fork"]["branches"]):
            earliest = sorted(fork.failures, key=lambda failure: (failure[0], failure[1]))[0]
            self.raise_error(fork, earliest[2])

    def body_raise(self, a: RaiseRun, definition: dict[str, Any]) -> None:
        template = definition["raise"]["error"]
        if isinstance(template, str) and wrapped_expression(template) is None:
            template = self.state.document.get("use", {}).get("errors", {}).get(template)
        value = evaluate_template(self.evaluator, template, self.body_vars(a)) if template is not None else None
        if isinstance(value, Failed):
            self.raise_error(a, self.failed(a, value))
            return
        if (
            not isinstance(value, dict)
            or not isinstance(value.get("type"), str)
            or isinstance(value.get("status"), bool)
            or not isinstance(value.get("status"), int)
        ):
            self.raise_error(a, E.error("configuration", 400, a.reference, RAISE_NO_ERROR))
            return
        raised = {"instance": a.reference} | {k: v for k, v in value.items() if v is not None}
        self.raise_error(a, raised)

    def body_wait(self, a: WaitRun, definition: dict[str, Any]) -> None:
        ms = self.duration_of(a, definition["wait"], self.body_vars(a))
        if isinstance(ms, dict):
            self.raise_error(a, ms)
            return
        a.timer = self.timer_id(a, "wait")
        self.arm(a.timer, self.now + (ms or 0), "wait", a.id)
        a.phase = "waiting"
        if (ms or 0) >= OUTSIDE_WAIT_MS:
            self.state.tasks_since_wait = 0
        self.record_waiting(a, "timer")

    def body_emit(self, a: EmitRun, definition: dict[str, Any]) -> None:
        attributes = evaluate_template(self.evaluator, definition["emit"]["event"]["with"], self.body_vars(a))
        if isinstance(attributes, Failed):
            self.raise_error(a, self.failed(a, attributes))
            return
        why = None
        if (
            not isinstance(attributes, dict)
            or not isinstance(attributes.get("type"), str)
            or not isinstance(attributes.get("source"), str)
        ):
            why = "it needs a type and a source"
        elif attributes["type"] in RESERVED_TYPES:
            why = f"the type {attributes['type']} is reserved"
        elif attributes["source"].startswith(("/runs/", "/definitions/", "/callers/")):
            why = f"the source {attributes['source']} is reserved"
        elif "id" in attributes or any(key in RESERVED_ATTRIBUTES for key in attributes):
            taken = next(key for key in attributes if key == "id" or key in RESERVED_ATTRIBUTES)
            why = f"the attribute {taken} is the runtime's own"
        if why is not None:
            self.raise_error(a, E.error("validation", 400, a.reference, EMIT_REFUSED.format(why=why)))
            return
        assert isinstance(attributes, dict)
        event = {
            "specversion": "1.0",
            "id": str(uuid.uuid5(CALL_NAMESPACE, f"{self.state.run_id}{a.reference}#{a.run}:emit")),
        }
        event["time"] = started_at(self.now)["iso8601"]
        event.update(attributes)
        try:
            read_event(event)
        except Rejection as refused:
            why = "; ".join(issue.detail for issue in refused.errors) or refused.detail
            self.raise_error(a, E.error("validation", 400, a.reference, EMIT_REFUSED.format(why=why)))
            return
        size = json_size(event)
        if size > MAX_EVENT_BYTES:
            self.raise_error(a, E.error("validation", 400, a.reference, EMIT_TOO_LARGE.format(n=size)))
            return
        self.state.emitted += 1
        self.state.emitted_bytes += size
        if self.state.emitted > 1024 or self.state.emitted_bytes > 4 * 1024 * 1024:
            self.raise_error(a, E.error("runtime", 500, a.reference, EMIT_BOUND))
            return
        self.outputs.append(EmitEvent(event))
        self.finish(a, a.input)

    def body_call(self, a: CallRun, definition: dict[str, Any]) -> None:
        arguments = evaluate_template(self.evaluator, definition.get("with"), self.body_vars(a))
        if isinstance(arguments, Failed):
            self.raise_error(a, self.failed(a, arguments))
            return
        if not isinstance(arguments, dict):
            self.raise_error(a, E.error("validation", 400, a.reference, WITH_NOT_MAPPING))
            return
        kind, name = arguments.get("type"), arguments.get("name")
        if not isinstance(kind, str) or not isinstance(name, str):
            self.raise_error(a, E.error("validation", 400, a.reference, WITH_NOT_STRINGS))
            return
        call_input = arguments.get("input", {})
        size = json_size(call_input)
        if size > MAX_CALL_INPUT_BYTES:
            self.raise_error(a, E.error("validation", 400, a.reference, CALL_INPUT_TOO_LARGE.format(n=size)))
            return
        key = call_key(self.state.run_id, a.reference, a.run)
        run_id = call_run_id(self.state.run_id, a.reference, a.run)
        a.call_key = key
        self.state.calls[key] = CallInfo(a.id, run_id, kind, name, self.input.id)
        self.outputs.append(StartCall(key, run_id, kind, name, call_input, a.reference, a.run, ""))
        self.call_activations[key] = a.id
        bound = self.call_bound_ms(a, kind, name)
        a.timer = self.timer_id(a, "call")
        self.arm(a.timer, self.now + bound, "call", a.id)
        a.phase = "waiting"
        self.state.tasks_since_wait = 0
        self.record_waiting(a, "call", run_id)

    def call_bound_ms(self, a: CallRun, kind: str, name: str) -> int:
        """The call's wait: the callee's longest run + 60 s, within the run's remaining duration (spec 6).

        A literal type and name use the bounds the host resolved when the run started (`call_bounds_ms`, by
        `type/name`, then by type); a computed one the longest non-workflow bound."""
        remaining = self.state.started_at + self.state.max_duration_ms - self.now
        bounds = {**DEFAULT_CALL_BOUNDS_MS, **self.state.call_bounds_ms}
        arguments = self.definition(a).get("with")
        literal = (
            isinstance(arguments, dict)
            and wrapped_expression(arguments.get("type")) is None
            and wrapped_expression(arguments.get("name")) is None
        )
        if not literal:
            longest = max(v for k, v in bounds.items() if "/" not in k and k != "workflow")
        elif kind == "workflow":
            longest = self.state.max_duration_ms
        else:
            longest = bounds.get(f"{kind}/{name}", bounds.get(kind, max(DEFAULT_CALL_BOUNDS_MS.values())))
        return max(0, min(longest + CALL_GRACE_MS, remaining))

    def body_try(self, a: TryRun, definition: dict[str, Any]) -> None:
        a.phase = "trying"
        a.attempt = 0
        a.first_attempt_at = self.now
        a.list_pointer = f"{a.reference}/try"
        if self.arm_attempt(a):
            self.start_in_list(a, 0, a.input, a.id)

    def retry_policy(self, a: TryRun) -> dict[str, Any] | None:
        policy = self.definition(a).get("catch", {}).get("retry")
        if isinstance(policy, str):
            policy = self.state.document.get("use", {}).get("retries", {}).get(policy)
        return policy if isinstance(policy, dict) else None

    def arm_attempt(self, a: TryRun) -> bool:
        """Arm `limit.attempt.duration` for the attempt starting now; False when the try raised instead."""
        policy = self.retry_policy(a) or {}
        limit = policy.get("limit")
        attempt = limit.get("attempt") if isinstance(limit, dict) else None
        if not isinstance(attempt, dict) or "duration" not in attempt:
            return True
        ms = self.duration_of(a, attempt["duration"], self.task_vars(a, a.input, input=a.input))
        if isinstance(ms, dict):
            self.raise_error(a, ms)
            return False
        if ms is not None:
            a.attempt_timer = f"{self.timer_id(a, 'attempt')}:{a.attempt}"
            self.arm(a.attempt_timer, self.now + ms, "attempt", a.id)
        return True

    def catch(self, a: TryRun, child: TaskRun, raised: dict[str, Any]) -> None:
        self.disarm(a.attempt_timer)
        a.attempt_timer = None
        catch = self.definition(a).get("catch", {})
        name = catch.get("as", "error")
        variables = self.task_vars(a, a.input, input=a.input, **{name: raised})
        errors = catch.get("errors")
        pattern = errors.get("with") if isinstance(errors, dict) else None
        caught = E.matches(pattern, raised)
        for key, wanted in (("when", True), ("exceptWhen", False)):
            if caught and key in catch:
                holds = evaluate_condition(self.evaluator, catch[key], variables)
                if isinstance(holds, Failed):
                    self.raise_error(a, self.failed(a, holds))
                    return
                caught = holds == wanted
        if not caught:
            self.raise_error(a, raised)
            return
        policy = self.retry_policy(a)
        if policy is not None:
            delay = self.retry_delay(a, policy, variables)
            if isinstance(delay, dict):
                self.raise_error(a, delay)
                return
            if delay is not None:
                a.failed_child = child.id
                a.attempt += 1
                if delay > 0:
                    if delay >= OUTSIDE_WAIT_MS:
                        self.state.tasks_since_wait = 0
                    a.phase = "delay"
                    a.timer = f"{self.timer_id(a, 'retry')}:{a.attempt}"
                    self.arm(a.timer, self.now + delay, "retry", a.id)
                else:
                    self.start_attempt(a)
                return
        if "do" in catch:
            a.phase = "catching"
            a.scope[name] = raised
            a.list_pointer = f"{a.reference}/catch/do"
            self.start_in_list(a, 0, a.input, child.id)
            return
        self.finish(a, a.input)

    def retry_delay(self, a: TryRun, policy: dict[str, Any], variables: dict[str, Any]) -> int | dict[str, Any] | None:
        """The delay before the next attempt (spec 7.4), None when no retry is allowed, or an error."""
        attempt = a.attempt
        for key, wanted in (("when", True), ("exceptWhen", False)):
            if key in policy:
                holds = evaluate_condition(self.evaluator, policy[key], variables)
                if isinstance(holds, Failed):
                    return self.failed(a, holds)
                if holds != wanted:
                    return None
        limit = policy.get("limit", {})
        count = limit.get("attempt", {}).get("count") if isinstance(limit.get("attempt"), dict) else None
        if isinstance(count, int) and attempt >= count:
            return None
        if "duration" in limit:
            ms = self.duration_of(a, limit["duration"], variables)
            if isinstance(ms, dict):
                return ms
            if ms is not None and self.now - a.first_attempt_at >= ms:
                return None
        base = self.duration_of(a, policy.get("delay"), variables) if "delay" in policy else 0
        if isinstance(base, dict):
            return base
        base = base or 0
        backoff = policy.get("backoff", "constant")
        if isinstance(backoff, dict):
            backoff = next(iter(backoff), "constant")
        factor = attempt + 1 if backoff == "linear" else 2**attempt if backoff == "exponential" else 1
        delay = base * factor
        jitter = policy.get("jitter")
        if isinstance(jitter, dict):
            low = self.duration_of(a, jitter.get("from"), variables)
            high = self.duration_of(a, jitter.get("to"), variables)
            if isinstance(low, dict):
                return low
            if isinstance(high, dict):
                return high
            r = random.Random(f"{self.state.seed}:{a.reference}:{a.run}:{attempt}").random()
            delay += round((low or 0) + r * ((high or 0) - (low or 0)))
        return delay

    def start_attempt(self, a: TryRun) -> None:
        a.phase = "trying"
        a.timer = None
        a.list_pointer = f"{a.reference}/try"
        if self.arm_attempt(a):
            self.start_in_list(a, 0, a.input, a.failed_child)

    # -- listen -------------------------------------------------------------------------------------------
    def listen_filters(self, a: ListenRun) -> tuple[str, list[Any]]:
        to = self.definition(a)["listen"]["to"]
        form = next(key for key in ("one", "any", "all") if key in to)
        return form, [to["one"]] if form == "one" else list(to[form])

    def body_listen(self, a: ListenRun, definition: dict[str, Any]) -> None:
        a.phase = "listening"
        inbox = self.state.inbox
        index = 0
        while index < len(inbox):
            taken = self.take(a, inbox[index])
            if taken is None:
                return
            if taken:
                inbox.pop(index)
                if self.listen_complete(a):
                    self.finish_listen(a)
                    return
            else:
                index += 1
        _form, filters = self.listen_filters(a)
        types = sorted({f["with"]["type"] for f in filters if _literal_type(f)})
        if types:
            a.listener = f"{self.state.run_id}{a.reference}#{a.run}:listen"
            self.outputs.append(ArmListener(a.listener, tuple(types)))
        self.state.tasks_since_wait = 0
        self.record_waiting(a, "event")

    def matches(self, a: ListenRun, item: Any, event: Mapping[str, Any]) -> bool | None:
        """Whether the event fits the filter; None when a filter expression raised (the listen raised)."""
        if not isinstance(item, dict) or not isinstance(item.get("with"), dict):
            return True
        for attribute, wanted in item["with"].items():
            actual = event.get(attribute)
            if wrapped_expression(wanted) is not None:
                holds = evaluate_condition(self.evaluator, wanted, {"data": actual})
                if isinstance(holds, Failed):
                    self.raise_error(a, self.failed(a, holds))
                    return None
                if not holds:
                    return False
            elif not E.json_equal(wanted, actual):
                return False
        return True

    def take(self, a: ListenRun, event: Mapping[str, Any], offered: bool = False) -> bool | None:
        """Give the event to the listen: True if taken, False if not, None if the listen raised."""
        form, filters = self.listen_filters(a)
        for index, item in enumerate(filters):
            if index in a.taken or (offered and not _literal_type(item)):
                continue
            fits = self.matches(a, item, event)
            if fits is None:
                return None
            if fits:
                a.taken[0 if form != "all" else index] = dict(event)
                return True
            if form == "one":
                break
        return False

    def listen_complete(self, a: ListenRun) -> bool:
        form, filters = self.listen_filters(a)
        return len(a.taken) == (len(filters) if form == "all" else 1)

    def finish_listen(self, a: ListenRun) -> None:
        read = self.definition(a)["listen"].get("read", "data")
        events = [a.taken[index] for index in sorted(a.taken)]
        if read == "data":
            output: list[Any] = [event.get("data") for event in events]
        else:
            output = [_envelope(event) for event in events]
        self.finish(a, output)

    def on_event(self, task: TaskRun, _message: EventTaken) -> None:
        a = expect(task, ListenRun)
        if self.listen_complete(a):
            self.finish_listen(a)
        else:
            self.record_waiting(a, "event")

    # -- resuming -----------------------------------------------------------------------------------------
    def on_timer(self, a: TaskRun, message: TimerDue) -> None:
        purpose = message.timer.purpose
        handler = TIMER_HANDLERS.get(purpose)
        if handler is None:
            raise NoHandler(f"the workflow engine has no handler for a timer armed for {purpose!r}")
        handler(self, a, message.timer)

    def wait_over(self, task: TaskRun, _timer: TimerInfo) -> None:
        a = expect(task, WaitRun)
        a.timer = None
        self.finish(a, a.input)

    def retry_due(self, task: TaskRun, _timer: TimerInfo) -> None:
        self.start_attempt(expect(task, TryRun))

    def task_timed_out(self, a: TaskRun, timer: TimerInfo) -> None:
        a.timeout_timer = None
        ms = timer.due_at - timer.armed_at
        self.cancel_children(a, "deadline")
        self.cancel_own_call(a, "deadline")
        self.raise_error(a, E.error("timeout", 408, a.reference, NOT_FINISHED.format(ms=ms)), "timed_out")

    def call_overdue(self, task: TaskRun, timer: TimerInfo) -> None:
        a = expect(task, CallRun)
        a.timer = None
        ms = timer.due_at - timer.armed_at
        self.cancel_own_call(a, "deadline")
        self.raise_error(a, E.error("timeout", 408, a.reference, NOT_FINISHED.format(ms=ms)))

    def attempt_over(self, task: TaskRun, timer: TimerInfo) -> None:
        a = expect(task, TryRun)
        a.attempt_timer = None
        running = sorted((c for c in self.state.activations.values() if c.parent == a.id), key=lambda c: c.id)
        self.cancel_children(a, "deadline")
        ms = timer.due_at - timer.armed_at
        failed = running[-1] if running else a
        self.catch(a, failed, E.error("timeout", 408, a.reference, NOT_FINISHED.format(ms=ms)))

    def yield_over(self, _a: TaskRun, _timer: TimerInfo) -> None:
        self.queue.extend(self.state.pending)
        self.state.pending = []

    def cancel_own_call(self, a: TaskRun, kind: str) -> None:
        if isinstance(a, CallRun) and a.call_key is not None and a.call_key in self.state.calls:
            info = self.state.calls.pop(a.call_key)
            self.outputs.append(CancelCall(a.call_key, info.run_id, kind))
            a.call_key = None

    def on_answer(self, task: TaskRun, message: Answered) -> None:
        a = expect(task, CallRun)
        answer = message.answer
        info = self.state.calls.pop(answer.key)
        a.call_key = None
        if answer.status == "succeeded":
            self.finish(a, answer.output)
            return
        raised = E.callee_error(
            a.reference, info.definition_type, info.name, answer.status, answer.rejection, answer.incident
        )
        self.raise_error(a, raised)

    # -- ending -------------------------------------------------------------------------------------------
    def end_run(self, data: Any) -> NoReturn:
        output = data
        shaping = self.state.document.get("output")
        if isinstance(shaping, dict) and "as" in shaping:
            variables = {
                "data": data,
                "workflow": self.workflow_var(),
                "runtime": self.runtime_var(),
                "context": self.state.context,
            }
            shaped = evaluate_shaping(self.evaluator, shaping["as"], variables)
            if isinstance(shaped, Failed):
                self.end_rejected(E.uncaught(E.error(shaped.short, shaped.status, "/", shaped.title, shaped.detail)))
            output = shaped
        mismatch = self.output_mismatch(output)
        if mismatch is not None:
            self.end_rejected(E.RunRejection("conflict", mismatch, "unworkable"))
        size = json_size(output)
        if size > MAX_OUTPUT_BYTES:
            self.end_rejected(E.RunRejection("conflict", OUTPUT_TOO_LARGE.format(n=size), "oversized"))
        self.settle(Settle("succeeded", output=output))

    def output_mismatch(self, output: Any) -> str | None:
        """Why the run's output does not fit its `output.schema` or `output.shape`, else None."""
        return output_mismatch(self.state.document, output)

    def end_rejected(self, rejection: E.RunRejection) -> NoReturn:
        shown: dict[str, Any] = {"reason": rejection.reason, "detail": rejection.detail}
        if rejection.kind is not None:
            shown["kind"] = rejection.kind
        if rejection.because is not None:
            shown["because"] = rejection.because
        if rejection.errors:
            shown["errors"] = [dict(issue) for issue in rejection.errors]
        self.settle(Settle("rejected", rejection=shown))

    def settle(self, settle: Settle, cancel_kind: str = "parent_ended") -> NoReturn:
        s = self.state
        for key, info in sorted(s.calls.items()):
            self.outputs.append(CancelCall(key, info.run_id, cancel_kind))
        s.calls.clear()
        for timer_id in sorted(s.timers):
            self.outputs.append(CancelTimer(timer_id))
        for activation in sorted(s.activations.values(), key=lambda a: a.id):
            if isinstance(activation, ListenRun) and activation.listener is not None:
                self.outputs.append(CancelListener(activation.listener))
        s.timers.clear()
        s.activations.clear()
        s.pending = []
        s.ended = True
        self.outputs.append(settle)
        self.queue.clear()
        raise _Ended()


MESSAGE_HANDLERS: Mapping[type, Callable[[_Apply, TaskRun, Any], None]] = {
    Begin: _Apply.on_begin,
    TimerDue: _Apply.on_timer,
    Answered: _Apply.on_answer,
    EventTaken: _Apply.on_event,
}
"""What the queue does with each message, by the message's type."""

TASK_BODIES: Mapping[type, Callable[[_Apply, Any, dict[str, Any]], None]] = {
    DoRun: _Apply.body_do,
    ForRun: _Apply.body_for,
    TryRun: _Apply.body_try,
    ForkRun: _Apply.body_fork,
    SetRun: _Apply.body_set,
    SwitchRun: _Apply.body_switch,
    RaiseRun: _Apply.body_raise,
    EmitRun: _Apply.body_emit,
    WaitRun: _Apply.body_wait,
    CallRun: _Apply.body_call,
    ListenRun: _Apply.body_listen,
}
"""The body of each kind of task, by its task run's type (the root is the run itself: it never begins)."""

TIMER_HANDLERS: Mapping[str, Callable[[_Apply, TaskRun, TimerInfo], None]] = {
    "wait": _Apply.wait_over,
    "retry": _Apply.retry_due,
    "timeout": _Apply.task_timed_out,
    "call": _Apply.call_overdue,
    "attempt": _Apply.attempt_over,
    "yield": _Apply.yield_over,
}
"""What a task run's fired timer does, by the purpose it was armed for (the run's own timers, `deadline` and
`run_timeout`, end the run when the input is taken)."""


class Stale(Enum):
    """An input that changes nothing: its run has not started or has ended, or what it answers is not awaited."""

    STALE = "stale"


InputT = TypeVar("InputT")


@dataclass(frozen=True)
class InputRule(Generic[InputT]):
    """How the decider takes one type of input.

    `first`: the input starts the run (every other needs a started run). `admit` gives the input's cause (the
    record it follows, None for the input itself) or `Stale.STALE`; `take` moves the run (the queue is drained
    after it); `shown` is the input as its `workflow_input_applied` names it."""

    first: bool
    admit: Callable[[EngineState, InputT], str | Stale | None]
    take: Callable[[_Apply, InputT], None]
    shown: Callable[[EngineState, InputT], dict[str, Any]]


def _take_started(work: _Apply, applied: Started) -> None:
    s = work.state
    s.started = True
    s.started_at = work.now
    s.seed = applied.seed
    s.run_input = applied.run_input
    root = RootRun(
        id=0,
        reference="/",
        name="",
        run=1,
        parent=None,
        cause=None,
        raw_input=applied.run_input,
        started_at=work.now,
        list_pointer="/do",
    )
    s.activations[0] = root
    work.arm(f"{s.run_id}/#1:deadline", work.now + s.max_duration_ms, "deadline", None)
    data = applied.run_input
    shaping = s.document.get("input")
    variables = {"data": data, "workflow": work.workflow_var(), "runtime": work.runtime_var()}
    if isinstance(shaping, dict) and "from" in shaping:
        shaped = evaluate_shaping(work.evaluator, shaping["from"], variables)
        if isinstance(shaped, Failed):
            work.end_rejected(E.uncaught(E.error(shaped.short, shaped.status, "/", shaped.title, shaped.detail)))
        data = shaped
    timeout = s.document.get("timeout")
    if timeout is not None:
        ms = work.duration_of(root, work.timeout_after(timeout), variables)
        if isinstance(ms, dict):
            work.end_rejected(E.uncaught(ms))
        if ms is not None:
            work.arm(f"{s.run_id}/#1:timeout", work.now + ms, "run_timeout", None)
    work.start_in_list(root, 0, data, None)


def _take_cancel(work: _Apply, applied: CancelRequested) -> None:
    detail = applied.reason or f"The run was cancelled by {applied.by}."
    work.settle(Settle("rejected", rejection={"reason": "cancelled", "detail": detail, "kind": applied.kind}))


def _admit_answer(s: EngineState, applied: CallAnswered) -> str | Stale | None:
    call = s.calls.get(applied.key)
    return Stale.STALE if call is None else call.waited_in


def _take_answer(work: _Apply, applied: CallAnswered) -> None:
    s = work.state
    info = s.calls[applied.key]
    caller = expect(s.activations[info.activation], CallRun)
    work.disarm(caller.timer)
    caller.timer = None
    work.push(Answered(info.activation, applied))


def _shown_answer(_s: EngineState, applied: CallAnswered) -> dict[str, Any]:
    shown: dict[str, Any] = {"kind": "call_answered", "key": applied.key, "status": applied.status}
    if applied.rejection is not None:
        shown["rejection"] = {k: applied.rejection[k] for k in ("kind", "because") if k in applied.rejection}
    return shown


def _admit_timer(s: EngineState, applied: TimerFired) -> str | Stale | None:
    timer = s.timers.get(applied.timer_id)
    return Stale.STALE if timer is None else timer.armed_in


def _take_timer(work: _Apply, applied: TimerFired) -> None:
    s = work.state
    timer = s.timers.pop(applied.timer_id)
    if timer.purpose == "deadline":
        work.settle(
            Settle(
                "rejected",
                rejection={
                    "reason": "cancelled",
                    "detail": "The run passed WORKFLOW_MAX_DURATION.",
                    "kind": "overrun",
                },
            ),
            "deadline",
        )
    if timer.purpose == "run_timeout":
        ms = timer.due_at - timer.armed_at
        for a in sorted(s.activations.values(), key=lambda x: -x.id):
            if not isinstance(a, RootRun) and a.id in s.activations and a.parent == 0:
                work.cancel(a, "deadline")
        work.end_rejected(E.uncaught(E.error("timeout", 408, "/", NOT_FINISHED.format(ms=ms))))
    assert timer.activation is not None
    work.push(TimerDue(timer.activation, timer))


def _admit_sent(s: EngineState, applied: EventReceived) -> str | Stale | None:
    return Stale.STALE if str(applied.event.get("id")) in s.received else None


def _admit_offered(s: EngineState, _applied: EventOffered) -> str | Stale | None:
    listening = any(isinstance(a, ListenRun) and a.listener is not None for a in s.activations.values())
    return None if listening else Stale.STALE


INPUT_RULES: Mapping[type, InputRule[Any]] = {
    Started: InputRule[Started](
        first=True,
        admit=lambda _s, applied: applied.run_started_id,
        take=_take_started,
        shown=lambda s, _applied: {"kind": "started", "key": s.run_id},
    ),
    CancelRequested: InputRule[CancelRequested](
        first=False,
        admit=lambda _s, applied: applied.cancel_record_id,
        take=_take_cancel,
        shown=lambda s, applied: {
            "kind": "cancel_requested",
            "key": s.run_id,
            "cancel": {"by": applied.by, "kind": applied.kind},
        },
    ),
    TimerFired: InputRule[TimerFired](
        first=False,
        admit=_admit_timer,
        take=_take_timer,
        shown=lambda _s, applied: {"kind": "timer_fired", "key": applied.timer_id},
    ),
    CallAnswered: InputRule[CallAnswered](first=False, admit=_admit_answer, take=_take_answer, shown=_shown_answer),
    EventReceived: InputRule[EventReceived](
        first=False,
        admit=_admit_sent,
        take=lambda work, applied: _offer(work, applied),
        shown=lambda _s, applied: {
            "kind": "event_received",
            "key": str(applied.event.get("id")),
            "event_type": applied.event.get("type"),
        },
    ),
    EventOffered: InputRule[EventOffered](
        first=False,
        admit=_admit_offered,
        take=lambda work, applied: _offer(work, applied),
        shown=lambda _s, applied: {
            "kind": "event_offered",
            "key": applied.record_id,
            "event_type": applied.event.get("type"),
        },
    ),
}
"""How the decider takes each input, by the input's type."""


def apply(state: EngineState, applied: Input, evaluator: Evaluator) -> Transition:
    """Apply one input to a copy of `state`; a stale input (ended run, unknown timer or call) changes nothing.

    The copy shares the run's document with `state`: nothing here writes to a document, and copying it took
    most of the copy's time (it is the largest part of a state). An input of a type the engine does not take
    is refused with `NoHandler`."""
    rule = handler_for(INPUT_RULES, applied, "input")
    s = copy.deepcopy(state, {id(state.document): state.document})
    if s.ended or rule.first == s.started:
        return Transition(state, stale=True)
    cause = rule.admit(s, applied)
    if isinstance(cause, Stale):
        return Transition(state, stale=True)
    now = max(applied.at, s.last_at)
    s.last_at = now
    s.inputs += 1
    woken = s.timers[applied.timer_id] if isinstance(applied, TimerFired) else None
    s.quick_inputs = s.quick_inputs + 1 if woken is not None and _wakes_itself(woken) else 0
    work = _Apply(s, applied, evaluator, now, input_cause=cause)
    with contextlib.suppress(_Ended):
        if s.inputs > MAX_INPUTS:
            work.end_rejected(E.RunRejection("unavailable", TOO_MANY_INPUTS))
        if woken is not None and s.quick_inputs > INPUTS_WITHOUT_WAITING:
            work.end_rejected(E.RunRejection("unavailable", WOKE_ITSELF.format(reference=_woken_at(s, woken))))
        rule.take(work, applied)
        work.drain()
        if not work.stale:
            _check_holdings(work)
    if work.stale:
        return Transition(state, stale=True)
    return _transition(work, applied, rule.shown(s, applied), work.input_cause)


def _wakes_itself(timer: TimerInfo) -> bool:
    """Whether a fired timer is the run waking itself rather than waiting on something outside it: a yield, or a
    timer armed for less than `OUTSIDE_WAIT_MS`."""
    return timer.purpose == "yield" or timer.due_at - timer.armed_at < OUTSIDE_WAIT_MS


def _woken_at(state: EngineState, timer: TimerInfo) -> str:
    """The reference of the task a run woke itself for: the next task a yield goes on with, else the task that
    armed the timer (`/` for the run's own)."""
    pending = [state.activations.get(message.activation) for message in state.pending]
    going_on = next((a for a in pending if a is not None), None)
    if timer.purpose == "yield" and going_on is not None:
        return going_on.reference
    armed_by = state.activations.get(timer.activation) if timer.activation is not None else None
    return armed_by.reference if armed_by is not None else "/"


def held_bytes(state: EngineState) -> int:
    """The data a run holds (spec 13): the values it reaches, each distinct value once, 4 KiB for each running
    task and the document."""
    texts: set[str] = set()

    def reach(value: Any) -> None:
        if value is not None:
            texts.add(json.dumps(value, ensure_ascii=False, separators=(",", ":")))

    reach(state.run_input)
    reach(state.context)
    for event in state.inbox:
        reach(event)
    for a in state.activations.values():
        for value in a.held_values():
            reach(value)
    values = sum(len(text.encode("utf-8", "surrogatepass")) for text in texts)
    return values + RUNNING_TASK_BYTES * len(state.activations) + json_size(state.document)


def _check_holdings(work: _Apply) -> None:
    """A run that goes on after this input holds at most 4 MiB, and one input adds at most 1,572,864 bytes to
    what it holds (the bound of a value kept across a wait); past either the run ends `unavailable`."""
    s = work.state
    held = held_bytes(s)
    if held > MAX_HELD_BYTES:
        work.end_rejected(E.RunRejection("unavailable", HOLDS_TOO_MUCH.format(n=held)))
    if held - s.held > MAX_CHANGE_BYTES:
        work.end_rejected(E.RunRejection("unavailable", CHANGED_TOO_MUCH.format(n=held - s.held)))
    s.held = held


def _offer(work: _Apply, applied: EventReceived | EventOffered) -> None:
    """Give an event to the earliest open listen that takes it; a sent event no listen takes waits in the inbox."""
    s = work.state
    offered = isinstance(applied, EventOffered)
    event = dict(applied.event)
    size = json_size(event)
    if not offered:
        s.received.append(str(event.get("id")))
        s.received_bytes += size
        if len(s.received) > 1024 or s.received_bytes > 4 * 1024 * 1024:
            work.end_rejected(E.RunRejection("unavailable", INBOX_LIFE))
    listens = sorted(
        (a for a in s.activations.values() if isinstance(a, ListenRun) and a.phase == "listening"), key=lambda a: a.id
    )
    for listen in listens:
        if offered and listen.listener is None:
            continue
        waited_in = listen.waited_in
        taken = work.take(listen, event, offered)
        if taken is None:
            work.input_cause = waited_in
            return
        if taken:
            work.input_cause = waited_in
            work.push(EventTaken(listen.id, event))
            return
    if offered:
        work.stale = True
        return
    s.inbox.append(event)
    if len(s.inbox) > 64 or sum(json_size(e) for e in s.inbox) > 1024 * 1024:
        work.end_rejected(E.RunRejection("unavailable", INBOX_FULL))


def _literal_type(item: Any) -> bool:
    attributes = item.get("with") if isinstance(item, dict) else None
    return (
        isinstance(attributes, dict)
        and isinstance(attributes.get("type"), str)
        and wrapped_expression(attributes["type"]) is None
    )


def _envelope(event: Mapping[str, Any]) -> dict[str, Any]:
    """A taken event as `envelope`/`raw` read it: the CloudEvent's attributes, those absent left out."""
    shown = {key: event.get(key) for key in ENVELOPE_FIELDS}
    if shown["specversion"] is None:
        # Every CloudEvent is of version 1.0; a sent event the caller wrote without it still shows it.
        shown["specversion"] = "1.0"
    shown.update({key: value for key, value in event.items() if key not in ENVELOPE_FIELDS})
    return shown


def _transition(work: _Apply, applied: Input, input_shown: dict[str, Any], cause: str | None) -> Transition:
    s = work.state
    facts: list[Fact] = []
    entries = list(work.entries.values())
    event_ids = {entry.activation: f"{applied.id}_{n}" for n, entry in enumerate(entries, start=1)}
    steps: list[Fact] = []
    for entry in entries:
        key = f"{entry.reference}#{entry.run}#{entry.outcome}"
        s.times[key] = s.times.get(key, 0) + 1
        data: dict[str, Any] = {
            "name": entry.name,
            "reference": entry.reference,
            "run": entry.run,
            "times": s.times[key],
        }
        if entry.outcome == "waiting":
            data["waits_for"] = entry.waits_for
            if entry.callee is not None:
                data["run_id"] = entry.callee
        if entry.outcome in ("raised", "timed_out", "cancelled"):
            data["outcome"] = entry.outcome
            if entry.outcome != "cancelled" and entry.error is not None:
                shown = {"type": entry.error.get("type")}
                if entry.error.get("title") is not None:
                    shown["title"] = entry.error["title"]
                data["error"] = shown
        causation = event_ids.get(entry.cause) if entry.cause is not None else None
        steps.append(Fact(event_ids[entry.activation], STEP_EVENTS[entry.outcome], data, causation or applied.id))
    # A task run that ended never moves again: its counts go, so the state holds counts for running tasks only
    # (a loop of many iterations would otherwise grow the state, kept with every input, by each task run).
    alive = {f"{a.reference}#{a.run}" for a in s.activations.values()}
    s.times = {key: count for key, count in s.times.items() if key.rsplit("#", 1)[0] in alive}
    fixed: list[Output] = []
    for output in work.outputs:
        if isinstance(output, StartCall):
            step = event_ids.get(work.call_activations[output.key], applied.id)
            output = dataclasses.replace(output, cause_id=step)
        fixed.append(output)
    kinds = {OUTPUT_KINDS[type(output)] for output in fixed}
    applied_data: dict[str, Any] = {
        "run_id": s.run_id,
        "input": input_shown,
        "step_count": len(entries),
        "steps": [{"task": e.reference, "run": e.run, "outcome": e.outcome} for e in entries[:5]],
        "output_kinds": [kind for kind in OUTPUT_KIND_ORDER if kind in kinds],
    }
    facts.append(Fact(applied.id, "workflow_input_applied", applied_data, cause))
    facts.extend(steps)
    return Transition(s, tuple(facts), tuple(fixed))


STEP_EVENTS = {
    "started": "step_started",
    "waiting": "step_waiting",
    "completed": "step_finished",
    "raised": "step_failed",
    "timed_out": "step_failed",
    "cancelled": "step_failed",
    "skipped": "step_skipped",
}
