"""Flow in the engine: set, if, then, switch, for, fork, raise, wait, export, the document's output and yields."""

from __future__ import annotations

import uuid

from auto_runtime.functions.workflow.engine.decider import CALL_NAMESPACE
from auto_runtime.functions.workflow.engine.model import (
    ArmTimer,
    CancelCall,
    CancelTimer,
    EmitEvent,
    Settle,
    Transition,
)
from auto_runtime.functions.workflow.engine.run_values import input_issues
from auto_runtime.sandbox.engine import SandboxEngine
from tests.functions.workflow.runner import RUN_ID, T0, Run, calls, outputs_of, settled, steps

HEAD = "document: { dsl: '1.0.3', namespace: tests, name: flow, version: '1.0.0' }\n"
STANDARD = "https://open-workflow-specification.org/spec/1.0.0/errors/"


def timers(transition: object, purpose: str) -> list[ArmTimer]:
    return [o for o in outputs_of(transition, ArmTimer) if isinstance(o, ArmTimer) and o.purpose == purpose]  # type: ignore[arg-type]


def test_set_replaces_the_data_and_if_skips(engine: SandboxEngine) -> None:
    run = Run(
        engine,
        HEAD
        + "do:\n"
        + "  - first: { set: { a: 1 } }\n"
        + "  - skipped: { if: '${ data[\"a\"] > 5 }', set: { never: true }, then: end }\n"
        + '  - second: { set: \'${ {"b": data["a"] + 1} }\' }\n',
    )
    started = run.start({"ignored": True})
    assert steps(started) == [
        ("I1_1", "step_finished", "/do/0/first", "I1"),
        ("I1_2", "step_skipped", "/do/1/skipped", "I1_1"),
        ("I1_3", "step_finished", "/do/2/second", "I1_2"),
    ]
    assert settled(started) == Settle("succeeded", output={"b": 2})
    assert started.facts[0].data["output_kinds"] == ["arm_timer", "cancel_timer", "settle"]


def test_then_jumps_back_and_a_jumped_over_task_records_nothing(engine: SandboxEngine) -> None:
    run = Run(
        engine,
        HEAD
        + "do:\n"
        + '  - count: { set: \'${ {"n": data["n"] + 1} }\' }\n'
        + "  - again: { switch: [ { more: { when: 'data[\"n\"] < 3', then: count } }, { done: { then: last } } ] }\n"
        + "  - never: { set: { never: true } }\n"
        + "  - last: { set: '${ data }' }\n",
    )
    started = run.start({"n": 0})
    assert steps(started) == [
        ("I1_1", "step_finished", "/do/0/count", "I1"),
        ("I1_2", "step_finished", "/do/1/again", "I1_1"),
        ("I1_3", "step_finished", "/do/0/count", "I1_2"),
        ("I1_4", "step_finished", "/do/1/again", "I1_3"),
        ("I1_5", "step_finished", "/do/0/count", "I1_4"),
        ("I1_6", "step_finished", "/do/1/again", "I1_5"),
        ("I1_7", "step_finished", "/do/3/last", "I1_6"),
    ]
    assert [f.data["run"] for f in started.facts[1:]] == [1, 1, 2, 2, 3, 3, 1]
    assert settled(started) == Settle("succeeded", output={"n": 3})


def test_the_first_case_without_when_is_taken_wherever_it_stands(engine: SandboxEngine) -> None:
    run = Run(
        engine,
        HEAD
        + "do:\n"
        + "  - pick: { switch: [ { fallback: { then: b } }, { never: { when: 'False', then: a } } ] }\n"
        + "  - a: { set: { v: a } }\n"
        + "  - b: { set: { v: b } }\n",
    )
    assert settled(run.start({})) == Settle("succeeded", output={"v": "b"})


