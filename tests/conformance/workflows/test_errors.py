"""Spec workflow-format.md 6.1 (a callee that does not succeed), 6 (depth), 7 (errors, try/catch, retry,
timeouts) and 8 (how a run ends), through HTTP."""

from __future__ import annotations

import itertools
from typing import Any

import httpx
import pytest

from tests.conformance.helpers import ADD_PROGRAM, RAISING_PROGRAM, create_computation, new_playbook
from tests.conformance.workflows.flows import (
    PROBLEMS,
    STANDARD,
    finished,
    history,
    inputs_of,
    output_of,
    rejection_of,
    run_to_end,
    saved,
    steps_of,
    workflow,
)

RETRY = """
do:
  - guard:
      try:
        - attempt:
            set: '${{ input }}'
            export:
              as: >-
                ${{ context | {{"starts": context.get("starts", []) + [task["startedAt"]["epoch"]["milliseconds"]]}} }}
        - fail: {{ raise: {{ error: {{ type: https://example.com/errors/flaky, status: 503, title: Flaky }} }} }}
      catch:
        errors: {{ with: {{ status: 503 }} }}
        retry: {{ delay: PT0.05S, backoff: {backoff}, limit: {{ attempt: {{ count: 3 }} }} }}
        do:
          - report: {{ set: '${{ {{"starts": context["starts"], "error": error}} }}' }}
"""

CATCH_MATCHING = workflow("""
do:
  - guard:
      try:
        - fail: { raise: { error: '${ data }' } }
      catch:
        errors: { with: { type: communication, status: 503 } }
        when: 'caught.get("title") != "not this one"'
        exceptWhen: 'caught.get("detail") == "nor this"'
        as: caught
        do:
          - report: { set: '${ {"caught": caught, "input": input} }' }
""")

CATCH_WITHOUT_DO = workflow("""
do:
  - guard:
      try:
        - fail: { raise: { error: { type: https://example.com/errors/any, status: 500 } } }
        - never: { set: { never: true } }
      catch: {}
""")

ATTEMPT_DURATION = workflow("""
do:
  - guard:
      try:
        - slow: { wait: PT20S }
      catch:
        errors: { with: { type: timeout } }
        retry: { limit: { attempt: { duration: PT0.1S, count: 1 } } }
        do:
          - report: { set: '${ error }' }
""")

TASK_TIMEOUT = workflow("""
do:
  - slow:
      timeout: { after: PT0.1S }
      do:
        - pause: { wait: PT20S }
""")

CAUGHT_TIMEOUT = workflow("""
use:
  timeouts:
    short: { after: PT0.1S }
do:
  - guard:
      try:
        - slow: { timeout: short, wait: PT20S }
      catch:
        errors: { with: { type: timeout, status: 408 } }
        do:
          - report: { set: '${ {"timed_out": error} }' }
""")

WAITS_FOREVER = workflow("""
do:
  - hold: { listen: { to: { one: { with: { type: com.example.never } } } } }
""")

CALL_TIMEOUT = workflow("""
do:
  - slow:
      timeout: { after: PT0.2S }
      call: run_definition
      with: { type: workflow, name: waits-forever, input: {} }
""")

DOCUMENT_TIMEOUT = workflow("""
timeout: { after: PT0.1S }
do:
  - pause: { wait: PT20S }
""")

RAISES_ITS_INPUT = workflow("""
do:
  - stop: { raise: { error: '${ data }' } }
""")

CALLS_BY_NAME = workflow("""
do:
  - guard:
      try:
        - callee:
            call: run_definition
            with: { type: computation, name: '${ data["name"] }', input: '${ data["input"] }' }
      catch:
        as: failure
        do:
          - show: { set: '${ failure }' }
""")

CALLS_ADD = workflow("""
do:
  - add:
      call: run_definition
      with: { type: computation, name: add, input: '${ data }' }
""")

DEEP = workflow("""
do:
  - down:
      try:
        - again:
            call: run_definition
            with: { type: workflow, name: deep-flow, input: '${ {"n": data["n"] + 1} }' }
      catch:
        as: failure
        do:
          - report: { set: '${ {"refused_below": input["n"], "error": failure} }' }
""")


