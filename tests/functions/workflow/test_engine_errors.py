"""Errors in the engine: the called run's endings (spec 6.1), catching (7.3), retries (7.4), timeouts (7.5),
and how an uncaught error ends the run (8)."""

from __future__ import annotations

from typing import Any

import pytest

from auto_runtime.functions.workflow.engine.model import ArmTimer, CancelCall, Settle
from auto_runtime.sandbox.engine import SandboxEngine
from tests.functions.workflow.runner import T0, Run, calls, outputs_of, settled, steps

HEAD = "document: { dsl: '1.0.3', namespace: tests, name: errors, version: '1.0.0' }\n"
STANDARD = "https://open-workflow-specification.org/spec/1.0.0/errors/"
PROBLEMS = "https://on.auto/problems/"

CAUGHT = (
    HEAD
    + """\
do:
  - guarded:
      try:
        - read:
            call: run_definition
            with: { type: recall, name: region-balances }
      catch:
        errors: { with: { type: '${TYPE}' } }
        as: failure
        do:
          - show: { set: '${ failure }' }
"""
)

ROWS: list[tuple[dict[str, Any], str, int, str]] = [
    ({"reason": "invalid_input", "detail": "Bad"}, STANDARD + "validation", 400, "invalid_input"),
    ({"reason": "forbidden"}, STANDARD + "authorization", 403, "forbidden"),
    ({"reason": "not_found"}, STANDARD + "configuration", 404, "not_found"),
    ({"reason": "conflict"}, STANDARD + "runtime", 409, "conflict"),
    ({"reason": "conflict", "kind": "effect_unknown"}, PROBLEMS + "effect_unknown", 409, "conflict"),
    ({"reason": "conflict", "kind": "tools_called"}, PROBLEMS + "tools_called", 409, "conflict"),
    ({"reason": "unavailable"}, STANDARD + "communication", 503, "unavailable"),
    ({"reason": "unavailable", "kind": "tools_unfinished"}, PROBLEMS + "tools_unfinished", 503, "unavailable"),
    ({"reason": "unavailable", "kind": "rebuilding"}, PROBLEMS + "rebuilding", 503, "unavailable"),
    ({"reason": "cancelled", "kind": "deadline"}, PROBLEMS + "cancelled", 409, "cancelled"),
    ({"reason": "unanswered", "kind": "expired"}, PROBLEMS + "unanswered", 410, "unanswered"),
    ({"reason": "internal"}, STANDARD + "runtime", 500, "internal"),
]


@pytest.mark.parametrize(("rejection", "error_type", "status", "reason"), ROWS)
def test_a_rejected_callee_raises_the_error_of_its_reason(
    engine: SandboxEngine, rejection: dict[str, Any], error_type: str, status: int, reason: str
) -> None:
    run = Run(engine, CAUGHT.replace("${TYPE}", error_type))
    (call,) = calls(run.start({}))
    answered = run.answer(call.key, T0 + 10, status="rejected", rejection=rejection)
    expected: dict[str, Any] = {
        "type": error_type,
        "status": status,
        "instance": "/do/0/guarded/try/0/read",
        "title": f"The recall function region-balances rejected the run with {reason}",
    }
    if "detail" in rejection:
        expected["detail"] = rejection["detail"]
    if "kind" in rejection:
        expected["kind"] = rejection["kind"]
    assert settled(answered) == Settle("succeeded", output=expected)
    assert steps(answered) == [
        ("I2_1", "step_failed", "/do/0/guarded/try/0/read", "I2"),
        ("I2_2", "step_finished", "/do/0/guarded/catch/do/0/show", "I2_1"),
        ("I2_3", "step_finished", "/do/0/guarded", "I2"),
    ]
    assert answered.facts[1].data["outcome"] == "raised"
    assert answered.facts[1].data["error"] == {"type": error_type, "title": expected["title"]}
    assert answered.facts[0].data["input"]["rejection"] == {k: v for k, v in rejection.items() if k == "kind"}


def test_failed_and_unreachable_callees(engine: SandboxEngine) -> None:
    run = Run(engine, CAUGHT.replace("${TYPE}", "runtime"))
    (call,) = calls(run.start({}))
    ending = settled(run.answer(call.key, T0 + 10, status="failed", incident="inc-7"))
    assert ending is not None and ending.output == {
        "type": STANDARD + "runtime",
        "status": 500,
        "instance": "/do/0/guarded/try/0/read",
        "title": "The recall function region-balances failed",
        "detail": "The run failed with incident inc-7",
    }
    run = Run(engine, CAUGHT.replace("${TYPE}", "communication"))
    (call,) = calls(run.start({}))
    ending = settled(run.answer(call.key, T0 + 10, status="unreachable"))
    assert (
        ending is not None
        and ending.output["title"] == "run_definition could not reach the recall function region-balances"
    )


