"""Spec workflow-format.md 3 (every task kind, the fields every task accepts, flow) and 4.4 (variables),
through HTTP: each document is saved as a workflow, run under a fresh id and read with `get_run`."""

from __future__ import annotations

import itertools
import uuid

import httpx
import pytest

from tests.conformance.helpers import ADD_PROGRAM, ECHO_PROGRAM, RAISING_PROGRAM, create_computation, new_playbook
from tests.conformance.workflows.flows import (
    finished,
    history,
    inputs_of,
    new_run_id,
    output_of,
    rejection_of,
    run_to_end,
    saved,
    start,
    steps_of,
    workflow,
)

SET = workflow("""
do:
  - first: { set: { a: 1, keep: '${ data["x"] }' } }
  - second: { set: '${ {"sum": data["a"] + data["keep"]} }' }
""")

NESTED_DO = workflow("""
do:
  - outer:
      do:
        - inner: { set: '${ data | {"inner": True} }' }
  - after: { set: '${ data | {"after": True} }' }
""")

SWITCH = workflow("""
do:
  - route:
      switch:
        - fallback: { then: other }
        - big: { when: 'data["n"] > 10', then: large }
        - never: { when: 'False', then: large }
  - other: { set: { size: other }, then: end }
  - large: { set: { size: large } }
""")

SWITCH_NONE = workflow("""
do:
  - route:
      switch:
        - big: { when: 'data["n"] > 10', then: large }
      then: small
  - large: { set: { size: large }, then: end }
  - small: { set: { size: small } }
""")

FOR = workflow("""
do:
  - loop:
      for: { in: '${ data["items"] }', each: word, at: i }
      while: 'i < 3'
      do:
        - add: { set: '${ {"items": input["items"], "seen": input.get("seen", []) + [str(i) + word]} }' }
""")

FOR_DEFAULT_NAMES = workflow("""
do:
  - loop:
      for: { in: '${ data }' }
      do:
        - add: { set: '${ {"last": item, "at": index} }' }
""")

FOR_NOT_ARRAY = workflow("""
do:
  - loop:
      for: { in: '${ data }' }
      do:
        - add: { set: { never: true } }
""")

FORK = workflow("""
do:
  - both:
      fork:
        branches:
          - slow: { wait: PT0.1S }
          - quick: { set: { q: 1 } }
""")

COMPETE = workflow("""
do:
  - race:
      fork:
        compete: true
        branches:
          - slow:
              do:
                - pause: { wait: PT20S }
                - late: { set: { winner: slow } }
          - failing:
              raise: { error: { type: https://example.com/errors/lost, status: 500 } }
          - quick:
              do:
                - pause: { wait: PT0.1S }
                - done: { set: { winner: quick } }
""")

FORK_FAIL = workflow("""
do:
  - both:
      fork:
        branches:
          - slow:
              do:
                - pause: { wait: PT20S }
          - calling:
              do:
                - first: { set: { step: 1 } }
                - ask: { call: run_definition, with: { type: computation, name: echo, input: { x: 1 } } }
          - failing:
              raise: { error: { type: https://example.com/errors/lost, status: 503, title: Lost } }
""")

COMPETE_TIE = workflow("""
do:
  - race:
      fork:
        compete: true
        branches:
          - longer:
              do:
                - one: { set: { step: 1 } }
                - two: { set: { winner: longer } }
          - shorter: { set: { winner: shorter } }
""")

COMPETE_ALL_FAIL = workflow("""
do:
  - race:
      fork:
        compete: true
        branches:
          - later:
              do:
                - pause: { wait: PT0.1S }
                - fail: { raise: { error: { type: https://example.com/errors/second, status: 503 } } }
          - first:
              raise: { error: { type: https://example.com/errors/first, status: 409, title: First } }
""")