@pytest.fixture(scope="module")
def playbook(client: httpx.Client) -> str:
    playbook_url = new_playbook(client)
    create_computation(client, playbook_url, "add", ADD_PROGRAM)
    create_computation(client, playbook_url, "boom", RAISING_PROGRAM)
    for backoff in ("constant", "linear", "exponential"):
        saved(client, playbook_url, f"retry-{backoff}", workflow(RETRY.format(backoff=backoff)))
    for name, source in (
        ("catch-matching", CATCH_MATCHING),
        ("catch-without-do", CATCH_WITHOUT_DO),
        ("task-timeout", TASK_TIMEOUT),
        ("attempt-duration", ATTEMPT_DURATION),
        ("caught-timeout", CAUGHT_TIMEOUT),
        ("document-timeout", DOCUMENT_TIMEOUT),
        ("waits-forever", WAITS_FOREVER),
        ("call-timeout", CALL_TIMEOUT),
        ("raises-its-input", RAISES_ITS_INPUT),
        ("calls-by-name", CALLS_BY_NAME),
        ("calls-add", CALLS_ADD),
        ("deep-flow", DEEP),
    ):
        saved(client, playbook_url, name, source)
    return playbook_url


# try / catch / retry


@pytest.mark.parametrize(
    ("backoff", "delays"), [("constant", [50, 50, 50]), ("linear", [50, 100, 150]), ("exponential", [50, 100, 200])]
)
def test_retries_wait_their_delays_then_catch_do_runs(
    client: httpx.Client, playbook: str, backoff: str, delays: list[int]
) -> None:
    """`count: 3`: four attempts, the whole try list again each time, then `catch.do` with the error bound.

    Each attempt starts in the input of the timer its delay armed, whose time is never before the timer's
    due time (spec 11): so attempt i+1 starts at least the computed delay after attempt i, which failed at
    once, in the input that started it."""
    run = run_to_end(client, playbook, f"retry-{backoff}", {"x": 1})
    assert run["status"] == "succeeded", run
    output = run["output"]
    assert output["error"] == {
        "type": "https://example.com/errors/flaky",
        "status": 503,
        "title": "Flaky",
        "instance": "/do/0/guard/try/1/fail",
    }
    starts = output["starts"]
    assert len(starts) == 4
    gaps = [later - earlier for earlier, later in itertools.pairwise(starts)]
    assert all(gap >= delay for gap, delay in zip(gaps, delays, strict=True)), (gaps, delays)
    events = history(client, playbook, run["run_id"])
    inputs = inputs_of(events)
    assert [event["data"]["input"]["kind"] for event in inputs] == ["started"] + ["timer_fired"] * 3
    for earlier, later in itertools.pairwise(inputs):
        assert later["metadata"]["causation_id"] == earlier["id"]
    steps = steps_of(events)
    assert [step[2] for step in steps if step[1] == "/do/0/guard/try/0/attempt"] == [1, 2, 3, 4]
    assert steps[-1] == ("step_finished", "/do/0/guard", 1, "")
    # A try task records nothing for a retry delay: it started in the first input and finished in the last.
    assert [step for step in steps if step[1] == "/do/0/guard"] == [
        ("step_started", "/do/0/guard", 1, ""),
        ("step_finished", "/do/0/guard", 1, ""),
    ]


@pytest.mark.parametrize(
    ("error", "caught"),
    [
        ({"type": STANDARD + "communication", "status": 503}, True),
        ({"type": STANDARD + "communication", "status": 503, "title": "not this one"}, False),
        ({"type": STANDARD + "communication", "status": 503, "detail": "nor this"}, False),
        ({"type": STANDARD + "communication", "status": 502}, False),
        ({"type": PROBLEMS + "tools_unfinished", "status": 503}, False),
    ],
)
def test_catch_matches_errors_with_when_and_except_when(
    client: httpx.Client, playbook: str, error: dict[str, Any], caught: bool
) -> None:
    """Spec 7.3: `errors.with` by plain equality, a short type matching its URI (`communication` never
    `tools_unfinished`), then `when` holds and `exceptWhen` does not."""
    run = run_to_end(client, playbook, "catch-matching", error)
    if caught:
        assert run["status"] == "succeeded", run
        assert run["output"] == {"caught": error | {"instance": "/do/0/guard/try/0/fail"}, "input": error}
    else:
        assert run["status"] == "rejected", run
        assert run["rejection"]["reason"] == "unavailable"
        assert run["rejection"]["detail"].endswith(" (at /do/0/guard/try/0/fail)")


def test_a_catch_without_do_outputs_the_try_input(client: httpx.Client, playbook: str) -> None:
    """No `errors.with` catches every error but `effect_unknown`; without `catch.do` the try outputs its input."""
    assert output_of(client, playbook, "catch-without-do", {"kept": True}) == {"kept": True}