def test_exit_leaves_the_list_and_its_holder_completes(engine: SandboxEngine) -> None:
    run = Run(
        engine,
        HEAD
        + "do:\n"
        + "  - inner:\n"
        + "      do:\n"
        + "        - x: { set: { x: 1 }, then: exit }\n"
        + "        - y: { set: { y: 1 } }\n"
        + "  - after: { set: '${ data | {\"after\": True} }' }\n",
    )
    started = run.start({})
    assert steps(started) == [
        ("I1_1", "step_finished", "/do/0/inner", "I1"),
        ("I1_2", "step_finished", "/do/0/inner/do/0/x", "I1_1"),
        ("I1_3", "step_finished", "/do/1/after", "I1_1"),
    ]
    assert settled(started) == Settle("succeeded", output={"after": True, "x": 1})


def test_for_with_while_item_and_index(engine: SandboxEngine) -> None:
    run = Run(
        engine,
        HEAD
        + "do:\n"
        + "  - loop:\n"
        + "      for: { in: '${ [5, 6, 7, 8] }', each: value, at: position }\n"
        + "      while: 'position < 3'\n"
        + "      do:\n"
        + "        - add: { set: '${ data + [value * 10 + position] }' }\n",
    )
    started = run.start([])
    assert settled(started) == Settle("succeeded", output=[50, 61, 72])
    assert [f.data["run"] for f in started.facts[2:]] == [1, 2, 3]


def test_for_in_must_give_an_array(engine: SandboxEngine) -> None:
    run = Run(engine, HEAD + "do:\n  - loop: { for: { in: '${ 3 }' }, do: [ { a: { set: {} } } ] }\n")
    started = run.start({})
    assert started.facts[1].data["error"] == {
        "type": STANDARD + "validation",
        "title": "for.in must give an array to iterate over",
    }
    assert settled(started) == Settle(
        "rejected",
        rejection={"reason": "invalid_input", "detail": "for.in must give an array to iterate over (at /do/0/loop)"},
    )


def test_an_expression_that_raises_ends_the_run_invalid_input(engine: SandboxEngine) -> None:
    run = Run(engine, HEAD + "do:\n  - read: { set: '${ data[\"missing\"] }' }\n")
    started = run.start({})
    assert started.facts[1].data == {
        "name": "read",
        "reference": "/do/0/read",
        "run": 1,
        "times": 1,
        "outcome": "raised",
        "error": {"type": STANDARD + "expression", "title": "An expression failed"},
    }
    assert settled(started) == Settle(
        "rejected",
        rejection={
            "reason": "invalid_input",
            "detail": 'An expression failed: data["missing"]: KeyError: missing (at /do/0/read)',
        },
    )


FORK = (
    HEAD
    + """\
do:
  - both:
      fork:
        compete: ${COMPETE}
        branches:
          - left: { call: run_definition, with: { type: computation, name: left } }
          - right:
              do:
                - call-right: { call: run_definition, with: { type: computation, name: right } }
"""
)


def test_a_plain_fork_waits_for_every_branch(engine: SandboxEngine) -> None:
    run = Run(engine, FORK.replace("${COMPETE}", "false"))
    started = run.start({})
    assert steps(started) == [
        ("I1_1", "step_started", "/do/0/both", "I1"),
        ("I1_2", "step_waiting", "/do/0/both/fork/branches/0/left", "I1_1"),
        ("I1_3", "step_started", "/do/0/both/fork/branches/1/right", "I1_1"),
        ("I1_4", "step_waiting", "/do/0/both/fork/branches/1/right/do/0/call-right", "I1_3"),
    ]
    left, right = calls(started)
    second = run.answer(right.key, T0 + 10, output="R")
    assert steps(second) == [
        ("I2_1", "step_finished", "/do/0/both/fork/branches/1/right/do/0/call-right", "I2"),
        ("I2_2", "step_finished", "/do/0/both/fork/branches/1/right", "I2"),
    ]
    third = run.answer(left.key, T0 + 20, output="L")
    assert steps(third) == [
        ("I3_1", "step_finished", "/do/0/both/fork/branches/0/left", "I3"),
        ("I3_2", "step_finished", "/do/0/both", "I3"),
    ]
    assert settled(third) == Settle("succeeded", output=["L", "R"])