IF_AND_THEN = workflow("""
do:
  - count: { set: '${ {"n": data["n"] + 1} }' }
  - again:
      switch:
        - more: { when: 'data["n"] < 3', then: count }
        - done: { then: finish }
  - never: { set: { never: true } }
  - finish:
      do:
        - leave: { set: '${ data | {"left": True} }', then: exit }
        - jumped: { set: { wrong: true } }
  - skipped:
      if: 'data["n"] > 100'
      set: { wrong: true }
      then: end
  - last: { set: '${ data | {"last": True} }', then: end }
  - unreachable: { set: { wrong: true } }
output: { as: '${ data | {"shaped": True} }' }
""")

EXIT_TOP = workflow("""
do:
  - first: { set: { first: true }, then: exit }
  - second: { set: { second: true } }
""")

SHAPING = workflow("""
input: { from: '${ {"v": data["value"] * 2} }' }
do:
  - shape:
      input: { from: '${ {"w": data["v"] + 1} }' }
      set: '${ {"got": input["w"], "raw": task["input"]["v"], "name": task["name"]} }'
      output: { as: '${ data | {"body": task["output"]["got"]} }' }
      export: { as: '${ {"exported": output["got"], "ref": task["reference"]} }' }
  - read:
      set: >-
        ${ data | {"context": context, "run": workflow["id"], "given": workflow["input"],
        "runtime": runtime["name"], "kind": runtime["metadata"]["type"]} }
output: { as: '${ {"final": data, "context": context} }' }
""")

RAISE = workflow("""
do:
  - stop:
      raise:
        error:
          { type: https://example.com/errors/bad-input, status: 400, title: Bad input, detail: 'Missing: audience' }
""")

RAISE_NAMED = workflow("""
use:
  errors:
    busy: { type: https://example.com/errors/busy, status: 503, title: Busy }
do:
  - stop: { raise: { error: busy } }
""")

RAISE_WITHOUT_STATUS = workflow("""
do:
  - stop: { raise: { error: '${ {"type": "https://example.com/errors/x"} }' } }
""")

WAIT = workflow("""
do:
  - pause: { wait: PT0.1S }
  - after: { set: '${ data | {"waited": True} }' }
""")

WAIT_COMPUTED = workflow("""
do:
  - pause: { wait: '${ data["how_long"] }' }
""")

EXPRESSION_RAISES = workflow("""
do:
  - pick: { set: '${ data["missing"] }' }
""")

NOT_JSON_SOURCE = '{"top": {1, 2}, "inside": {"a": [1, float("inf")]}, "deep": [[data.get("deep")]]}[data["what"]]'
EXPRESSION_NOT_JSON = workflow(f"""
do:
  - pick: {{ set: '${{ {NOT_JSON_SOURCE} }}' }}
""")

CALLS = workflow("""
do:
  - add:
      call: run_definition
      with: { type: computation, name: add, input: '${ {"a": data["a"], "b": 2} }' }
  - echo:
      call: run_definition
      with: { type: computation, name: echo, input: { sum: '${ data["sum"] }', literal: yes } }
""")

CALLEE = workflow("""
do:
  - double: { set: '${ {"doubled": data["n"] * 2, "depth_input": data} }' }
""")

CALLER = workflow("""
do:
  - inner:
      call: run_definition
      with: { type: workflow, name: callee-flow, input: '${ {"n": data["n"]} }' }
      output: { as: '${ data["doubled"] }' }
""")

NESTED_RAISE = workflow("""
do:
  - outer:
      do:
        - inner:
            try:
              - deep: { raise: { error: { type: https://example.com/errors/x, status: 400, title: X } } }
            catch:
              errors: { with: { status: 500 } }
""")

FORK_END = workflow("""
do:
  - both:
      fork:
        branches:
          - stop: { set: { stopped: true }, then: end }
          - slow: { wait: PT0.1S }
  - after: { set: { wrong: true } }
""")

INPUT_FROM_RAISES = workflow("""
input: { from: '${ data["nope"] }' }
do:
  - never: { set: { x: 1 } }
""")

EMIT_RESERVED = workflow("""
do:
  - tell: { emit: { event: { with: { type: '${ "run_started" }', source: https://example.com/x } } } }
""")

RETRIED_CALL = workflow("""
do:
  - guard:
      try:
        - call-boom: { call: run_definition, with: { type: computation, name: boom } }
      catch:
        retry: { limit: { attempt: { count: 1 } } }
""")

