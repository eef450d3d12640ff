"""A run's state as JSON and back, so a run survives restarts: `dump_state` and `load_state`.

The JSON carries `format` (1); a later format must still load every earlier one. Integer-keyed maps are
written with text keys and read back as integers. Between inputs the state holds only JSON values: the
messages a yield keeps are `begin` messages, whose payload is null.

A task run is written as one object with every field any kind has (`TASK_RUN_FIELDS`, in that order), its
kind's tag in `kind`, and the fields its kind lacks at their value in `ABSENT`: the form written before task
runs were typed, byte for byte. Reading one refuses a field its kind lacks holding anything else.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from auto_runtime.functions.workflow.engine.state import Begin, CallInfo, EngineState, TimerInfo
from auto_runtime.functions.workflow.engine.task_runs import TASK_RUN_KINDS, TaskRun

FORMAT = 1
LEFT_OUT_AT_ZERO = ("quick_inputs",)
"""Counters added within format 1, written only once they are not 0: a state that never used them is written
exactly as before, and an earlier state loads with them at 0."""
TASK_RUN_FIELDS = (
    "id", "reference", "name", "kind", "run", "parent", "cause", "started_in", "raw_input", "input", "started_at",
    "phase", "scope", "list_pointer", "index", "data", "branch", "items", "iteration", "attempt",
    "first_attempt_at", "failed_child", "results", "failures", "end_requested", "waited_in", "taken", "listener",
    "timer", "timeout_timer", "attempt_timer", "call_key",
)  # fmt: skip
"""A stored task run's fields, in their stored order."""
ABSENT: Mapping[str, Any] = {
    "phase": "new",
    "list_pointer": None,
    "index": 0,
    "data": None,
    "items": None,
    "iteration": 0,
    "attempt": 0,
    "first_attempt_at": 0,
    "failed_child": None,
    "results": {},
    "failures": [],
    "end_requested": False,
    "waited_in": "",
    "taken": {},
    "listener": None,
    "timer": None,
    "attempt_timer": None,
    "call_key": None,
}
"""What a stored task run holds in a field its kind lacks."""
_OWN_FIELDS: Mapping[type[TaskRun], frozenset[str]] = {
    kind: frozenset(f.name for f in dataclasses.fields(kind)) for kind in TASK_RUN_KINDS.values()
}


class StateFormatError(ValueError):
    """A stored state this code cannot read."""


def _task_run_json(task: TaskRun) -> dict[str, Any]:
    own = _OWN_FIELDS.get(type(task))
    if own is None:
        raise StateFormatError(f"a task run of type {type(task).__name__}, which is no kind a state stores")
    shown: dict[str, Any] = {}
    for name in TASK_RUN_FIELDS:
        if name == "kind":
            shown[name] = task.KIND
        elif name in own:
            shown[name] = getattr(task, name)
        else:
            value = ABSENT[name]
            shown[name] = value.copy() if isinstance(value, dict | list) else value
    if "results" in own:
        shown["results"] = {str(k): v for k, v in shown["results"].items()}
    if "taken" in own:
        shown["taken"] = {str(k): v for k, v in shown["taken"].items()}
    if "failures" in own:
        shown["failures"] = [list(failure) for failure in shown["failures"]]
    return shown


def dump_state(state: EngineState) -> dict[str, Any]:
    """The state as JSON values only."""
    shown: dict[str, Any] = {
        field.name: getattr(state, field.name)
        for field in dataclasses.fields(state)
        if field.name not in ("activations", "timers", "calls", "pending")
        and not (field.name in LEFT_OUT_AT_ZERO and getattr(state, field.name) == 0)
    }
    shown["format"] = FORMAT
    shown["activations"] = [_task_run_json(a) for a in sorted(state.activations.values(), key=lambda a: a.id)]
    shown["timers"] = {key: dataclasses.asdict(info) for key, info in state.timers.items()}
    shown["calls"] = {key: dataclasses.asdict(info) for key, info in state.calls.items()}
    kept: list[list[Any]] = []
    for message in state.pending:
        if not isinstance(message, Begin):
            raise StateFormatError(f"a kept message {type(message).__name__} that is not a begin")
        kept.append(["begin", message.activation])
    shown["pending"] = kept
    return shown


def _task_run(data: Mapping[str, Any]) -> TaskRun:
    tag = data.get("kind")
    kind = TASK_RUN_KINDS.get(tag) if isinstance(tag, str) else None
    if kind is None:
        raise StateFormatError(f"a task run of kind {tag!r}, which is no kind this server knows")
    own = _OWN_FIELDS[kind]
    values: dict[str, Any] = {}
    for name, value in data.items():
        if name in own:
            values[name] = value
        elif name == "kind":
            continue
        elif name not in ABSENT:
            raise StateFormatError(f"a {kind.KIND} task run with the field {name!r}, which no task run has")
        elif value != ABSENT[name]:
            raise StateFormatError(f"a {kind.KIND} task run holding {name} = {value!r}, which its kind has not")
    if values.get("phase", "new") not in kind.PHASES:
        raise StateFormatError(f"a {kind.KIND} task run in the phase {values['phase']!r}, which its kind has not")
    if "results" in values:
        values["results"] = {int(k): v for k, v in values["results"].items()}
    if "taken" in values:
        values["taken"] = {int(k): v for k, v in values["taken"].items()}
    if "failures" in values:
        values["failures"] = [(int(at), int(branch), error) for at, branch, error in values["failures"]]
    try:
        return kind(**values)
    except TypeError as missing:
        raise StateFormatError(f"a {kind.KIND} task run without a field it needs: {missing}") from None


def load_state(data: dict[str, Any]) -> EngineState:
    """The state `dump_state` wrote, in this format or an earlier one."""
    if data.get("format") != FORMAT:
        raise StateFormatError(f"state format {data.get('format')!r} is not one this server reads")
    values = {k: v for k, v in data.items() if k not in ("format", "activations", "timers", "calls", "pending")}
    state = EngineState(**values)
    state.activations = {a["id"]: _task_run(a) for a in data["activations"]}
    state.timers = {key: TimerInfo(**info) for key, info in data["timers"].items()}
    state.calls = {key: CallInfo(**info) for key, info in data["calls"].items()}
    for message, activation in data["pending"]:
        if message != "begin":
            raise StateFormatError(f"a kept message {message!r} that is not a begin")
        state.pending.append(Begin(int(activation)))
    return state