def test_a_failing_branch_cancels_its_siblings_inner_first(engine: SandboxEngine) -> None:
    run = Run(engine, FORK.replace("${COMPETE}", "false"))
    left, _right = calls(run.start({}))
    failed = run.answer(left.key, T0 + 10, status="rejected", rejection={"reason": "invalid_input"})
    assert steps(failed) == [
        ("I2_1", "step_failed", "/do/0/both/fork/branches/0/left", "I2"),
        ("I2_2", "step_failed", "/do/0/both/fork/branches/1/right/do/0/call-right", "I2"),
        ("I2_3", "step_failed", "/do/0/both/fork/branches/1/right", "I2"),
        ("I2_4", "step_failed", "/do/0/both", "I2"),
    ]
    assert [f.data["outcome"] for f in failed.facts[1:]] == ["raised", "cancelled", "cancelled", "raised"]
    assert "error" not in failed.facts[2].data
    cancelled = [o for o in outputs_of(failed, CancelCall) if isinstance(o, CancelCall)]
    assert [(c.run_id, c.kind) for c in cancelled] == [(_right.run_id, "parent_ended")]
    ending = settled(failed)
    assert ending is not None and ending.rejection is not None and ending.rejection["reason"] == "invalid_input"


def test_a_competing_fork_takes_the_first_to_complete(engine: SandboxEngine) -> None:
    run = Run(engine, FORK.replace("${COMPETE}", "true"))
    left, right = calls(run.start({}))
    lost = run.answer(left.key, T0 + 5, status="rejected", rejection={"reason": "unavailable"})
    assert steps(lost) == [("I2_1", "step_failed", "/do/0/both/fork/branches/0/left", "I2")]
    assert settled(lost) is None
    won = run.answer(right.key, T0 + 10, output="R")
    assert steps(won) == [
        ("I3_1", "step_finished", "/do/0/both/fork/branches/1/right/do/0/call-right", "I3"),
        ("I3_2", "step_finished", "/do/0/both/fork/branches/1/right", "I3"),
        ("I3_3", "step_finished", "/do/0/both", "I3"),
    ]
    assert settled(won) == Settle("succeeded", output="R")


def test_a_competing_fork_cancels_the_losers(engine: SandboxEngine) -> None:
    run = Run(engine, FORK.replace("${COMPETE}", "true"))
    left, right = calls(run.start({}))
    won = run.answer(left.key, T0 + 5, output="L")
    assert steps(won) == [
        ("I2_1", "step_finished", "/do/0/both/fork/branches/0/left", "I2"),
        ("I2_2", "step_failed", "/do/0/both/fork/branches/1/right/do/0/call-right", "I2"),
        ("I2_3", "step_failed", "/do/0/both/fork/branches/1/right", "I2"),
        ("I2_4", "step_finished", "/do/0/both", "I2"),
    ]
    assert [(c.run_id, c.kind) for c in outputs_of(won, CancelCall) if isinstance(c, CancelCall)] == [
        (right.run_id, "parent_ended")
    ]
    assert settled(won) == Settle("succeeded", output="L")


def test_raise_a_named_error_and_one_without_status(engine: SandboxEngine) -> None:
    source = (
        HEAD
        + "use: { errors: { late: { type: timeout, status: 408, title: Late } } }\n"
        + "do:\n  - stop: { raise: { error: late } }\n"
    )
    ending = settled(Run(engine, source).start({}))
    assert ending == Settle("rejected", rejection={"reason": "unavailable", "detail": "Late (at /do/0/stop)"})
    source = HEAD + "do:\n  - stop: { raise: { error: { type: '${ \"x\" }', status: '${ None }' } } }\n"
    ending = settled(Run(engine, source).start({}))
    assert ending == Settle(
        "rejected",
        rejection={
            "reason": "invalid_input",
            "detail": "raise names no error with a type and a status (at /do/0/stop)",
        },
    )


def test_raise_keeps_the_detail_it_writes(engine: SandboxEngine) -> None:
    source = (
        HEAD + "do:\n  - stop:\n      raise:\n        error:\n"
        '          { type: validation, status: 400, title: Bad input, detail: \'${ "Missing: " + data["f"] }\' }\n'
    )
    ending = settled(Run(engine, source).start({"f": "audience"}))
    assert ending == Settle(
        "rejected", rejection={"reason": "invalid_input", "detail": "Bad input: Missing: audience (at /do/0/stop)"}
    )


