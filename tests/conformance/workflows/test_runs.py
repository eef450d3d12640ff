"""Seeds "Workflows" (running, sending an event, cancelling), "Runs and results", "Retrying under a run id";
spec workflow-format.md 2 (schemas), 8 (the output bound, cancel), 9 (listen, emit), through HTTP."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.conformance.helpers import new_playbook, pointers, problem
from tests.conformance.workflows.flows import (
    finished,
    get_run,
    history,
    inputs_of,
    new_run_id,
    output_of,
    rejection_of,
    run_to_end,
    saved,
    send,
    start,
    until,
    waiting,
    workflow,
)
from tests.e2e.mcp_client import mcp_client, problem_of
from tests.e2e.server_process import ServerProcess

SCHEMAS = workflow("""
input:
  schema:
    document:
      type: object
      required: [n]
      properties: { n: { type: integer } }
output:
  schema:
    document:
      type: object
      required: [total]
      properties: { total: { type: integer } }
do:
  - out: { set: '${ {"total": data["n"]} if data["n"] >= 0 else {"total": "negative"} }' }
""")

BIG = workflow("""
do:
  - big: { set: '${ "x" * data["n"] }' }
""")

HOLD_BIG = workflow("""
do:
  - big: { set: '${ "x" * data["n"] }' }
  - pause: { wait: PT0.05S }
  - done: { set: '${ {"length": len(data)} }' }
""")

LISTENER = workflow("""
do:
  - hold:
      listen:
        to:
          one: { with: { type: com.example.go } }
  - after: { set: '${ {"got": data} }' }
""")

TWO_LISTENS = workflow("""
do:
  - first: { listen: { to: { one: { with: { type: com.example.go } } } } }
  - second:
      listen: { to: { one: { with: { type: com.example.go } } } }
      output: { as: '${ {"first": input, "second": data} }' }
""")

LATE_LISTEN = workflow("""
do:
  - pause: { wait: PT0.2S }
  - hold:
      listen:
        to:
          any:
            - { with: { type: com.example.other } }
            - { with: { type: com.example.go, data: '${ data["n"] > 1 }' } }
        read: envelope
""")

LISTEN_ALL = workflow("""
do:
  - both:
      listen:
        to:
          all:
            - { with: { type: com.example.a } }
            - { with: { type: com.example.b } }
""")

PLAYBOOK_LISTENER = workflow("""
do:
  - hold: { listen: { to: { one: { with: { type: com.example.published } } } } }