def test_an_attempt_past_its_duration_fails_with_timeout_at_the_try_task(client: httpx.Client, playbook: str) -> None:
    """Spec 7.4 `limit.attempt.duration`: the attempt's tasks are cancelled and it fails with `timeout` 408,
    instance the try task, matched like any error: one retry, then `catch.do`."""
    run = run_to_end(client, playbook, "attempt-duration", {})
    assert run["output"] == {
        "type": STANDARD + "timeout",
        "status": 408,
        "instance": "/do/0/guard",
        "title": "The task did not finish within 100 ms",
    }
    steps = steps_of(history(client, playbook, run["run_id"]))
    assert [step for step in steps if step[1] == "/do/0/guard/try/0/slow"] == [
        ("step_waiting", "/do/0/guard/try/0/slow", 1, ""),
        ("step_failed", "/do/0/guard/try/0/slow", 1, "cancelled"),
        ("step_waiting", "/do/0/guard/try/0/slow", 2, ""),
        ("step_failed", "/do/0/guard/try/0/slow", 2, "cancelled"),
    ]


# timeouts


def test_a_task_timeout_cancels_its_work_and_raises_timeout(client: httpx.Client, playbook: str) -> None:
    run = run_to_end(client, playbook, "task-timeout", {})
    assert run["rejection"] == {
        "reason": "unavailable",
        "detail": "The task did not finish within 100 ms (at /do/0/slow)",
    }
    events = history(client, playbook, run["run_id"])
    failed = [event for event in events if event["type"] == "step_failed"]
    assert [(event["data"]["reference"], event["data"]["outcome"]) for event in failed] == [
        ("/do/0/slow/do/0/pause", "cancelled"),
        ("/do/0/slow", "timed_out"),
    ]
    assert "error" not in failed[0]["data"]
    assert failed[1]["data"]["error"] == {
        "type": STANDARD + "timeout",
        "title": "The task did not finish within 100 ms",
    }


def test_a_named_timeout_is_caught_by_its_short_type(client: httpx.Client, playbook: str) -> None:
    assert output_of(client, playbook, "caught-timeout", {}) == {
        "timed_out": {
            "type": STANDARD + "timeout",
            "status": 408,
            "instance": "/do/0/guard/try/0/slow",
            "title": "The task did not finish within 100 ms",
        }
    }


def test_a_timeout_cancels_the_callee_it_waits_for_with_deadline(client: httpx.Client, playbook: str) -> None:
    run = run_to_end(client, playbook, "call-timeout", {})
    words = "The task did not finish within 200 ms (at /do/0/slow)"
    assert run["rejection"] == {"reason": "unavailable", "detail": words}
    waiting = next(e for e in history(client, playbook, run["run_id"]) if e["type"] == "step_waiting")
    callee = finished(client, playbook, waiting["data"]["run_id"])
    assert (callee["rejection"]["reason"], callee["rejection"]["kind"]) == ("cancelled", "deadline")


def test_the_document_timeout_ends_the_run_at_the_root(client: httpx.Client, playbook: str) -> None:
    run = run_to_end(client, playbook, "document-timeout", {})
    assert run["rejection"] == {"reason": "unavailable", "detail": "The task did not finish within 100 ms (at /)"}
    steps = steps_of(history(client, playbook, run["run_id"]))
    assert steps[-1] == ("step_failed", "/do/0/pause", 1, "cancelled")


# How a run ends (spec 8): uncaught errors


@pytest.mark.parametrize(
    ("error", "rejection"),
    [
        (
            {"type": PROBLEMS + "tools_called", "status": 409, "title": "Tools called", "because": "only_read"},
            {"reason": "conflict", "kind": "tools_called", "because": "only_read"},
        ),
        (
            {"type": PROBLEMS + "effect_unknown", "status": 409, "kind": "effect_unknown", "because": "timed_out"},
            {"reason": "conflict", "kind": "effect_unknown", "because": "timed_out"},
        ),
        ({"type": PROBLEMS + "tools_unfinished", "status": 503}, {"reason": "unavailable", "kind": "tools_unfinished"}),
        ({"type": PROBLEMS + "rebuilding", "status": 503}, {"reason": "unavailable", "kind": "rebuilding"}),
        (
            {"type": PROBLEMS + "unanswered", "status": 410, "kind": "expired"},
            {"reason": "unanswered", "kind": "expired"},
        ),
        ({"type": PROBLEMS + "cancelled", "status": 409, "kind": "deadline"}, {"reason": "invalid_input"}),
        ({"type": "https://example.com/errors/gone", "status": 404, "kind": "hidden"}, {"reason": "invalid_input"}),
        ({"type": "https://example.com/errors/slow", "status": 408}, {"reason": "unavailable"}),
        ({"type": "https://example.com/errors/busy", "status": 429}, {"reason": "unavailable"}),
        ({"type": "https://example.com/errors/down", "status": 502}, {"reason": "unavailable"}),
        ({"type": "https://example.com/errors/odd", "status": 302}, {"reason": "unavailable"}),
    ],
)
def test_an_uncaught_error_ends_the_run_by_its_type_and_status(
    client: httpx.Client, playbook: str, error: dict[str, Any], rejection: dict[str, Any]
) -> None:
    """`kind`/`because` appear only for the four problem types; the detail is `<title, else type> (at …)`."""
    shown = rejection_of(client, playbook, "raises-its-input", error)
    words = error.get("title", error["type"])
    assert shown == rejection | {"detail": f"{words} (at /do/0/stop)"}