LONG_LOOP = workflow("""
do:
  - loop:
      for: { in: '${ list(range(data["n"])) }' }
      do:
        - step: { set: '${ {"sum": input.get("sum", 0) + item} }' }
""")


@pytest.fixture(scope="module")
def playbook(client: httpx.Client) -> str:
    playbook_url = new_playbook(client)
    create_computation(client, playbook_url, "add", ADD_PROGRAM)
    create_computation(client, playbook_url, "echo", ECHO_PROGRAM)
    create_computation(client, playbook_url, "boom", RAISING_PROGRAM)
    for name, source in (
        ("set-flow", SET),
        ("nested-do", NESTED_DO),
        ("switch-flow", SWITCH),
        ("switch-none", SWITCH_NONE),
        ("for-flow", FOR),
        ("for-default", FOR_DEFAULT_NAMES),
        ("for-not-array", FOR_NOT_ARRAY),
        ("fork-flow", FORK),
        ("fork-fail", FORK_FAIL),
        ("compete-flow", COMPETE),
        ("compete-fail", COMPETE_ALL_FAIL),
        ("compete-tie", COMPETE_TIE),
        ("if-then", IF_AND_THEN),
        ("exit-top", EXIT_TOP),
        ("shaping", SHAPING),
        ("raise-flow", RAISE),
        ("raise-named", RAISE_NAMED),
        ("raise-nothing", RAISE_WITHOUT_STATUS),
        ("wait-flow", WAIT),
        ("wait-computed", WAIT_COMPUTED),
        ("expression-raises", EXPRESSION_RAISES),
        ("expression-not-json", EXPRESSION_NOT_JSON),
        ("calls", CALLS),
        ("callee-flow", CALLEE),
        ("caller-flow", CALLER),
        ("nested-raise", NESTED_RAISE),
        ("fork-end", FORK_END),
        ("input-from-raises", INPUT_FROM_RAISES),
        ("emit-reserved", EMIT_RESERVED),
        ("retried-call", RETRIED_CALL),
        ("long-loop", LONG_LOOP),
    ):
        saved(client, playbook_url, name, source)
    return playbook_url


# set, do


def test_set_replaces_the_data(client: httpx.Client, playbook: str) -> None:
    """`set` gives its value, which replaces the data, never merges; a one-expression `set` too."""
    assert output_of(client, playbook, "set-flow", {"x": 2, "drop": True}) == {"sum": 3}


def test_do_outputs_its_list(client: httpx.Client, playbook: str) -> None:
    assert output_of(client, playbook, "nested-do", {"x": 1}) == {"after": True, "inner": True, "x": 1}


# switch


@pytest.mark.parametrize(("n", "size"), [(20, "large"), (1, "other")])
def test_switch_takes_the_first_case_that_holds_else_the_first_without_when(
    client: httpx.Client, playbook: str, n: int, size: str
) -> None:
    """The first case whose `when` holds; if none, the first case without `when`, wherever it stands."""
    assert output_of(client, playbook, "switch-flow", {"n": n}) == {"size": size}


def test_switch_without_a_taken_case_applies_its_own_then(client: httpx.Client, playbook: str) -> None:
    assert output_of(client, playbook, "switch-none", {"n": 1}) == {"size": "small"}
    assert output_of(client, playbook, "switch-none", {"n": 11}) == {"size": "large"}


# for


def test_for_binds_its_names_and_stops_when_while_fails(client: httpx.Client, playbook: str) -> None:
    """Each iteration's data is the previous one's output; `while` is tested before each iteration."""
    items = ["a", "b", "c", "d"]
    assert output_of(client, playbook, "for-flow", {"items": items}) == {"items": items, "seen": ["0a", "1b", "2c"]}


def test_for_defaults_to_item_and_index_and_outputs_its_input_when_nothing_ran(
    client: httpx.Client, playbook: str
) -> None:
    assert output_of(client, playbook, "for-default", ["x", "y"]) == {"at": 1, "last": "y"}
    assert output_of(client, playbook, "for-default", []) == []