def test_wait_arms_a_timer_and_resumes_when_it_fires(engine: SandboxEngine) -> None:
    run = Run(
        engine, HEAD + 'do:\n  - pause: { wait: \'${ {"seconds": data["s"]} }\' }\n  - done: { set: { done: true } }\n'
    )
    started = run.start({"s": 1.5})
    assert steps(started) == [("I1_1", "step_waiting", "/do/0/pause", "I1")]
    assert started.facts[1].data["waits_for"] == "timer"
    (timer,) = timers(started, "wait")
    assert timer.due_at == T0 + 1_500
    fired = run.fire(timer.timer_id, T0 + 1_502)
    assert fired.facts[0].causation_id == "I1"
    assert steps(fired) == [
        ("I2_1", "step_finished", "/do/0/pause", "I2"),
        ("I2_2", "step_finished", "/do/1/done", "I2_1"),
    ]
    assert run.fire(timer.timer_id, T0 + 2_000).stale


def test_export_sets_the_context_and_the_document_output_reads_it(engine: SandboxEngine) -> None:
    source = (
        HEAD
        + 'output: { as: \'${ {"data": data, "seen": context["seen"]} }\' }\n'
        + "do:\n"
        + '  - note: { set: { a: 1 }, export: { as: \'${ {"seen": output["a"] + task["output"]["a"]} }\' } }\n'
        + "  - read: { set: '${ context }' }\n"
    )
    assert settled(Run(engine, source).start({})) == Settle("succeeded", output={"data": {"seen": 2}, "seen": 2})


def test_an_output_that_misses_its_schema_ends_the_run_unworkable(engine: SandboxEngine) -> None:
    source = HEAD + "output: { schema: { document: { type: string } } }\ndo:\n  - a: { set: { n: 1 } }\n"
    ending = settled(Run(engine, source).start({}))
    assert ending == Settle(
        "rejected",
        rejection={
            "reason": "conflict",
            "detail": "The output does not match the output schema: The output: expected a string.",
            "kind": "unworkable",
        },
    )


def test_an_input_yields_after_100_tasks(engine: SandboxEngine) -> None:
    source = (
        HEAD + "do:\n  - loop:\n      for: { in: '${ list(range(150)) }' }\n      do:\n        - n: { set: { n: 1 } }\n"
    )
    run = Run(engine, source)
    started = run.start({})
    assert started.facts[0].data["step_count"] == 100
    assert steps(started)[0] == ("I1_1", "step_started", "/do/0/loop", "I1")
    (timer,) = timers(started, "yield")
    assert timer.due_at == T0
    resumed = run.fire(timer.timer_id, T0 + 1)
    assert resumed.facts[0].causation_id == "I1"
    assert resumed.facts[0].data["step_count"] == 52
    assert steps(resumed)[0] == ("I2_1", "step_finished", "/do/0/loop/do/0/n", "I2")
    assert settled(resumed) == Settle("succeeded", output={"n": 1})


def test_a_run_input_is_checked_against_the_input_schema() -> None:
    document = {"input": {"schema": {"document": {"type": "object", "required": ["month"]}}}}
    (issue,) = input_issues(document, {})
    assert issue.pointer == "/input"
    assert input_issues(document, {"month": "2026-09"}) == []
    assert input_issues({}, 3) == []


def test_a_branch_that_completes_at_once_wins_and_later_branches_never_start(engine: SandboxEngine) -> None:
    source = (
        HEAD
        + "do:\n  - race:\n      fork:\n        compete: true\n        branches:\n"
        + "          - quick: { set: { winner: quick } }\n"
        + "          - slow: { call: run_definition, with: { type: computation, name: slow } }\n"
    )
    started = Run(engine, source).start({})
    assert steps(started) == [
        ("I1_1", "step_finished", "/do/0/race", "I1"),
        ("I1_2", "step_finished", "/do/0/race/fork/branches/0/quick", "I1_1"),
    ]
    assert calls(started) == []
    assert settled(started) == Settle("succeeded", output={"winner": "quick"})