UNCAUGHT = (
    HEAD
    + """\
do:
  - read:
      call: run_definition
      with: { type: recall, name: region-balances, input: { month: 9 } }
"""
)


@pytest.mark.parametrize(
    ("rejection", "reason", "kind"),
    [
        ({"reason": "invalid_input", "detail": "Bad month"}, "invalid_input", None),
        ({"reason": "cancelled", "kind": "deadline"}, "invalid_input", None),
        ({"reason": "conflict", "kind": "tools_called", "because": "retried"}, "conflict", "tools_called"),
        ({"reason": "conflict", "kind": "effect_unknown"}, "conflict", "effect_unknown"),
        ({"reason": "unavailable", "kind": "tools_unfinished"}, "unavailable", "tools_unfinished"),
        ({"reason": "unavailable", "kind": "rebuilding"}, "unavailable", "rebuilding"),
        ({"reason": "unanswered", "kind": "undelivered"}, "unanswered", "undelivered"),
        ({"reason": "unavailable"}, "unavailable", None),
        ({"reason": "internal"}, "unavailable", None),
    ],
)
def test_an_uncaught_error_ends_the_run(
    engine: SandboxEngine, rejection: dict[str, Any], reason: str, kind: str | None
) -> None:
    run = Run(engine, UNCAUGHT)
    (call,) = calls(run.start({}))
    answered = run.answer(call.key, T0 + 10, status="rejected", rejection=rejection)
    ending = settled(answered)
    assert ending is not None and ending.status == "rejected" and ending.rejection is not None
    assert ending.rejection["reason"] == reason
    assert ending.rejection.get("kind") == kind
    assert steps(answered) == [("I2_1", "step_failed", "/do/0/read", "I2")]


def test_an_uncaught_invalid_input_keeps_its_detail_and_issues(engine: SandboxEngine) -> None:
    run = Run(engine, UNCAUGHT)
    (call,) = calls(run.start({}))
    issues = [{"detail": "month is text", "pointer": "/input/month"}]
    rejection = {"reason": "invalid_input", "detail": "Bad month", "errors": issues}
    ending = settled(run.answer(call.key, T0 + 10, status="rejected", rejection=rejection))
    assert ending is not None and ending.rejection == {
        "reason": "invalid_input",
        "detail": "The recall function region-balances rejected the run with invalid_input: Bad month (at /do/0/read)",
        "errors": issues,
    }


EFFECT = (
    HEAD
    + """\
do:
  - guarded:
      try:
        - pay: { call: run_definition, with: { type: interaction, name: pay } }
      catch: { ${CATCH} }
"""
)


def test_effect_unknown_is_caught_only_when_named(engine: SandboxEngine) -> None:
    rejection = {"reason": "conflict", "kind": "effect_unknown", "because": "timed_out"}
    run = Run(engine, EFFECT.replace("${CATCH}", "as: e"))
    (call,) = calls(run.start({"x": 1}))
    ending = settled(run.answer(call.key, T0 + 1, status="rejected", rejection=rejection))
    assert ending is not None and ending.rejection is not None
    assert (ending.rejection["reason"], ending.rejection["kind"], ending.rejection["because"]) == (
        "conflict",
        "effect_unknown",
        "timed_out",
    )
    run = Run(engine, EFFECT.replace("${CATCH}", "errors: { with: { kind: effect_unknown } }"))
    (call,) = calls(run.start({"x": 1}))
    assert settled(run.answer(call.key, T0 + 1, status="rejected", rejection=rejection)) == Settle(
        "succeeded", output={"x": 1}
    )


RETRY = (
    HEAD
    + """\
do:
  - guarded:
      try:
        - fetch: { call: run_definition, with: { type: computation, name: fetch } }
      catch:
        errors: { with: { status: 503 } }
        retry: { delay: PT1S, backoff: exponential, limit: { attempt: { count: 3 } } }
        do:
          - fallback: { set: { fell_back: true } }
"""
)