# A callee that does not succeed (spec 6.1)


def test_a_callee_rejected_with_invalid_input_raises_validation_400(client: httpx.Client, playbook: str) -> None:
    output = output_of(client, playbook, "calls-by-name", {"name": "add", "input": {"a": 1}})
    assert output == {
        "type": STANDARD + "validation",
        "status": 400,
        "instance": "/do/0/guard/try/0/callee",
        "title": "The computation function add rejected the run with invalid_input",
        "detail": "The input: expected the field b.",
        "errors": [{"detail": "The input: expected the field b.", "pointer": "/input"}],
    }


def test_a_missing_definition_raises_configuration_404(client: httpx.Client, playbook: str) -> None:
    output = output_of(client, playbook, "calls-by-name", {"name": "nowhere", "input": {}})
    assert output["type"] == STANDARD + "configuration"
    assert output["status"] == 404
    assert output["instance"] == "/do/0/guard/try/0/callee"
    assert output["title"] == "The computation function nowhere rejected the run with not_found"
    assert "nowhere" in output["detail"]


def test_a_callee_rejected_with_conflict_raises_runtime_409_with_its_kind(client: httpx.Client, playbook: str) -> None:
    output = output_of(client, playbook, "calls-by-name", {"name": "boom", "input": {}})
    assert output == {
        "type": STANDARD + "runtime",
        "status": 409,
        "instance": "/do/0/guard/try/0/callee",
        "title": "The computation function boom rejected the run with conflict",
        "detail": "Line 5 of the program raised ValueError: no invoices",
        "kind": "unworkable",
    }


def test_an_uncaught_callee_invalid_input_rejects_the_workflow_with_its_issues(
    client: httpx.Client, playbook: str
) -> None:
    """Inside a workflow invalid_input is a 400 (never 422); uncaught it ends the run invalid_input, issues kept."""
    rejection = rejection_of(client, playbook, "calls-add", {"a": 1})
    assert rejection["reason"] == "invalid_input"
    assert rejection["detail"] == (
        "The computation function add rejected the run with invalid_input: The input: expected the field b. "
        "(at /do/0/add)"
    )
    assert rejection.get("errors", [{"detail": "The input: expected the field b.", "pointer": "/input"}]) == [
        {"detail": "The input: expected the field b.", "pointer": "/input"}
    ]


# Depth (spec 6)


def test_a_call_at_depth_nine_is_refused_as_conflict(client: httpx.Client, playbook: str) -> None:
    """A workflow calling itself: the runs at call depths 1 to 8 start, the start at depth 9 is refused and the
    run at depth 8 catches `runtime` 409 `… with conflict`; each level hands the report up."""
    run = run_to_end(client, playbook, "deep-flow", {"n": 0})
    assert run["status"] == "succeeded", run
    output = run["output"]
    assert output["refused_below"] == 8
    error = output["error"]
    assert (error["type"], error["status"], error["instance"], error["title"]) == (
        STANDARD + "runtime",
        409,
        "/do/0/down/try/0/again",
        "The workflow deep-flow rejected the run with conflict",
    )
    callee_id = run["run_id"]
    depths = []
    for _ in range(8):
        waiting = next(e for e in history(client, playbook, callee_id) if e["type"] == "step_waiting")
        callee_id = waiting["data"]["run_id"]
        started = history(client, playbook, callee_id)[0]
        depths.append(started["metadata"]["call_depth"])
        assert started["metadata"]["correlation_id"] == run["run_id"]
    assert depths == [1, 2, 3, 4, 5, 6, 7, 8]