""")

EMITTER = workflow("""
do:
  - tell:
      emit:
        event:
          with: { type: com.example.emitted, source: https://example.com/flows, subject: s-1, data: '${ data }' }
""")

EMITTED_LISTENER = workflow("""
do:
  - hold: { listen: { to: { one: { with: { type: com.example.emitted } } } } }
""")

QUICK = workflow("""
do:
  - done: { set: { done: true } }
""")

UNAVAILABLE = workflow("""
do:
  - stop: { raise: { error: { type: https://example.com/errors/down, status: 503, title: Down } } }
""")

CALLS_LISTENER = workflow("""
do:
  - inner:
      call: run_definition
      with: { type: workflow, name: listener, input: {} }
""")

BAD_INPUT = workflow("""
do:
  - stop:
      raise:
        error:
          { type: https://example.com/errors/bad-input, status: 400, title: Bad input, detail: 'Missing: audience' }
""")

INBOX = workflow("""
do:
  - pause: { wait: PT20S }
""")


@pytest.fixture(scope="module")
def playbook(client: httpx.Client) -> str:
    playbook_url = new_playbook(client)
    for name, source in (
        ("schemas", SCHEMAS),
        ("big", BIG),
        ("hold-big", HOLD_BIG),
        ("listener", LISTENER),
        ("two-listens", TWO_LISTENS),
        ("late-listen", LATE_LISTEN),
        ("listen-all", LISTEN_ALL),
        ("playbook-listener", PLAYBOOK_LISTENER),
        ("emitter", EMITTER),
        ("emitted-listener", EMITTED_LISTENER),
        ("quick", QUICK),
        ("unavailable", UNAVAILABLE),
        ("calls-listener", CALLS_LISTENER),
        ("inbox", INBOX),
        ("bad-input", BAD_INPUT),
    ):
        saved(client, playbook_url, name, source)
    return playbook_url


def deep(levels: int) -> object:
    value: object = 1
    for _ in range(levels):
        value = [value]
    return value


def caller_of(client: httpx.Client, playbook: str, run_id: str) -> str:
    by: str = history(client, playbook, run_id)[0]["metadata"]["by"]
    return by


# Schemas and the output bound


def test_an_input_that_misses_the_input_schema_starts_no_run(client: httpx.Client, playbook: str) -> None:
    run_id = new_run_id()
    body = problem(start(client, playbook, "schemas", {"n": "three"}, run_id), 422, "invalid_input")
    assert pointers(body) and all(pointer.startswith("/input") for pointer in pointers(body)), body
    problem(client.get(f"{playbook}/runs/{run_id}"), 404, "not_found")


@pytest.mark.parametrize("value", [{"deep": deep(512)}, {"big": "x" * 262_144}])
def test_a_run_input_past_the_seed_limits_starts_no_run(client: httpx.Client, playbook: str, value: object) -> None:
    """256 KiB as JSON, 512 levels deep: `invalid_input` at `/input` (a workflow checks nothing more)."""
    run_id = new_run_id()
    body = problem(start(client, playbook, "quick", value, run_id), 422, "invalid_input")
    assert pointers(body) == ["/input"], body
    problem(client.get(f"{playbook}/runs/{run_id}"), 404, "not_found")


def test_an_output_that_misses_the_output_schema_ends_the_run_unworkable(client: httpx.Client, playbook: str) -> None:
    assert output_of(client, playbook, "schemas", {"n": 3}) == {"total": 3}
    rejection = rejection_of(client, playbook, "schemas", {"n": -1})
    assert (rejection["reason"], rejection["kind"]) == ("conflict", "unworkable")


def test_the_largest_output_is_1048574_bytes(client: httpx.Client, playbook: str) -> None:
    """A string of n characters takes n + 2 bytes as JSON; `get_run` shows `record: {}`."""
    run = run_to_end(client, playbook, "big", {"n": 1_048_572})
    assert run["status"] == "succeeded"
    assert len(run["output"]) == 1_048_572
    assert run["record"] == {}
    rejection = rejection_of(client, playbook, "big", {"n": 1_048_573})
    assert rejection == {
        "reason": "conflict",
        "kind": "oversized",
        "detail": "The output of the workflow takes 1048575 bytes as JSON, more than the 1048574 a run records",
    }


def test_a_megabyte_kept_across_a_wait_is_read_by_the_next_expression(client: httpx.Client, playbook: str) -> None:
    """Reading values has an allowance no value within the run's bounds reaches (spec 4.5)."""
    assert output_of(client, playbook, "hold-big", {"n": 1_000_000}) == {"length": 1_000_000}


def test_one_input_adds_at_most_1572864_bytes_to_what_the_run_holds(client: httpx.Client, playbook: str) -> None:
    """Spec 13: one input's change bounds a value kept across a wait; past it the run ends `unavailable`."""
    rejection = rejection_of(client, playbook, "hold-big", {"n": 1_600_000})
    assert rejection["reason"] == "unavailable"
    assert rejection["detail"].endswith("more than the 1572864 an input may add"), rejection


# Running and get_run


def test_run_definition_answers_started_once_the_first_input_is_applied(client: httpx.Client, playbook: str) -> None:
    run_id = new_run_id()
    response = start(client, playbook, "listener", {}, run_id)
    assert response.status_code == 200, response.text
    assert response.json()["run_id"] == run_id
    assert response.json()["status"] == "started"
    run = get_run(client, playbook, run_id)
    assert (run["status"], run["type"], run["name"], run["record"]) == ("started", "workflow", "listener", {})
    events = history(client, playbook, run_id)
    assert [event["type"] for event in events[:4]] == [
        "run_started",
        "workflow_input_applied",
        "step_waiting",
        "run_deferred",
    ]
    send(client, playbook, run_id, {"type": "com.example.go", "data": 1})
    finished(client, playbook, run_id)


def test_a_run_that_ends_in_its_first_input_answers_its_ending(client: httpx.Client, playbook: str) -> None:
    response = start(client, playbook, "quick", {})
    assert response.status_code == 200, response.text
    assert (response.json()["status"], response.json()["output"]) == ("succeeded", {"done": True})
    events = history(client, playbook, response.json()["run_id"])
    assert [event["type"] for event in events] == [
        "run_started",
        "workflow_input_applied",
        "step_finished",
        "run_succeeded",
    ]


# cancel_run


def test_cancel_run_records_the_request_and_ends_the_run_cancelled(client: httpx.Client, playbook: str) -> None:
    run_id = new_run_id()
    start(client, playbook, "listener", {}, run_id)
    cancelled = client.post(f"{playbook}/runs/{run_id}/cancel", json={"reason": "No longer needed"})
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["status"] == "started"
    again = client.post(f"{playbook}/runs/{run_id}/cancel", json={"reason": "Twice"})
    assert again.status_code in (200, 409), again.text
    run = finished(client, playbook, run_id)
    assert run["rejection"] == {"reason": "cancelled", "kind": "requested", "detail": "No longer needed"}
    problem(client.post(f"{playbook}/runs/{run_id}/cancel", json={}), 409, "conflict")
    events = history(client, playbook, run_id)
    requests = [event for event in events if event["type"] == "run_cancel_requested"]
    assert len(requests) == 1
    applied = inputs_of(events)[-1]
    assert applied["data"]["input"]["kind"] == "cancel_requested"
    assert applied["data"]["input"]["cancel"]["kind"] == "requested"
    assert (applied["data"]["step_count"], applied["data"]["steps"]) == (0, [])
    assert applied["metadata"]["causation_id"] == requests[0]["id"]
    assert events[-1]["type"] == "run_rejected"
    assert events[-1]["metadata"]["causation_id"] == applied["id"]


def _cancel_after_it_ended(client: httpx.Client, playbook: str, ending: str) -> tuple[str, dict[str, Any]]:
    """A listener run ended `succeeded` (its event sent) or `rejected` (cancelled), then asked to cancel over
    HTTP: its id and the problem document."""
    run_id = new_run_id()
    start(client, playbook, "listener", {}, run_id)
    if ending == "succeeded":
        assert send(client, playbook, run_id, {"type": "com.example.go"}).status_code == 200
    else:
        assert client.post(f"{playbook}/runs/{run_id}/cancel", json={}).status_code == 200
    assert finished(client, playbook, run_id)["status"] == ending
    return run_id, problem(client.post(f"{playbook}/runs/{run_id}/cancel", json={"reason": "Late"}), 409, "conflict")


async def test_a_cancel_of_an_ended_run_is_refused_in_one_text_over_http_and_mcp(
    local_server: ServerProcess, client: httpx.Client, playbook: str
) -> None:
    """Seeds "Cancelling a run": the run has ended, `conflict`; the same words whichever way it ended or is asked."""
    for ending in ("succeeded", "rejected"):
        run_id, body = _cancel_after_it_ended(client, playbook, ending)
        words = f"The run {run_id} has ended ({ending}), so there is nothing to cancel."
        assert body["detail"] == words and "kind" not in body and "because" not in body
        async with mcp_client(local_server.base_url, playbook.removeprefix("/v1") + "/mcp") as mcp:
            refused = problem_of(await mcp.call_tool("cancel_run", {"run_id": run_id}))
        assert (refused["reason"], refused["status"], refused["detail"]) == ("conflict", 409, words)
        assert "kind" not in refused and "because" not in refused


def test_cancel_without_a_reason_names_the_caller(client: httpx.Client, playbook: str) -> None:
    run_id = new_run_id()
    start(client, playbook, "listener", {}, run_id)
    assert client.post(f"{playbook}/runs/{run_id}/cancel", json={}).status_code == 200
    run = finished(client, playbook, run_id)
    assert (run["rejection"]["reason"], run["rejection"]["kind"]) == ("cancelled", "requested")
    assert caller_of(client, playbook, run_id) in run["rejection"]["detail"]


def test_cancel_of_an_unknown_run_or_one_that_ended_in_its_request(client: httpx.Client, playbook: str) -> None:
    problem(client.post(f"{playbook}/runs/{new_run_id()}/cancel", json={}), 404, "not_found")
    quick = start(client, playbook, "quick", {})
    problem(client.post(f"{playbook}/runs/{quick.json()['run_id']}/cancel", json={}), 409, "conflict")


def test_cancelling_a_run_cancels_the_run_it_waits_for(client: httpx.Client, playbook: str) -> None:
    run_id = new_run_id()
    start(client, playbook, "calls-listener", {}, run_id)
    callee_id = waiting(client, playbook, run_id, "/do/0/inner")["data"]["run_id"]
    until(client, playbook, callee_id, lambda run: run["status"] == "started")
    client.post(f"{playbook}/runs/{run_id}/cancel", json={"reason": "Stop"})
    assert finished(client, playbook, run_id)["rejection"]["reason"] == "cancelled"
    callee = finished(client, playbook, callee_id)
    assert (callee["rejection"]["reason"], callee["rejection"]["kind"]) == ("cancelled", "parent_ended")


def test_a_cancelled_callee_raises_cancelled_409_in_its_caller(client: httpx.Client, playbook: str) -> None:
    """Spec 6.1: a callee rejected `cancelled` (any kind) raises `…/problems/cancelled` 409; uncaught, the
    caller ends `invalid_input` (spec 8), its detail the callee's."""
    run_id = new_run_id()
    start(client, playbook, "calls-listener", {}, run_id)
    callee_id = waiting(client, playbook, run_id, "/do/0/inner")["data"]["run_id"]
    until(client, playbook, callee_id, lambda run: run["status"] == "started")
    assert client.post(f"{playbook}/runs/{callee_id}/cancel", json={"reason": "Not this one"}).status_code == 200
    run = finished(client, playbook, run_id)
    assert run["rejection"] == {
        "reason": "invalid_input",
        "detail": "The workflow listener rejected the run with cancelled: Not this one (at /do/0/inner)",
    }
    assert run["record"] == {}
    failed = [event for event in history(client, playbook, run_id) if event["type"] == "step_failed"]
    assert failed[0]["data"]["error"] == {
        "type": "https://on.auto/problems/cancelled",
        "title": "The workflow listener rejected the run with cancelled",
    }
    answered = inputs_of(history(client, playbook, run_id))[-1]
    assert answered["data"]["input"]["status"] == "rejected"
    assert answered["data"]["input"]["rejection"] == {"kind": "requested"}
    callee_events = history(client, playbook, callee_id)
    for event in callee_events:
        assert event["metadata"]["correlation_id"] == run_id
        assert event["metadata"]["called_by"] == {"run_id": run_id, "reference": "/do/0/inner", "run": 1}
        assert event["metadata"]["call_depth"] == 1


# send_run_event and listen


def test_a_sent_event_is_filled_in_and_taken_by_the_listen(client: httpx.Client, playbook: str) -> None:
    run_id = new_run_id()
    start(client, playbook, "listener", {}, run_id)
    response = send(client, playbook, run_id, {"type": "com.example.go", "data": {"ok": True}})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["run_id"] == run_id
    event = body["event"]
    assert event["type"] == "com.example.go"
    assert event["id"]
    assert event["source"] == f"/callers/{caller_of(client, playbook, run_id)}"
    assert event["time"]
    run = finished(client, playbook, run_id)
    assert run["output"] == {"got": [{"ok": True}]}
    applied = inputs_of(history(client, playbook, run_id))[1]
    assert applied["data"]["input"] == {"kind": "event_received", "key": event["id"], "event_type": "com.example.go"}


def test_the_same_event_id_is_accepted_once(client: httpx.Client, playbook: str) -> None:
    run_id = new_run_id()
    start(client, playbook, "two-listens", {}, run_id)
    go = {"type": "com.example.go", "id": "e-1", "source": "/tests", "data": 1}
    assert send(client, playbook, run_id, go).status_code == 200
    waiting(client, playbook, run_id, "/do/1/second")
    assert send(client, playbook, run_id, go).status_code == 200
    assert send(client, playbook, run_id, go | {"id": "e-2", "data": 2}).status_code == 200
    run = finished(client, playbook, run_id)
    assert run["output"] == {"first": [1], "second": [2]}
    assert len(inputs_of(history(client, playbook, run_id))) == 3


def test_an_event_no_listen_took_waits_in_the_inbox(client: httpx.Client, playbook: str) -> None:
    """Sent before the listen opens, the first event fits no filter of `any` and stays; the second is taken,
    read as its envelope."""
    run_id = new_run_id()
    start(client, playbook, "late-listen", {}, run_id)
    assert (
        send(client, playbook, run_id, {"type": "com.example.go", "id": "small", "data": {"n": 1}}).status_code == 200
    )
    sent = send(client, playbook, run_id, {"type": "com.example.go", "id": "large", "subject": "s", "data": {"n": 2}})
    run = finished(client, playbook, run_id)
    assert run["status"] == "succeeded", run
    (envelope,) = run["output"]
    assert envelope == sent.json()["event"] | {"specversion": "1.0"}
    assert envelope["id"] == "large" and envelope["subject"] == "s"


def test_listen_all_takes_one_event_per_filter_in_filter_order(client: httpx.Client, playbook: str) -> None:
    run_id = new_run_id()
    start(client, playbook, "listen-all", {}, run_id)
    send(client, playbook, run_id, {"type": "com.example.b", "data": "b"})
    send(client, playbook, run_id, {"type": "com.example.a", "data": "a"})
    run = finished(client, playbook, run_id)
    assert run["output"] == ["a", "b"]
    waits = [e for e in history(client, playbook, run_id) if e["type"] == "step_waiting"]
    assert [e["data"]["times"] for e in waits] == [1, 2]


@pytest.mark.parametrize(
    ("event", "pointer"),
    [
        ({"type": "run_started"}, "/event/type"),
        ({"type": "com.example.go", "source": "/runs/abc"}, "/event/source"),
        ({"type": "com.example.\u0007go"}, "/event/type"),
        ({"type": "   "}, "/event/type"),
        ({"type": "com.example.go", "data": deep(511)}, "/event/data"),
        ({"type": "t" * 257}, "/event/type"),
        ({"type": "com.example.go", "id": "i" * 257}, "/event/id"),
        ({"type": "com.example.go", "subject": "s" * 1025}, "/event/subject"),
        ({"type": "com.example.go", "source": "/" + "s" * 1024}, "/event/source"),
        ({"type": "com.example.go", "depth": 1}, "/event/depth"),
        ({"type": "com.example.go", "data": "x" * 262_144}, "/event"),
    ],
)
def test_send_run_event_refuses_what_a_published_event_may_not_be(
    client: httpx.Client, playbook: str, event: dict[str, str], pointer: str
) -> None:
    run_id = new_run_id()
    start(client, playbook, "listener", {}, run_id)
    body = problem(send(client, playbook, run_id, event), 422, "invalid_input")
    assert pointer in pointers(body), body
    client.post(f"{playbook}/runs/{run_id}/cancel", json={})


def test_send_run_event_to_an_unknown_or_ended_run_is_not_found(client: httpx.Client, playbook: str) -> None:
    problem(send(client, playbook, new_run_id(), {"type": "com.example.go"}), 404, "not_found")
    quick = start(client, playbook, "quick", {})
    problem(send(client, playbook, quick.json()["run_id"], {"type": "com.example.go"}), 404, "not_found")


def test_a_listen_takes_an_event_the_playbook_records_while_it_is_open(client: httpx.Client, playbook: str) -> None:
    run_id = new_run_id()
    start(client, playbook, "playbook-listener", {}, run_id)
    waiting(client, playbook, run_id, "/do/0/hold")
    published = client.post(
        f"{playbook}/events", json={"event": {"type": "com.example.published", "source": "/tests", "data": 7}}
    )
    assert published.status_code == 200, published.text
    assert finished(client, playbook, run_id)["output"] == [7]
    applied = inputs_of(history(client, playbook, run_id))[1]
    assert applied["data"]["input"]["kind"] == "event_offered"


def test_an_inbox_past_64_waiting_events_ends_the_run_and_later_sends_are_not_found(
    client: httpx.Client, playbook: str
) -> None:
    run_id = new_run_id()
    start(client, playbook, "inbox", {}, run_id)
    for n in range(65):
        assert send(client, playbook, run_id, {"type": "com.example.unheard", "data": n}).status_code == 200
    run = finished(client, playbook, run_id)
    assert run["rejection"]["reason"] == "unavailable", run
    problem(send(client, playbook, run_id, {"type": "com.example.unheard"}), 404, "not_found")


# emit


def test_emit_records_the_event_as_publish_event_would(client: httpx.Client, playbook: str) -> None:
    """Recorded as `event_published`, with metadata naming the run, the workflow and depth = run's + 1."""
    run = run_to_end(client, playbook, "emitter", {"n": 1})
    assert run["output"] == {"n": 1}
    page = client.get(f"{playbook}/events", params={"type": "event_published", "limit": 100}).json()
    (published,) = [e for e in page["events"] if e["metadata"].get("run_id") == run["run_id"]]
    assert published["data"]["event_type"] == "com.example.emitted"
    assert published["data"]["source"] == "https://example.com/flows"
    assert published["data"]["subject"] == "s-1"
    assert published["data"]["data"] == {"n": 1}
    assert published["metadata"]["definition"]["name"] == "emitter"
    assert published["metadata"]["depth"] == 1


def test_an_emitted_event_reaches_a_run_listening_for_its_type(client: httpx.Client, playbook: str) -> None:
    listening = new_run_id()
    start(client, playbook, "emitted-listener", {}, listening)
    waiting(client, playbook, listening, "/do/0/hold")
    assert output_of(client, playbook, "emitter", {"n": 2}) == {"n": 2}
    assert finished(client, playbook, listening)["output"] == [{"n": 2}]


# Retrying under a run id


def test_the_same_run_id_while_the_run_waits_returns_it_started(client: httpx.Client, playbook: str) -> None:
    run_id = new_run_id()
    start(client, playbook, "listener", {"a": 1}, run_id)
    again = start(client, playbook, "listener", {"a": 1}, run_id)
    assert again.status_code == 200, again.text
    assert (again.json()["run_id"], again.json()["status"]) == (run_id, "started")
    problem(start(client, playbook, "listener", {"a": 2}, run_id), 409, "conflict")
    events = history(client, playbook, run_id)
    assert [event["type"] for event in events].count("run_started") == 1
    client.post(f"{playbook}/runs/{run_id}/cancel", json={})
    finished(client, playbook, run_id)
    problem(start(client, playbook, "listener", {"a": 1}, run_id), 409, "cancelled")


def test_the_same_run_id_after_success_returns_the_same_output(client: httpx.Client, playbook: str) -> None:
    run_id = new_run_id()
    first = start(client, playbook, "quick", {}, run_id)
    second = start(client, playbook, "quick", {}, run_id)
    assert second.status_code == 200, second.text
    assert second.json()["output"] == first.json()["output"] == {"done": True}
    assert [event["type"] for event in history(client, playbook, run_id)].count("run_started") == 1


def test_the_same_run_id_after_invalid_input_returns_the_same_rejection(client: httpx.Client, playbook: str) -> None:
    run_id = new_run_id()
    first = start(client, playbook, "bad-input", {}, run_id)
    body = problem(first, first.status_code, "invalid_input")
    again = problem(start(client, playbook, "bad-input", {}, run_id), first.status_code, "invalid_input")
    assert again["detail"] == body["detail"] == "Bad input: Missing: audience (at /do/0/stop)"
    assert [event["type"] for event in history(client, playbook, run_id)].count("run_started") == 1


def test_the_same_run_id_after_an_ending_without_final_result_is_unworkable(
    client: httpx.Client, playbook: str
) -> None:
    run_id = new_run_id()
    start(client, playbook, "unavailable", {}, run_id)
    assert finished(client, playbook, run_id)["rejection"]["reason"] == "unavailable"
    body = problem(start(client, playbook, "unavailable", {}, run_id), 409, "conflict", "unworkable")
    assert "run id" in body["detail"], body
    assert [event["type"] for event in history(client, playbook, run_id)].count("run_started") == 1
