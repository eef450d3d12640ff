"""A run's state in its stored form (every engine test also sends each state through it between inputs)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from auto_runtime.functions.workflow.engine.state_codec import StateFormatError, dump_state, load_state
from auto_runtime.sandbox.engine import SandboxEngine
from tests.functions.workflow.runner import Run
from tests.functions.workflow.stored_states import FIXTURE, encoded, written_states
from tests.functions.workflow.test_engine_flow import FORK


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
KINDS_AND_PHASES = {
    ("root", "new"),
    ("do", "new"),
    ("set", "new"),
    ("switch", "new"),
    ("for", "new"),
    ("fork", "new"),
    ("raise", "new"),
    ("emit", "new"),
    ("wait", "new"),
    ("wait", "waiting"),
    ("call", "new"),
    ("call", "waiting"),
    ("listen", "new"),
    ("listen", "listening"),
    ("try", "new"),
    ("try", "trying"),
    ("try", "delay"),
    ("try", "catching"),
}


def test_the_stored_states_hold_every_kind_of_task_run_in_every_phase() -> None:
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