def test_for_in_that_is_not_an_array_raises_validation(client: httpx.Client, playbook: str) -> None:
    """`validation` 400 `for.in must give an array to iterate over`: uncaught, the run ends invalid_input."""
    rejection = rejection_of(client, playbook, "for-not-array", {"not": "a list"})
    assert rejection["reason"] == "invalid_input"
    assert rejection["detail"] == "for.in must give an array to iterate over (at /do/0/loop)"


# fork


def test_a_plain_fork_outputs_every_branch_in_branch_order(client: httpx.Client, playbook: str) -> None:
    assert output_of(client, playbook, "fork-flow", {"x": 1}) == [{"x": 1}, {"q": 1}]


def test_a_failing_plain_branch_cancels_the_first_steps_its_earlier_branches_recorded(
    client: httpx.Client, playbook: str
) -> None:
    """README settled point 18: a plain fork's branches start in branch order and each runs until it waits or
    ends before the next starts, so when the last branch fails in the same input the earlier branches' first
    steps are in the history, cancelled (inner first), not dropped unstarted."""
    run = run_to_end(client, playbook, "fork-fail", {})
    assert run["status"] == "rejected", run
    assert run["rejection"]["reason"] == "unavailable", run
    assert run["rejection"]["detail"] == "Lost (at /do/0/both/fork/branches/2/failing)"
    steps = steps_of(history(client, playbook, run["run_id"]))
    fork = "/do/0/both/fork/branches"
    assert steps == [
        ("step_failed", "/do/0/both", 1, "raised"),
        ("step_failed", f"{fork}/0/slow", 1, "cancelled"),
        ("step_failed", f"{fork}/0/slow/do/0/pause", 1, "cancelled"),
        ("step_failed", f"{fork}/1/calling", 1, "cancelled"),
        ("step_finished", f"{fork}/1/calling/do/0/first", 1, ""),
        ("step_failed", f"{fork}/1/calling/do/1/ask", 1, "cancelled"),
        ("step_failed", f"{fork}/2/failing", 1, "raised"),
    ]


def test_a_competing_fork_takes_the_first_to_complete_and_cancels_the_others(
    client: httpx.Client, playbook: str
) -> None:
    """A failing branch is ignored while another may win; the loser's wait is cancelled, inner first."""
    run = run_to_end(client, playbook, "compete-flow", {})
    assert run["status"] == "succeeded", run
    assert run["output"] == {"winner": "quick"}
    steps = steps_of(history(client, playbook, run["run_id"]))
    assert ("step_failed", "/do/0/race/fork/branches/1/failing", 1, "raised") in steps
    cancelled = [step[1] for step in steps if step[3] == "cancelled"]
    assert cancelled == ["/do/0/race/fork/branches/0/slow/do/0/pause", "/do/0/race/fork/branches/0/slow"]
    assert steps[-1] == ("step_finished", "/do/0/race", 1, "")


def test_of_branches_completing_in_the_same_input_the_lowest_index_wins(client: httpx.Client, playbook: str) -> None:
    """Spec 3.2 "(same input → lowest index)": a branch of two tasks before a branch of one."""
    run = run_to_end(client, playbook, "compete-tie", {})
    assert run["output"] == {"winner": "longer"}
    references = [step[1] for step in steps_of(history(client, playbook, run["run_id"]))]
    assert "/do/0/race/fork/branches/1/shorter" not in references


def test_a_competing_fork_whose_branches_all_fail_raises_the_earliest_failure(
    client: httpx.Client, playbook: str
) -> None:
    """Failures are ignored until every branch failed; then the earliest (time order) is raised."""
    rejection = rejection_of(client, playbook, "compete-fail", {})
    assert rejection["reason"] == "invalid_input", rejection
    assert rejection["detail"] == "First (at /do/0/race/fork/branches/1/first)"


# if, then


