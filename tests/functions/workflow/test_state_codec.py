"""A run's state in its stored form (every engine test also sends each state through it between inputs)."""

from __future__ import annotations

import json

import pytest

from auto_runtime.functions.workflow.engine.state_codec import StateFormatError, dump_state, load_state
from auto_runtime.sandbox.engine import SandboxEngine
from tests.functions.workflow.runner import Run
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
