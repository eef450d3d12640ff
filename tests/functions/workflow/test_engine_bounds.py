"""Time and work bounds in the engine: attempt durations, the document timeout, call waits, overrun, the
10,000 tasks without waiting and the 1,000 inputs in a row a run may wake itself."""

from __future__ import annotations

from auto_runtime.functions.workflow.engine.decider import INPUTS_WITHOUT_WAITING
from auto_runtime.functions.workflow.engine.model import ArmTimer, CancelCall, Settle, TimerFired, Transition
from auto_runtime.sandbox.engine import SandboxEngine
from tests.functions.workflow.runner import MAX_DURATION_MS, T0, Run, calls, outputs_of, settled, steps

HEAD = "document: { dsl: '1.0.3', namespace: tests, name: bounds, version: '1.0.0' }\n"


def timer(transition: Transition, purpose: str) -> ArmTimer:
    (found,) = [o for o in outputs_of(transition, ArmTimer) if isinstance(o, ArmTimer) and o.purpose == purpose]
    return found


def cancelled_calls(transition: Transition) -> list[tuple[str, str]]:
    return [(o.run_id, o.kind) for o in outputs_of(transition, CancelCall) if isinstance(o, CancelCall)]


ATTEMPT = (
    HEAD
    + """\
do:
  - guarded:
      try:
        - slow: { call: run_definition, with: { type: computation, name: slow } }
      catch:
        errors: { with: { type: timeout } }
        retry: { limit: { attempt: { duration: PT2S, count: 1 } } }
        do:
          - gave-up: { set: '${ {"status": error["status"], "instance": error["instance"]} }' }
"""
)


def test_an_attempt_past_its_duration_is_cancelled_and_fails_with_timeout(engine: SandboxEngine) -> None:
    run = Run(engine, ATTEMPT)
    first = run.start({})
    (call,) = calls(first)
    armed = timer(first, "attempt")
    assert armed.due_at == T0 + 2_000
    second = run.fire(armed.timer_id, T0 + 2_000)
    assert steps(second) == [
        ("I2_1", "step_failed", "/do/0/guarded/try/0/slow", "I2"),
        ("I2_2", "step_waiting", "/do/0/guarded/try/0/slow", "I2_1"),
    ]
    assert [f.data["run"] for f in second.facts[1:]] == [1, 2]
    assert second.facts[1].data["outcome"] == "cancelled"
    assert cancelled_calls(second) == [(call.run_id, "deadline")]
    (again,) = calls(second)
    assert again.run_id != call.run_id
    third = run.fire(timer(second, "attempt").timer_id, T0 + 4_000)
    assert steps(third) == [
        ("I3_1", "step_failed", "/do/0/guarded/try/0/slow", "I3"),
        ("I3_2", "step_finished", "/do/0/guarded/catch/do/0/gave-up", "I3_1"),
        ("I3_3", "step_finished", "/do/0/guarded", "I3"),
    ]
    assert settled(third) == Settle("succeeded", output={"instance": "/do/0/guarded", "status": 408})


def test_the_document_timeout_cancels_the_running_tasks_and_ends_the_run(engine: SandboxEngine) -> None:
    source = (
        HEAD
        + "timeout: { after: PT1M }\n"
        + "do:\n  - outer:\n      do:\n        - slow: { call: run_definition, with: { type: workflow, name: slow } }\n"
    )
    run = Run(engine, source)
    first = run.start({})
    (call,) = calls(first)
    armed = timer(first, "run_timeout")
    assert armed.due_at == T0 + 60_000
    fired = run.fire(armed.timer_id, T0 + 60_000)
    assert fired.facts[0].causation_id == "I1"
    assert steps(fired) == [
        ("I2_1", "step_failed", "/do/0/outer/do/0/slow", "I2"),
        ("I2_2", "step_failed", "/do/0/outer", "I2"),
    ]
    assert [f.data["outcome"] for f in fired.facts[1:]] == ["cancelled", "cancelled"]
    assert cancelled_calls(fired) == [(call.run_id, "deadline")]
    assert settled(fired) == Settle(
        "rejected", rejection={"reason": "unavailable", "detail": "The task did not finish within 60000 ms (at /)"}
    )


def test_a_call_past_its_wait_raises_timeout_and_cancels_the_callee(engine: SandboxEngine) -> None:
    run = Run(engine, HEAD + "do:\n  - compute: { call: run_definition, with: { type: computation, name: sum } }\n")
    first = run.start({})
    (call,) = calls(first)
    bound = timer(first, "call")
    assert bound.due_at == T0 + 70_000
    fired = run.fire(bound.timer_id, T0 + 70_000)
    assert steps(fired) == [("I2_1", "step_failed", "/do/0/compute", "I2")]
    assert fired.facts[1].data["error"]["title"] == "The task did not finish within 70000 ms"
    assert cancelled_calls(fired) == [(call.run_id, "deadline")]
    assert run.answer(call.key, T0 + 71_000, output=1).stale