def test_emit_derives_its_id_and_refuses_a_computed_reserved_type(engine: SandboxEngine) -> None:
    source = (
        HEAD
        + "do:\n  - tell:\n      emit:\n        event:\n          with:\n"
        + "            type: '${ data[\"type\"] }'\n            source: '${ \"/billing\" }'\n"
        + "            data: { n: 1 }\n            region: eu\n"
    )
    run = Run(engine, source)
    started = run.start({"type": "com.acme.told"})
    (emitted,) = [o for o in started.outputs if isinstance(o, EmitEvent)]
    assert emitted.event == {
        "specversion": "1.0",
        "id": str(uuid.uuid5(CALL_NAMESPACE, f"{RUN_ID}/do/0/tell#1:emit")),
        "time": "2026-09-21T14:13:20.000Z",
        "type": "com.acme.told",
        "source": "/billing",
        "data": {"n": 1},
        "region": "eu",
    }
    assert settled(started) == Settle("succeeded", output={"type": "com.acme.told"})
    refused = settled(Run(engine, source).start({"type": "run_started"}))
    assert refused == Settle(
        "rejected",
        rejection={
            "reason": "invalid_input",
            "detail": "The event to emit is not one the playbook takes: the type run_started is reserved "
            "(at /do/0/tell)",
        },
    )


def test_exit_in_a_for_body_stops_the_loop(engine: SandboxEngine) -> None:
    source = (
        HEAD
        + "do:\n  - loop:\n      for: { in: '${ [1, 2, 3] }' }\n      do:\n"
        + "        - add: { set: '${ data + [item] }' }\n"
        + "        - stop: { if: 'item == 2', set: '${ data }', then: exit }\n"
        + "  - after: { set: '${ {\"seen\": data} }' }\n"
    )
    started = Run(engine, source).start([])
    assert settled(started) == Settle("succeeded", output={"seen": [1, 2]})
    assert [(f.type, f.data["reference"], f.data["run"]) for f in started.facts[1:]] == [
        ("step_finished", "/do/0/loop", 1),
        ("step_finished", "/do/0/loop/do/0/add", 1),
        ("step_skipped", "/do/0/loop/do/1/stop", 1),
        ("step_finished", "/do/0/loop/do/0/add", 2),
        ("step_finished", "/do/0/loop/do/1/stop", 2),
        ("step_finished", "/do/1/after", 1),
    ]


def test_end_in_a_plain_fork_branch_ends_the_run_when_the_fork_completes(engine: SandboxEngine) -> None:
    source = (
        HEAD
        + "do:\n  - both:\n      fork:\n        branches:\n"
        + "          - early: { set: { early: true }, then: end }\n"
        + "          - late: { call: run_definition, with: { type: computation, name: late } }\n"
        + "  - never: { set: { never: true } }\n"
    )
    run = Run(engine, source)
    started = run.start({})
    assert settled(started) is None
    answered = run.answer(calls(started)[0].key, T0 + 10, output={"late": True})
    assert settled(answered) == Settle("succeeded", output=[{"early": True}, {"late": True}])
    assert [f.data["reference"] for f in answered.facts[1:]] == ["/do/0/both/fork/branches/1/late", "/do/0/both"]


def test_each_step_is_caused_by_an_entry_recorded_before_it(engine: SandboxEngine) -> None:
    """A loop's next iteration that starts in a later input, skipped, then the loop completing in that input:
    the iteration's first task is caused by the input, never by the loop's entry that comes after it (seeds,
    "A run's history": each event comes after the event that caused it)."""
    run = Run(
        engine,
        HEAD
        + "do:\n  - loop:\n      for: { in: '${ [1, 2] }' }\n      do:\n"
        + "        - pause: { if: 'index == 0', wait: PT0.1S }\n",
    )
    started = run.start({})
    (timer,) = timers(started, "wait")
    fired = run.fire(timer.timer_id, T0 + 100)
    assert steps(fired) == [
        ("I2_1", "step_finished", "/do/0/loop/do/0/pause", "I2"),
        ("I2_2", "step_skipped", "/do/0/loop/do/0/pause", "I2"),
        ("I2_3", "step_finished", "/do/0/loop", "I2"),
    ]
    for transition in (started, fired):
        seen = {transition.facts[0].id}
        for fact in transition.facts[1:]:
            assert fact.causation_id in seen, fact
            seen.add(fact.id)