def test_if_skips_and_then_continues_jumps_exits_and_ends(client: httpx.Client, playbook: str) -> None:
    """A skipped task outputs its input and its `then` is ignored; a jumped-over task records nothing;
    `exit` leaves the list, `end` ends the run and the document's `output.as` still applies."""
    run = run_to_end(client, playbook, "if-then", {"n": 0})
    assert run["status"] == "succeeded", run
    assert run["output"] == {"last": True, "left": True, "n": 3, "shaped": True}
    events = history(client, playbook, run["run_id"])
    (applied,) = inputs_of(events)
    assert applied["data"]["step_count"] == 10
    assert applied["data"]["steps"] == [
        {"task": "/do/0/count", "run": 1, "outcome": "completed"},
        {"task": "/do/1/again", "run": 1, "outcome": "completed"},
        {"task": "/do/0/count", "run": 2, "outcome": "completed"},
        {"task": "/do/1/again", "run": 2, "outcome": "completed"},
        {"task": "/do/0/count", "run": 3, "outcome": "completed"},
    ]
    steps = steps_of(events)
    references = [step[1] for step in steps]
    assert not any(name in reference for reference in references for name in ("never", "jumped", "unreachable"))
    assert ("step_skipped", "/do/4/skipped", 1, "") in steps
    assert [step[2] for step in steps if step[1] == "/do/0/count"] == [1, 2, 3]


def test_exit_from_the_top_list_completes_the_run(client: httpx.Client, playbook: str) -> None:
    assert output_of(client, playbook, "exit-top", {}) == {"first": True}


# input.from, output.as, export.as and the variables


def test_input_from_output_as_and_export_as(client: httpx.Client, playbook: str) -> None:
    run_id = new_run_id()
    start(client, playbook, "shaping", {"value": 5}, run_id)
    run = finished(client, playbook, run_id)
    assert run["status"] == "succeeded", run
    assert run["output"] == {
        "context": {"exported": 11, "ref": "/do/0/shape"},
        "final": {
            "body": 11,
            "context": {"exported": 11, "ref": "/do/0/shape"},
            "given": {"value": 5},
            "got": 11,
            "kind": "workflow",
            "name": "shape",
            "raw": 10,
            "run": run_id,
            "runtime": "auto-runtime",
        },
    }


# raise


def test_an_uncaught_raise_ends_the_run_with_its_words(client: httpx.Client, playbook: str) -> None:
    """Spec 8's example: `Bad input: Missing: audience (at /do/0/stop)`, status 400 → invalid_input."""
    rejection = rejection_of(client, playbook, "raise-flow", {})
    assert rejection["reason"] == "invalid_input"
    assert rejection["detail"] == "Bad input: Missing: audience (at /do/0/stop)"


def test_raise_of_a_named_error(client: httpx.Client, playbook: str) -> None:
    rejection = rejection_of(client, playbook, "raise-named", {})
    assert rejection == {"reason": "unavailable", "detail": "Busy (at /do/0/stop)"}


def test_raise_without_a_status_raises_configuration(client: httpx.Client, playbook: str) -> None:
    rejection = rejection_of(client, playbook, "raise-nothing", {})
    assert rejection["reason"] == "invalid_input"
    assert rejection["detail"] == "raise names no error with a type and a status (at /do/0/stop)"


# wait


def test_wait_outputs_its_input_after_a_timer(client: httpx.Client, playbook: str) -> None:
    run = run_to_end(client, playbook, "wait-flow", {"x": 1})
    assert run["output"] == {"waited": True, "x": 1}
    events = history(client, playbook, run["run_id"])
    waiting = next(event for event in events if event["type"] == "step_waiting")
    assert waiting["data"] == {"name": "pause", "reference": "/do/0/pause", "run": 1, "times": 1, "waits_for": "timer"}
    fired = [event for event in events if event["type"] == "workflow_input_applied"][1]
    assert fired["data"]["input"]["kind"] == "timer_fired"
    assert fired["metadata"]["causation_id"] == waiting["id"].rsplit("_", 1)[0]


def test_a_computed_duration_that_is_not_valid_raises_configuration(client: httpx.Client, playbook: str) -> None:
    rejection = rejection_of(client, playbook, "wait-computed", {"how_long": "P1M"})
    assert rejection["reason"] == "invalid_input"
    assert rejection["detail"].startswith("A duration of the task is not valid: "), rejection
    assert rejection["detail"].endswith(" (at /do/0/pause)"), rejection


