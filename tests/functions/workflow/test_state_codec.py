"""A run's state in its stored form (every engine test also sends each state through it between inputs)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from auto_runtime.functions.workflow.engine.state_codec import StateFormatError, dump_state, load_state
from auto_runtime.functions.workflow.engine.task_runs import TASK_RUN_KINDS
from auto_runtime.sandbox.engine import SandboxEngine
from tests.functions.workflow.runner import Run
from tests.functions.workflow.stored_states import FIXTURE, encoded, written_states
from tests.functions.workflow.test_engine_flow import FORK
from tests.functions.workflow.test_engine_handlers import LoopRun


def test_a_waiting_run_round_trips_through_json(engine: SandboxEngine) -> None:
    run = Run(engine, FORK.replace("${COMPETE}", "false"))
    run.start({"x": 1})
    stored = json.loads(json.dumps(dump_state(run.state)))
    assert stored["format"] == 1
    assert load_state(stored) == run.state
    assert dump_state(load_state(stored)) == stored


def test_an_unknown_format_is_refused(engine: SandboxEngine) -> None:
    run = Run(engine, FORK.replace("${COMPETE}", "false"))
    run.start({})
    stored = dump_state(run.state) | {"format": 99}
    with pytest.raises(StateFormatError):
        load_state(stored)


STORED: dict[str, list[dict[str, Any]]] = json.loads(FIXTURE.read_text(encoding="utf-8"))
KINDS_AND_PHASES = {(tag, phase) for tag, kind in TASK_RUN_KINDS.items() for phase in kind.PHASES}


def test_the_stored_states_hold_every_kind_of_task_run_in_every_phase() -> None:
    assert len(KINDS_AND_PHASES) == 18
    held = {(a["kind"], a["phase"]) for states in STORED.values() for state in states for a in state["activations"]}
    assert held == KINDS_AND_PHASES


def test_the_engine_writes_every_stored_state_byte_for_byte(engine: SandboxEngine) -> None:
    written = written_states(engine)
    assert list(written) == list(STORED)
    for name, states in STORED.items():
        assert [encoded(state) for state in written[name]] == [encoded(state) for state in states], name


def test_a_stored_state_loads_and_is_written_back_byte_for_byte() -> None:
    for states in STORED.values():
        for state in states:
            assert encoded(dump_state(load_state(json.loads(encoded(state))))) == encoded(state)


def waiting_state() -> dict[str, Any]:
    """A stored state with a wait task run in the phase `waiting` (its last activation)."""
    stored: dict[str, Any] = json.loads(encoded(STORED["kept-wait"][1]))
    assert stored["activations"][-1]["kind"] == "wait"
    return stored


@pytest.mark.parametrize(
    ("changes", "refusal"),
    [
        ({"kind": "loop"}, "a task run of kind 'loop', which is no kind this server knows"),
        ({"items": [1]}, "a wait task run holding items = [1], which its kind has not"),
        ({"phase": "listening"}, "a wait task run in the phase 'listening', which its kind has not"),
        ({"colour": "red"}, "a wait task run with the field 'colour', which no task run has"),
    ],
)
def test_a_stored_task_run_its_kind_cannot_hold_is_refused(changes: dict[str, Any], refusal: str) -> None:
    stored = waiting_state()
    stored["activations"][-1].update(changes)
    with pytest.raises(StateFormatError) as refused:
        load_state(stored)
    assert str(refused.value) == refusal


def test_a_stored_task_run_without_a_field_it_needs_is_refused() -> None:
    stored = waiting_state()
    del stored["activations"][-1]["reference"]
    with pytest.raises(StateFormatError, match="a wait task run without a field it needs"):
        load_state(stored)


def test_a_task_run_of_a_kind_no_state_stores_is_not_written() -> None:
    state = load_state(waiting_state())
    state.activations[99] = LoopRun(id=99, reference="/do/9/x", name="x", run=0, parent=0, cause=None)
    with pytest.raises(StateFormatError, match="a task run of type LoopRun, which is no kind a state stores"):
        dump_state(state)
