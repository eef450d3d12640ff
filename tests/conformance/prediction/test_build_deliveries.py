"""prediction-format §8.1 step 4 and §8.5: a trainer that delivers through a tool gets the build's request by the
interaction format's delivery attempts (interaction-format §4), end to end: the real server on both ledgers and
the fake MCP tool server as a real process. The schedule of later attempts is followed by moving the server's
clock (a test's, `tests/e2e/moved_clock.py`) to each due time; its exact boundaries and `lost` are driven by a
clock in-process in `tests/functions/prediction/test_build_deliveries_on_a_clock.py`."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from auto_runtime.functions.prediction.brief import request_message
from auto_runtime.functions.prediction.build_facts import ANSWER_SCHEMA
from tests.conformance.helpers import problem
from tests.conformance.interactions.schedules import ATTEMPTS, attempts_ended, attempts_on_schedule, history, of_type
from tests.conformance.prediction.seeding import seed
from tests.conformance.prediction.test_builds import _build, _function, _history
from tests.conformance.prediction.test_candidates import _upload
from tests.conformance.prediction.test_full_cycle import LINEAR, _ended, answered, listed
from tests.e2e.moved_clock import TEST_CLOCK_SETTINGS
from tests.e2e.server_process import ServerProcess, start_server
from tests.fakes.gateway_process import McpToolServerProcess, start_mcp_tool_server
from tests.postgres_support import fresh_database, server_on

WAIT_BOUND_SECONDS = 60.0
DELIVERS = """---
to: '{{ input.function }}-trainers'
expires: P2D
deliver:
  server: SERVER
  tool: TOOL
  with:
    text: '{{ message }}'
    build: '{{ run_id }}'
    function: '{{ function }}'
    schema: '{{ answer_schema }}'
    party: '{{ to }}'
    asked_for: 'the {{ input.function }} build {{ input.run_id }}'
    expires: '{{ expires_at }}'
output:
  schema:
    type: object
---
Train it.
"""


def trainer(server: str, tool: str, **replaced: str) -> str:
    source = DELIVERS.replace("SERVER", server).replace("TOOL", tool)
    for old, new in replaced.items():
        source = source.replace(old, new)
    return source


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpToolServerProcess]:
    process = start_mcp_tool_server(Path(tmp_path_factory.mktemp("desk")), "--interaction-tools")
    yield process
    process.stop()


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, desk: McpToolServerProcess
) -> Iterator[ServerProcess]:
    folder = Path(tmp_path_factory.mktemp(f"build-deliveries-{request.param}"))
    with ExitStack() as stack:
        settings = {
            "PREDICTION_CACHE_DIR": str(folder / "cache"),
            "WORKFLOW_SWEEP_INTERVAL": "PT0.05S",
            **TEST_CLOCK_SETTINGS,
            "TOOL_SERVERS": json.dumps(
                {
                    "desk": {"url": desk.url, "org": "acme"},
                    "narrow": {"url": desk.url, "org": "acme", "allowed": ["say"]},
                }
            ),
        }
        if request.param == "postgres":
            settings.update(server_on(stack.enter_context(fresh_database("build_deliveries"))))
        process = start_server(folder, settings)
        yield process
        assert process.stop() == 0, process.log()


@pytest.fixture
def client(server: ServerProcess) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client


def _with_trainer(client: httpx.Client, source: str) -> tuple[str, str]:
    """A new playbook whose `units` function's trainer is `source`: the playbook's prefix and the function's."""
    playbook = seed(client)
    response = client.post(f"{playbook}/definitions/interaction", json={"name": "train-by-chat", "source": source})
    assert response.status_code == 201, response.text
    return playbook, _function(client, playbook, trainer="train-by-chat")


def _waited(client: httpx.Client, playbook: str, run_id: str, kind: str) -> list[dict[str, Any]]:
    """The build's history once it holds a `kind` event (an attempt runs at a sweep, in a task of its own)."""
    deadline = time.monotonic() + WAIT_BOUND_SECONDS
    while time.monotonic() < deadline:
        history = _history(client, playbook, run_id)
        if any(event["type"] == kind for event in history):
            return history
        time.sleep(0.05)
    raise AssertionError(f"no {kind} within {WAIT_BOUND_SECONDS} s: {_history(client, playbook, run_id)}")