def test_of_competing_branches_that_complete_in_one_input_the_lowest_index_wins(engine: SandboxEngine) -> None:
    """Spec 3.2: "the first branch to complete wins (same input → lowest index)": a branch of two tasks before
    a branch of one, both completing at once; the branch after the winner never starts."""
    source = (
        HEAD
        + "do:\n  - race:\n      fork:\n        compete: true\n        branches:\n"
        + "          - longer:\n              do:\n                - one: { set: { step: 1 } }\n"
        + "                - two: { set: { winner: longer } }\n"
        + "          - shorter: { set: { winner: shorter } }\n"
    )
    started = Run(engine, source).start({})
    assert settled(started) == Settle("succeeded", output={"winner": "longer"})
    assert steps(started) == [
        ("I1_1", "step_finished", "/do/0/race", "I1"),
        ("I1_2", "step_finished", "/do/0/race/fork/branches/0/longer", "I1_1"),
        ("I1_3", "step_finished", "/do/0/race/fork/branches/0/longer/do/0/one", "I1_2"),
        ("I1_4", "step_finished", "/do/0/race/fork/branches/0/longer/do/1/two", "I1_3"),
    ]


def test_a_competing_fork_runs_each_branch_until_it_waits_then_the_next(engine: SandboxEngine) -> None:
    """A branch that waits does not complete in this input: the next branch starts, and completing at once,
    wins; the waiting one is cancelled."""
    source = (
        HEAD
        + "do:\n  - race:\n      fork:\n        compete: true\n        branches:\n"
        + "          - slow:\n              do:\n                - pause: { wait: PT1S }\n"
        + "          - quick:\n              do:\n                - one: { set: { winner: quick } }\n"
    )
    started = Run(engine, source).start({})
    assert settled(started) == Settle("succeeded", output={"winner": "quick"})
    assert [(kind, reference) for _id, kind, reference, _cause in steps(started)] == [
        ("step_finished", "/do/0/race"),
        ("step_failed", "/do/0/race/fork/branches/0/slow"),
        ("step_failed", "/do/0/race/fork/branches/0/slow/do/0/pause"),
        ("step_finished", "/do/0/race/fork/branches/1/quick"),
        ("step_finished", "/do/0/race/fork/branches/1/quick/do/0/one"),
    ]


def test_a_yield_inside_a_competing_branch_keeps_the_work_around_it(engine: SandboxEngine) -> None:
    """Past 100 tasks the input yields inside a branch run on its own: the rest of that branch, the branches
    after it and what follows the fork go on in the next input, where the second completes and wins while the
    first, which would wait, has not."""
    source = (
        HEAD
        + "do:\n  - race:\n      fork:\n        compete: true\n        branches:\n"
        + "          - first:\n              do:\n"
        + "                - loop:\n                    for: { in: '${ list(range(150)) }' }\n"
        + "                    do:\n                      - step: { set: { n: 1 } }\n"
        + "                - pause: { wait: PT1S }\n"
        + "          - second: { set: { winner: second } }\n"
        + "  - after: { set: '${ data | {\"after\": True} }' }\n"
    )
    run = Run(engine, source)
    started = run.start({})
    assert settled(started) is None
    assert not any(f.data["reference"].startswith("/do/0/race/fork/branches/1") for f in started.facts[1:])
    (pending,) = [o for o in outputs_of(started, ArmTimer) if isinstance(o, ArmTimer) and o.purpose == "yield"]
    resumed = run.fire(pending.timer_id, T0 + 1)
    assert settled(resumed) == Settle("succeeded", output={"after": True, "winner": "second"})
    cancelled = [reference for _id, kind, reference, _cause in steps(resumed) if kind == "step_failed"]
    assert cancelled[-1] == "/do/0/race/fork/branches/0/first"