def test_exponential_retries_wait_1_2_4_seconds_then_catch_do(engine: SandboxEngine) -> None:
    run = Run(engine, RETRY)
    first = run.start({})
    now = T0
    keys = [calls(first)[0].key]
    for attempt, delay in enumerate((1_000, 2_000, 4_000), start=1):
        now += 50
        failed = run.answer(keys[-1], now, status="rejected", rejection={"reason": "unavailable"})
        assert steps(failed) == [
            (failed.facts[0].id + "_1", "step_failed", "/do/0/guarded/try/0/fetch", failed.facts[0].id)
        ]
        (timer,) = [o for o in outputs_of(failed, ArmTimer) if isinstance(o, ArmTimer) and o.purpose == "retry"]
        assert timer.due_at == now + delay
        now = timer.due_at
        again = run.fire(timer.timer_id, now)
        assert again.facts[0].causation_id == failed.facts[0].id
        assert steps(again) == [
            (again.facts[0].id + "_1", "step_waiting", "/do/0/guarded/try/0/fetch", again.facts[0].id)
        ]
        assert again.facts[1].data["run"] == attempt + 1
        keys.append(calls(again)[0].key)
    assert len(set(keys)) == 4
    last = run.answer(keys[-1], now + 50, status="rejected", rejection={"reason": "unavailable"})
    ids = last.facts[0].id
    assert steps(last) == [
        (f"{ids}_1", "step_failed", "/do/0/guarded/try/0/fetch", ids),
        (f"{ids}_2", "step_finished", "/do/0/guarded/catch/do/0/fallback", f"{ids}_1"),
        (f"{ids}_3", "step_finished", "/do/0/guarded", ids),
    ]
    assert (last.facts[1].data["run"], last.facts[1].data["times"]) == (4, 1)
    assert settled(last) == Settle("succeeded", output={"fell_back": True})


LIMITED = (
    HEAD
    + """\
do:
  - guarded:
      try:
        - fail: { raise: { error: { type: communication, status: 503 } } }
      catch:
        retry: { delay: PT10S, limit: { duration: PT25S } }
"""
)


def test_a_duration_limit_allows_retries_at_10_20_30_seconds(engine: SandboxEngine) -> None:
    run = Run(engine, LIMITED)
    transition = run.start({"kept": True})
    dues: list[int] = []
    while True:
        timers = [o for o in outputs_of(transition, ArmTimer) if isinstance(o, ArmTimer) and o.purpose == "retry"]
        if not timers:
            break
        dues.append(timers[0].due_at - T0)
        transition = run.fire(timers[0].timer_id, timers[0].due_at)
    assert dues == [10_000, 20_000, 30_000]
    assert settled(transition) == Settle("succeeded", output={"kept": True})


TIMEOUT = (
    HEAD
    + """\
do:
  - slow:
      call: run_definition
      with: { type: workflow, name: slow }
      timeout: { after: PT5S }
"""
)


def test_a_task_timeout_cancels_the_call_and_ends_the_run_unavailable(engine: SandboxEngine) -> None:
    run = Run(engine, TIMEOUT)
    first = run.start({})
    (timer,) = [o for o in outputs_of(first, ArmTimer) if isinstance(o, ArmTimer) and o.purpose == "timeout"]
    assert timer.due_at == T0 + 5_000
    fired = run.fire(timer.timer_id, T0 + 5_000)
    assert fired.facts[0].causation_id == "I1"
    assert steps(fired) == [("I2_1", "step_failed", "/do/0/slow", "I2")]
    assert fired.facts[1].data["outcome"] == "timed_out"
    assert fired.facts[1].data["error"] == {
        "type": STANDARD + "timeout",
        "title": "The task did not finish within 5000 ms",
    }
    cancelled = [o for o in outputs_of(fired, CancelCall) if isinstance(o, CancelCall)]
    assert [c.kind for c in cancelled] == ["deadline"]
    ending = settled(fired)
    assert ending is not None and ending.rejection == {
        "reason": "unavailable",
        "detail": "The task did not finish within 5000 ms (at /do/0/slow)",
    }
    late = run.answer(calls(first)[0].key, T0 + 6_000, output={})
    assert late.stale and late.facts == ()


def test_cancel_moves_no_steps_and_cancels_the_callee(engine: SandboxEngine) -> None:
    run = Run(engine, TIMEOUT)
    run.start({})
    cancelled = run.cancel(T0 + 100, reason="No longer needed")
    applied = cancelled.facts[0]
    assert (applied.causation_id, applied.data["step_count"], len(cancelled.facts)) == ("cancel-record", 0, 1)
    assert applied.data["input"] == {
        "kind": "cancel_requested",
        "key": run.state.run_id,
        "cancel": {"by": "caller-1", "kind": "requested"},
    }
    assert [c.kind for c in outputs_of(cancelled, CancelCall) if isinstance(c, CancelCall)] == ["parent_ended"]
    assert settled(cancelled) == Settle(
        "rejected", rejection={"reason": "cancelled", "detail": "No longer needed", "kind": "requested"}
    )
    assert run.cancel(T0 + 200).stale