def test_a_computed_duration_longer_than_the_longest_run_raises_configuration(
    client: httpx.Client, playbook: str
) -> None:
    rejection = rejection_of(client, playbook, "wait-computed", {"how_long": {"days": 400}})
    assert rejection["reason"] == "invalid_input"
    assert rejection["detail"].startswith("A duration of the task is not valid: "), rejection


def test_a_computed_duration_waits(client: httpx.Client, playbook: str) -> None:
    assert output_of(client, playbook, "wait-computed", {"how_long": {"milliseconds": 50}}) == {
        "how_long": {"milliseconds": 50}
    }


def test_an_expression_that_raises_raises_expression(client: httpx.Client, playbook: str) -> None:
    """`expression` 400, title `An expression failed`, detail `<source>: <T>: <M>` (spec 4.6)."""
    rejection = rejection_of(client, playbook, "expression-raises", {})
    assert rejection["reason"] == "invalid_input"
    assert rejection["detail"] == 'An expression failed: data["missing"]: KeyError: missing (at /do/0/pick)'


def test_an_expression_value_that_is_not_json_is_named_in_the_computation_pages_words(
    client: httpx.Client, playbook: str
) -> None:
    """README settled point 19: `<source>: The value cannot be written as JSON: W at P` (spec 4.3), P a JSON
    Pointer or `the top` for the value itself, and `it nests deeper than 512 levels at P` past the bound."""
    deep: object = []
    for _ in range(510):
        deep = [deep]
    cases = {
        "top": "a value of type set at the top",
        "inside": "a float that is not finite at /a/1",
        "deep": "it nests deeper than 512 levels at " + "/0" * 512,
    }
    for what, words in cases.items():
        rejection = rejection_of(client, playbook, "expression-not-json", {"what": what, "deep": deep})
        assert rejection["reason"] == "invalid_input", rejection
        failed = f"{NOT_JSON_SOURCE}: The value cannot be written as JSON: {words}"[:1000]
        assert rejection["detail"] == f"An expression failed: {failed} (at /do/0/pick)"


# call: run_definition


def test_calls_of_computation_functions_output_their_runs_outputs(client: httpx.Client, playbook: str) -> None:
    run = run_to_end(client, playbook, "calls", {"a": 1})
    assert run["output"] == {"literal": "yes", "sum": 3}
    events = history(client, playbook, run["run_id"])
    waits = [event for event in events if event["type"] == "step_waiting"]
    assert [event["data"]["waits_for"] for event in waits] == ["call", "call"]
    for event in waits:
        callee = client.get(f"{playbook}/runs/{event['data']['run_id']}").json()
        assert callee["status"] == "succeeded", callee
        assert callee["type"] == "computation"


def test_a_call_of_a_workflow_outputs_its_run_output(client: httpx.Client, playbook: str) -> None:
    run = run_to_end(client, playbook, "caller-flow", {"n": 21})
    assert run["status"] == "succeeded", run
    assert run["output"] == 42
    events = history(client, playbook, run["run_id"])
    waiting = next(event for event in events if event["type"] == "step_waiting")
    callee_id = waiting["data"]["run_id"]
    callee = client.get(f"{playbook}/runs/{callee_id}").json()
    assert callee["status"] == "succeeded" and callee["type"] == "workflow", callee
    callee_events = history(client, playbook, callee_id)
    started = callee_events[0]
    assert started["type"] == "run_started"
    assert started["metadata"]["causation_id"] == waiting["id"]
    assert started["metadata"]["correlation_id"] == run["run_id"]
    assert started["metadata"]["call_depth"] == 1
    assert started["metadata"]["called_by"] == {"run_id": run["run_id"], "reference": "/do/0/inner", "run": 1}