def test_a_plain_fork_runs_each_branch_until_it_waits_before_the_next_starts(engine: SandboxEngine) -> None:
    """README settled point 18: a plain fork's branches start in branch order, each running until it waits or
    ends before the next starts. When a later branch fails in the same input, the earlier branches' first steps
    were recorded (and then cancelled, inner first), not dropped unstarted; their waits are undone."""
    source = (
        HEAD
        + "do:\n  - both:\n      fork:\n        branches:\n"
        + "          - slow:\n              do:\n                - pause: { wait: PT1S }\n"
        + "          - calling:\n              do:\n"
        + "                - first: { set: { step: 1 } }\n"
        + "                - ask: { call: run_definition, with: { type: computation, name: ask } }\n"
        + "          - failing:\n"
        + "              raise: { error: { type: https://example.com/errors/lost, status: 500 } }\n"
    )
    failed = Run(engine, source).start({})
    assert _outcomes(failed) == [
        ("step_failed", "/do/0/both", "raised"),
        ("step_failed", "/do/0/both/fork/branches/0/slow", "cancelled"),
        ("step_failed", "/do/0/both/fork/branches/0/slow/do/0/pause", "cancelled"),
        ("step_failed", "/do/0/both/fork/branches/1/calling", "cancelled"),
        ("step_finished", "/do/0/both/fork/branches/1/calling/do/0/first", ""),
        ("step_failed", "/do/0/both/fork/branches/1/calling/do/1/ask", "cancelled"),
        ("step_failed", "/do/0/both/fork/branches/2/failing", "raised"),
    ]
    # The call and the wait the earlier branches began are undone in the same input.
    (call,) = calls(failed)
    assert [(c.key, c.kind) for c in outputs_of(failed, CancelCall) if isinstance(c, CancelCall)] == [
        (call.key, "parent_ended")
    ]
    (pause,) = timers(failed, "wait")
    assert pause.timer_id in [o.timer_id for o in outputs_of(failed, CancelTimer) if isinstance(o, CancelTimer)]
    assert settled(failed) == Settle(
        "rejected",
        rejection={
            "reason": "unavailable",
            "detail": "https://example.com/errors/lost (at /do/0/both/fork/branches/2/failing)",
        },
    )


def _outcomes(transition: Transition) -> list[tuple[str, str, str]]:
    """(type, reference, outcome words) of each fact after `workflow_input_applied`."""
    return [(f.type, str(f.data["reference"]), str(f.data.get("outcome", ""))) for f in transition.facts[1:]]


def test_a_yield_inside_a_plain_branch_starts_the_next_branches_in_the_next_input(engine: SandboxEngine) -> None:
    """Past 100 tasks the input yields inside the branch running on its own: the branches after it do not start
    in that input; they go on in the next, queued in branch order after the rest of the yielding branch, and
    the fork still outputs every branch in branch order."""
    source = (
        HEAD
        + "do:\n  - both:\n      fork:\n        branches:\n"
        + "          - first:\n              do:\n"
        + "                - loop:\n                    for: { in: '${ list(range(150)) }' }\n"
        + "                    do:\n                      - step: { set: { n: 1 } }\n"
        + "                - pause: { wait: PT1S }\n"
        + "          - second: { set: { second: true } }\n"
        + "          - third: { set: { third: true } }\n"
        + "  - after: { set: '${ {\"after\": data} }' }\n"
    )
    run = Run(engine, source)
    started = run.start({})
    assert settled(started) is None
    assert not any(f.data["reference"].startswith("/do/0/both/fork/branches/1") for f in started.facts[1:])
    (pending,) = timers(started, "yield")
    resumed = run.fire(pending.timer_id, T0 + 1)
    references = [reference for _id, _kind, reference, _cause in steps(resumed)]
    assert references.index("/do/0/both/fork/branches/1/second") < references.index("/do/0/both/fork/branches/2/third")
    (pause,) = timers(resumed, "wait")
    done = run.fire(pause.timer_id, T0 + 1000)
    assert settled(done) == Settle("succeeded", output={"after": [{"n": 1}, {"second": True}, {"third": True}]})