def test_a_run_past_its_longest_duration_is_cancelled_as_overrun_without_steps(engine: SandboxEngine) -> None:
    run = Run(engine, HEAD + "do:\n  - child: { call: run_definition, with: { type: workflow, name: child } }\n")
    first = run.start({})
    (call,) = calls(first)
    deadline = timer(first, "deadline")
    assert deadline.due_at == T0 + MAX_DURATION_MS
    assert timer(first, "call").due_at == T0 + MAX_DURATION_MS
    overrun = run.apply(TimerFired(run.next_id(), deadline.due_at, deadline.timer_id))
    assert overrun.facts[0].data["step_count"] == 0 and len(overrun.facts) == 1
    assert cancelled_calls(overrun) == [(call.run_id, "deadline")]
    assert settled(overrun) == Settle(
        "rejected",
        rejection={"reason": "cancelled", "detail": "The run passed WORKFLOW_MAX_DURATION.", "kind": "overrun"},
    )


def test_ten_thousand_tasks_without_waiting_end_the_run(engine: SandboxEngine) -> None:
    source = HEAD + "do:\n  - spin: { set: {}, then: spin }\n"
    run = Run(engine, source)
    transition = run.start({})
    inputs = 1
    while settled(transition) is None:
        transition = run.fire(timer(transition, "yield").timer_id, T0 + inputs)
        inputs += 1
    assert inputs == 101
    assert settled(transition) == Settle(
        "rejected",
        rejection={
            "reason": "unavailable",
            "detail": "The workflow ran 10000 tasks without waiting for anything; it would never end (at /do/0/spin)",
        },
    )


def loop_of_waits(transition: Transition, run: Run, limit: int) -> tuple[Transition, int]:
    """Fire the run's wait timers, each at its due time, until it ends or `limit` inputs were applied."""
    inputs = 1
    while settled(transition) is None and inputs < limit:
        armed = timer(transition, "wait")
        transition = run.fire(armed.timer_id, armed.due_at)
        inputs += 1
    return transition, inputs


def test_a_run_that_wakes_itself_a_thousand_times_in_a_row_ends(engine: SandboxEngine) -> None:
    run = Run(engine, HEAD + "do:\n  - a: { wait: PT0S, then: a }\n")
    transition, inputs = loop_of_waits(run.start({}), run, 5_000)
    assert inputs == 1 + INPUTS_WITHOUT_WAITING + 1
    assert transition.facts[0].data["step_count"] == 0 and len(transition.facts) == 1
    assert settled(transition) == Settle(
        "rejected",
        rejection={
            "reason": "unavailable",
            "detail": "The workflow woke itself 1000 times in a row without waiting for anything outside itself; "
            "it would never end (at /do/0/a)",
        },
    )


def test_a_wait_shorter_than_a_second_is_no_wait(engine: SandboxEngine) -> None:
    source = HEAD + "do:\n  - spin: { set: {}, then: nap }\n  - nap: { wait: PT0.999S, then: spin }\n"
    run = Run(engine, source)
    transition, _ = loop_of_waits(run.start({}), run, 11)
    assert settled(transition) is None
    assert (run.state.tasks_since_wait, run.state.quick_inputs) == (2 + 2 * 10, 10)
    transition, _ = loop_of_waits(transition, run, 5_000)
    assert run.state.inputs == 1 + INPUTS_WITHOUT_WAITING + 1
    assert settled(transition) is not None
    assert settled(transition).rejection["detail"].endswith("(at /do/1/nap)")  # type: ignore[union-attr]


def test_a_wait_of_a_second_is_a_wait(engine: SandboxEngine) -> None:
    source = HEAD + "do:\n  - spin: { set: {}, then: nap }\n  - nap: { wait: PT1S, then: spin }\n"
    run = Run(engine, source)
    transition, inputs = loop_of_waits(run.start({}), run, 2 * INPUTS_WITHOUT_WAITING)
    assert settled(transition) is None and inputs == 2 * INPUTS_WITHOUT_WAITING
    assert run.state.tasks_since_wait == 0 and run.state.quick_inputs == 0


def test_an_answer_starts_the_count_of_inputs_the_run_woke_itself_again(engine: SandboxEngine) -> None:
    source = (
        HEAD + "do:\n  - ask: { call: run_definition, with: { type: computation, name: c } }\n"
        "  - nap: { wait: PT0S, then: ask }\n"
    )
    run = Run(engine, source)
    transition = run.start({})
    at = T0
    for _ in range(INPUTS_WITHOUT_WAITING + 1):
        (call,) = calls(transition)
        at += 1
        transition = run.answer(call.key, at, output={})
        assert run.state.quick_inputs == 0
        transition = run.fire(timer(transition, "wait").timer_id, at)
        assert run.state.quick_inputs == 1
    assert settled(transition) is None


