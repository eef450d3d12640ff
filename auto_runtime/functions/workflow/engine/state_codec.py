"""A run's state as JSON and back, so a run survives restarts: `dump_state` and `load_state`.

The JSON carries `format` (1); a later format must still load every earlier one. Integer-keyed maps are
written with text keys and read back as integers. Between inputs the state holds only JSON values: the
messages a yield keeps are `begin` messages, whose payload is null.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from auto_runtime.functions.workflow.engine.state import Activation, CallInfo, RunState, TimerInfo

FORMAT = 1
LEFT_OUT_AT_ZERO = ("quick_inputs",)
"""Counters added within format 1, written only once they are not 0: a state that never used them is written
exactly as before, and an earlier state loads with them at 0."""


class StateFormatError(ValueError):
    """A stored state this code cannot read."""


def _activation_json(activation: Activation) -> dict[str, Any]:
    shown = dataclasses.asdict(activation)
    shown["results"] = {str(k): v for k, v in activation.results.items()}
    shown["taken"] = {str(k): v for k, v in activation.taken.items()}
    shown["failures"] = [list(failure) for failure in activation.failures]
    return shown


def dump_state(state: RunState) -> dict[str, Any]:
    """The state as JSON values only."""
    shown: dict[str, Any] = {
        field.name: getattr(state, field.name)
        for field in dataclasses.fields(state)
        if field.name not in ("activations", "timers", "calls", "pending")
        and not (field.name in LEFT_OUT_AT_ZERO and getattr(state, field.name) == 0)
    }
    shown["format"] = FORMAT
    shown["activations"] = [_activation_json(a) for a in sorted(state.activations.values(), key=lambda a: a.id)]
    shown["timers"] = {key: dataclasses.asdict(info) for key, info in state.timers.items()}
    shown["calls"] = {key: dataclasses.asdict(info) for key, info in state.calls.items()}
    for message, _activation, payload in state.pending:
        if message != "begin" or payload is not None:
            raise StateFormatError(f"a kept message {message!r} that is not a begin")
    shown["pending"] = [[message, activation] for message, activation, _payload in state.pending]
    return shown


def _activation(data: dict[str, Any]) -> Activation:
    values = dict(data)
    values["results"] = {int(k): v for k, v in data.get("results", {}).items()}
    values["taken"] = {int(k): v for k, v in data.get("taken", {}).items()}
    values["failures"] = [(int(at), int(branch), error) for at, branch, error in data.get("failures", [])]
    return Activation(**values)


def load_state(data: dict[str, Any]) -> RunState:
    """The state `dump_state` wrote, in this format or an earlier one."""
    if data.get("format") != FORMAT:
        raise StateFormatError(f"state format {data.get('format')!r} is not one this server reads")
    values = {k: v for k, v in data.items() if k not in ("format", "activations", "timers", "calls", "pending")}
    state = RunState(**values)
    state.activations = {a["id"]: _activation(a) for a in data["activations"]}
    state.timers = {key: TimerInfo(**info) for key, info in data["timers"].items()}
    state.calls = {key: CallInfo(**info) for key, info in data["calls"].items()}
    state.pending = [(str(message), int(activation), None) for message, activation in data["pending"]]
    return state
