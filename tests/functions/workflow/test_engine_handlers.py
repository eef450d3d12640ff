"""The engine's tables of handlers: an input of a type it does not take, a task run of a kind it has no body for,
a timer armed for no purpose it knows and a message for a task run of another kind are refused at once, by name."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import pytest

from auto_runtime.functions.workflow.engine.handlers import NoHandler
from auto_runtime.functions.workflow.engine.model import ArmTimer
from auto_runtime.functions.workflow.engine.state import CallInfo, TimerInfo
from auto_runtime.functions.workflow.engine.task_runs import TaskRunBase
from auto_runtime.sandbox.engine import SandboxEngine
from tests.functions.workflow.runner import T0, Run
from tests.functions.workflow.stored_states import kept_begin

HEAD = "document: { dsl: '1.0.3', namespace: tests, name: handlers, version: '1.0.0' }\n"


@dataclass(frozen=True)
class Resumed:
    """An input the engine does not take."""

    id: str
    at: int


@dataclass(kw_only=True)
class LoopRun(TaskRunBase):
    """A kind of task run the engine has no body for."""

    KIND = "loop"


def yield_timer(run: Run) -> ArmTimer:
    assert run.last is not None
    (found,) = [o for o in run.last.outputs if isinstance(o, ArmTimer) and o.purpose == "yield"]
    return found


def test_an_input_of_a_type_the_engine_does_not_take_is_refused(engine: SandboxEngine) -> None:
    run = Run(engine, HEAD + "do:\n  - nap: { wait: PT1M }\n")
    run.start({})
    before = copy.deepcopy(run.state)
    with pytest.raises(NoHandler, match=r"no handler for the input Resumed \(it handles CallAnswered, CancelRequested"):
        run.apply(Resumed("I9", T0 + 1))  # type: ignore[arg-type]
    assert run.state == before


def test_a_task_run_of_a_kind_without_a_body_is_refused_when_it_begins(engine: SandboxEngine) -> None:
    source, _play = kept_begin("set")
    run = Run(engine, source)
    run.start({})
    (kept,) = run.state.pending
    was = run.state.activations[kept.activation]
    run.state.activations[kept.activation] = LoopRun(
        id=was.id, reference=was.reference, name=was.name, run=0, parent=was.parent, cause=was.cause
    )
    with pytest.raises(NoHandler, match=r"no handler for the task run LoopRun \(it handles CallRun, DoRun, EmitRun"):
        run.fire(yield_timer(run).timer_id, T0 + 1)


def test_a_timer_armed_for_no_purpose_the_engine_knows_is_refused(engine: SandboxEngine) -> None:
    run = Run(engine, HEAD + "do:\n  - nap: { wait: PT1M }\n")
    run.start({})
    (timer_id,) = [key for key, timer in run.state.timers.items() if timer.purpose == "wait"]
    wait = run.state.timers[timer_id]
    run.state.timers[timer_id] = TimerInfo(wait.activation, "snooze", wait.armed_in, wait.due_at, wait.armed_at)
    with pytest.raises(NoHandler, match=r"no handler for a timer armed for 'snooze'"):
        run.fire(timer_id, wait.due_at)


def test_an_answer_for_a_task_run_that_is_no_call_is_refused(engine: SandboxEngine) -> None:
    run = Run(engine, HEAD + "do:\n  - nap: { wait: PT1M }\n")
    run.start({})
    (nap,) = [a for a in run.state.activations.values() if a.reference == "/do/0/nap"]
    run.state.calls["key"] = CallInfo(nap.id, "callee", "computation", "sum", "I1")
    with pytest.raises(TypeError, match=r"the task run /do/0/nap is a wait task run, not a CallRun"):
        run.answer("key", T0 + 1)