def test_an_input_past_half_its_work_yields_between_tasks(engine: SandboxEngine) -> None:
    source = (
        HEAD + "do:\n  - loop:\n      for: { in: '${ list(range(10)) }' }\n"
        "      do:\n        - work: { set: '${ data + [sum(range(100000))] }' }\n"
    )
    run = Run(engine, source)
    transition = run.start([])
    moved = [len(transition.facts) - 1]
    while settled(transition) is None:
        transition = run.fire(timer(transition, "yield").timer_id, T0 + len(moved))
        moved.append(len(transition.facts) - 1)
    assert len(moved) > 1
    assert 1 + 1 < moved[0] < 1 + 10
    ending = settled(transition)
    assert ending is not None and ending.output == [4999950000] * 10


def test_the_host_resolves_call_bounds_and_a_computed_callee_waits_the_longest(engine: SandboxEngine) -> None:
    source = (
        HEAD
        + "do:\n  - ask: { call: run_definition, with: { type: interaction, name: approve } }\n"
        + "  - any: { call: run_definition, with: { type: '${ \"computation\" }', name: sum } }\n"
    )
    run = Run(engine, source)
    run.state.call_bounds_ms = {"interaction/approve": 3_600_000}
    first = run.start({})
    assert timer(first, "call").due_at == T0 + 3_600_000 + 60_000
    second = run.answer(calls(first)[0].key, T0 + 1_000, output={})
    assert timer(second, "call").due_at == T0 + 1_000 + 600_000 + 60_000


def test_the_state_keeps_step_counts_of_running_tasks_only(engine: SandboxEngine) -> None:
    """`times` counts entries of a task run that may still move; one that ended never moves again, so a long
    loop's state, kept with every input, does not grow with each task run it ran. A listen for `all` that
    waits again still counts on (`times` 2)."""
    source = (
        HEAD + "do:\n  - loop:\n      for: { in: '${ list(range(250)) }' }\n      do:\n        - step: { set: {} }\n"
        "  - hear: { listen: { to: { all: [ { with: { type: a } }, { with: { type: b } } ] } } }\n"
    )
    run = Run(engine, source)
    transition = run.start({})
    while not any(f.data.get("reference") == "/do/1/hear" for f in transition.facts[1:]):
        assert set(run.state.times) <= {"/#1#started", "/do/0/loop#1#started"}, run.state.times
        transition = run.fire(timer(transition, "yield").timer_id, T0 + 1)
    assert set(run.state.times) == {"/do/1/hear#1#waiting"}
    again = run.send({"id": "e1", "type": "a", "source": "/x"}, T0 + 2)
    assert again.facts[1].data["times"] == 2


KEEPS = (
    HEAD
    + """\
do:
  - big: { set: '${ "x" * data["n"] }' }
  - pause: { wait: PT1S }
  - done: { set: '${ len(data) }' }
"""
)

HOLDS = (
    HEAD
    + """\
do:
  - three:
      fork:
        branches:
          - first: { set: '${ "a" * 1_400_000 }' }
          - second:
              do:
                - pause: { wait: PT1S }
                - make: { set: '${ "b" * 1_400_000 }' }
          - third:
              do:
                - pause: { wait: PT2S }
                - make: { set: '${ "c" * 1_400_000 }' }
  - pause: { wait: PT1S }
  - done: { set: { done: true } }
"""
)


def run_firing(engine: SandboxEngine, source: str, value: object) -> tuple[int, Settle | None]:
    """Run `source`, firing its waits in due order; the number of inputs applied and how the run ended."""
    run = Run(engine, source)
    transition = run.start(value)
    inputs = 1
    due: dict[str, int] = {}
    while settled(transition) is None:
        due.update({o.timer_id: o.due_at for o in outputs_of(transition, ArmTimer) if isinstance(o, ArmTimer)})
        waits = {key: at for key, at in due.items() if key.endswith(":wait") and key in run.state.timers}
        next_timer = min(waits, key=lambda key: waits[key])
        transition = run.fire(next_timer, waits[next_timer])
        inputs += 1
    return inputs, settled(transition)


def test_a_value_kept_across_a_wait_is_bounded_by_one_inputs_change(engine: SandboxEngine) -> None:
    """Spec 13: one input's change is at most 1,572,864 bytes, which bounds a value kept across a wait."""
    assert run_firing(engine, KEEPS, {"n": 1_500_000}) == (2, Settle("succeeded", output=1_500_000))
    inputs, ending = run_firing(engine, KEEPS, {"n": 1_600_000})
    assert inputs == 1 and ending is not None and ending.rejection is not None
    assert ending.rejection["reason"] == "unavailable"
    assert ending.rejection["detail"].startswith("One input added 16")
    assert ending.rejection["detail"].endswith("more than the 1572864 an input may add")


def test_a_run_holds_at_most_4_mib(engine: SandboxEngine) -> None:
    """Three values of 1.4 MB, one input after another: the third passes the 4 MiB a run holds."""
    inputs, ending = run_firing(engine, HOLDS, {})
    assert inputs == 3 and ending is not None and ending.rejection is not None
    assert ending.rejection["reason"] == "unavailable"
    assert ending.rejection["detail"].startswith("The run would hold 42")