def test_an_uncaught_error_fails_the_task_and_each_enclosing_task_it_leaves(
    client: httpx.Client, playbook: str
) -> None:
    """A try whose catch does not match lets the error leave: each task records `raised`, in the order they
    first moved, each caused by the task running its list; the run ends invalid_input at the raising task."""
    run = run_to_end(client, playbook, "nested-raise", {})
    assert run["rejection"]["detail"] == "X (at /do/0/outer/do/0/inner/try/0/deep)"
    events = history(client, playbook, run["run_id"])
    failed = [event for event in events if event["type"] == "step_failed"]
    assert [event["data"]["reference"] for event in failed] == [
        "/do/0/outer",
        "/do/0/outer/do/0/inner",
        "/do/0/outer/do/0/inner/try/0/deep",
    ]
    for event in failed:
        assert event["data"]["outcome"] == "raised"
        assert event["data"]["error"] == {"type": "https://example.com/errors/x", "title": "X"}
    assert [event["metadata"]["causation_id"] for event in failed[1:]] == [failed[0]["id"], failed[1]["id"]]


def test_end_in_a_plain_fork_branch_ends_the_run_when_the_fork_completes(client: httpx.Client, playbook: str) -> None:
    assert output_of(client, playbook, "fork-end", {}) == [{"stopped": True}, {}]


def test_a_document_input_from_that_raises_ends_the_run_at_the_root(client: httpx.Client, playbook: str) -> None:
    rejection = rejection_of(client, playbook, "input-from-raises", {})
    assert rejection["reason"] == "invalid_input"
    assert rejection["detail"] == 'An expression failed: data["nope"]: KeyError: nope (at /)'


def test_an_emitted_event_of_a_computed_reserved_type_raises_validation(client: httpx.Client, playbook: str) -> None:
    rejection = rejection_of(client, playbook, "emit-reserved", {})
    assert rejection["reason"] == "invalid_input"
    assert rejection["detail"].startswith("The event to emit is not one the playbook takes: "), rejection
    assert rejection["detail"].endswith(" (at /do/0/tell)"), rejection


def test_each_run_of_a_call_starts_its_own_callee_under_a_derived_id(client: httpx.Client, playbook: str) -> None:
    """A retry is a new task run, so a new callee: `uuid5(NS, "<workflow run id><reference>#<run>")`; the
    retry's first task is caused by the previous attempt's failed entry."""
    run = run_to_end(client, playbook, "retried-call", {})
    assert run["status"] == "succeeded", run
    events = history(client, playbook, run["run_id"])
    waits = [event for event in events if event["type"] == "step_waiting"]
    namespace = uuid.UUID("9b1f3a52-6c0d-4b8e-9f27-3e5d1c7a2b40")
    reference = "/do/0/guard/try/0/call-boom"
    assert [event["data"]["run_id"] for event in waits] == [
        str(uuid.uuid5(namespace, f"{run['run_id']}{reference}#{n}")) for n in (1, 2)
    ]
    first_failure = next(event for event in events if event["type"] == "step_failed")
    assert waits[1]["metadata"]["causation_id"] == first_failure["id"]
    for event in waits:
        callee = client.get(f"{playbook}/runs/{event['data']['run_id']}").json()
        assert (callee["status"], callee["rejection"]["kind"]) == ("rejected", "unworkable")


# Bounds of one input (spec 13)


def test_an_input_yields_after_100_tasks_and_the_run_goes_on(client: httpx.Client, playbook: str) -> None:
    """250 iterations are 251 tasks: inputs of 100, 100 and 51 tasks, each continued by a zero-delay timer
    (a yield), caused by the input that armed it."""
    run = run_to_end(client, playbook, "long-loop", {"n": 250})
    assert run["status"] == "succeeded", run
    assert run["output"] == {"sum": sum(range(250))}
    inputs = inputs_of(history(client, playbook, run["run_id"]))
    assert [event["data"]["input"]["kind"] for event in inputs] == ["started", "timer_fired", "timer_fired"]
    # The loop's entry counts in each input it moved: started in the first, finished in the last.
    assert [event["data"]["step_count"] for event in inputs] == [100, 100, 52]
    for earlier, later in itertools.pairwise(inputs):
        assert later["metadata"]["causation_id"] == earlier["id"]