def test_the_build_request_is_delivered_through_the_trainers_tool_then_answered_through_the_inbox(
    client: httpx.Client, desk: McpToolServerProcess
) -> None:
    playbook, function = _with_trainer(client, trainer("desk", "say"))
    response = _build(client, function)
    assert response.status_code == 200, response.text
    run_id = response.json()["run_id"]
    history = _waited(client, playbook, run_id, "delivery_succeeded")
    assert [event["type"] for event in history] == [
        "run_started",
        "dataset_assembled",
        "baseline_scored",
        "build_asked",
        "delivery_started",
        "delivery_succeeded",
    ]
    asked, started, delivered = history[3:]
    assert asked["data"]["delivery"] == {"server": "desk", "tool": "say"}
    assert list(asked["data"]) == ["to", "delivery", "expires_at", "brief_bytes", "rows_bytes", "training_rows"]
    assert started["metadata"]["causation_id"] == asked["id"]
    assert delivered["metadata"]["causation_id"] == started["id"]
    assert (started["data"]["number"], started["data"]["server"], started["data"]["tool"]) == (1, "desk", "say")
    assert (delivered["data"]["number"], delivered["data"]["content_kept"]) == (1, True)

    (call,) = [call for call in desk.calls() if call["meta"].get("auto.on/run_id") == run_id]
    message = request_message("acme", playbook.rsplit("/", 1)[1], run_id, "units")
    assert call["name"] == "say"
    assert call["meta"]["auto.on/delivery_id"] == f"{run_id}:1"
    (request,) = listed(client, playbook)
    assert call["arguments"] == {
        "text": message,
        "build": run_id,
        "function": "units",
        "schema": ANSWER_SCHEMA,
        "party": "units-trainers",
        "asked_for": f"the units build {run_id}",
        "expires": request["expires_at"],
    }
    assert {key: request[key] for key in ("run_id", "type", "to", "delivery", "message", "attempts", "standing")} == {
        "run_id": run_id,
        "type": "prediction",
        "to": "units-trainers",
        "delivery": {"server": "desk", "tool": "say"},
        "message": message,
        "attempts": 1,
        "standing": "delivered",
    }

    digest = _upload(client, playbook, run_id, LINEAR).json()["candidate"]
    fact = answered(client, playbook, run_id, {"candidates": [digest]})
    assert fact.status_code == 200, fact.text
    run = _ended(client, playbook, run_id)
    assert run["status"] == "succeeded", run
    assert (run["output"]["version"], run["output"]["state"]) == (1, "active")
    assert [call for call in desk.calls() if call["meta"].get("auto.on/run_id") == run_id] == [call]


def test_a_trainer_whose_delivery_tool_is_not_offered_refuses_the_build_without_retry_after(
    client: httpx.Client,
) -> None:
    playbook, function = _with_trainer(client, trainer("narrow", "create_ticket"))
    response = _build(client, function)
    body = problem(response, 503, "unavailable", "tool_not_offered")
    assert "retry-after" not in response.headers
    assert body.get("because") == "tool_not_allowed", body
    assert listed(client, playbook) == []
    assert client.get(f"{playbook}/runs", params={"name": "units"}).json()["runs"] == []


def test_a_trainer_whose_delivery_cannot_be_rendered_for_a_build_is_unworkable(client: httpx.Client) -> None:
    """Its `deliver.with` reads a field the build's input `{ function, run_id }` lacks (prediction-format §8, step
    4: a field the input lacks included)."""
    playbook, function = _with_trainer(
        client, trainer("desk", "say", **{"{{ input.function }} build": "{{ input.team }}"})
    )
    body = problem(_build(client, function), 409, "conflict", "unworkable")
    assert body["detail"].startswith("The build cannot ask its trainer train-by-chat: Line ")
    assert body["detail"].endswith(
        ": The arguments of its deliver cannot be rendered with this input: "
        "The template reads input.team, which the input does not have."
    )
    assert listed(client, playbook) == []


def test_a_failing_delivery_is_retried_later_and_the_trainer_answers_meanwhile(
    client: httpx.Client, desk: McpToolServerProcess
) -> None:
    playbook, function = _with_trainer(client, trainer("desk", "crash"))
    run_id = _build(client, function).json()["run_id"]
    history = _waited(client, playbook, run_id, "delivery_failed")
    (failed,) = [event for event in history if event["type"] == "delivery_failed"]
    assert (failed["data"]["number"], failed["data"]["because"]) == (1, "server_failure")
    (request,) = listed(client, playbook)
    assert (request["standing"], request["attempts"]) == ("retrying", 1)
    response = answered(client, playbook, run_id, {"candidates": []})
    assert response.status_code == 200, response.text
    run = _ended(client, playbook, run_id)
    rejection = run["rejection"]
    assert (rejection["reason"], rejection["kind"], rejection["because"]) == ("conflict", "not_built", "no_candidates")
    assert [event["type"] for event in _history(client, playbook, run_id)][-3:] == [
        "request_answered",
        "build_ended",
        "run_rejected",
    ]


def test_a_build_whose_delivery_keeps_failing_is_attempted_on_the_schedule_then_stays_open_undelivered(
    client: httpx.Client, desk: McpToolServerProcess
) -> None:
    """Five attempts, at once then 1, 2, 4 and 8 minutes after the previous one ended (interaction-format §4.1);
    spent, the build's request stays open, standing `undelivered`, and still takes its answer."""
    playbook, function = _with_trainer(client, trainer("desk", "crash"))
    run_id = _build(client, function).json()["run_id"]
    attempts_on_schedule(client, playbook, run_id, None)
    events = attempts_ended(client, playbook, run_id, ATTEMPTS)
    assert [event["data"]["number"] for event in of_type(events, "delivery_started")] == [1, 2, 3, 4, 5]
    (request,) = listed(client, playbook)
    assert (request["standing"], request["attempts"]) == ("undelivered", ATTEMPTS)
    calls = [call for call in desk.calls() if call["meta"].get("auto.on/run_id") == run_id]
    assert [call["meta"]["auto.on/delivery_id"] for call in calls] == [f"{run_id}:{n}" for n in range(1, 6)]
    response = answered(client, playbook, run_id, {"candidates": []})
    assert response.status_code == 200, response.text
    assert _ended(client, playbook, run_id)["rejection"]["because"] == "no_candidates"
    assert of_type(history(client, playbook, run_id), "delivery_started")[-1]["data"]["number"] == ATTEMPTS
