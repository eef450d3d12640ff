"""The full cycle of a prediction function through the real server (issue 20's acceptance; prediction-format
§7–§10, §12): upload, build, candidates, the trainer's answer, scoring, the version's activation, a question.

The build's request is read from `list_interactions` and answered with `answer_interaction` (settled point 16),
over HTTP, on both ledgers. A function naming `approve` waits for its approving run, an interaction run whose
request the test answers through the inbox too.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest

from auto_runtime.functions.prediction.brief import request_message
from auto_runtime.functions.prediction.build_facts import ANSWER_SCHEMA
from auto_runtime.ledger import PlaybookScope
from tests.conformance.helpers import problem
from tests.conformance.prediction.conftest import PredictionServer
from tests.conformance.prediction.test_builds import _build, _function, _history
from tests.conformance.prediction.test_candidates import _upload
from tests.functions.prediction.onnx_models import candidate

LINEAR = candidate([[-1], [2]], [0.5])
NAIVE = candidate([[0], [1]], [0.5])
NOT_FINITE = candidate([[0], [1]], [0.5], bias=[float("nan")])
SCORING_BOUND_SECONDS = 60.0


def listed(client: httpx.Client, playbook: str, **filters: Any) -> list[dict[str, Any]]:
    """The playbook's open requests, as `list_interactions` lists them."""
    response = client.get(f"{playbook}/interactions", params=filters)
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["interactions"]
    return items


def answered(client: httpx.Client, playbook: str, run_id: str, answer: Any, **extra: Any) -> httpx.Response:
    """`answer_interaction` on the run `run_id`."""
    return client.post(f"{playbook}/runs/{run_id}/answer", json={"answer": answer, **extra})


def _inbox(
    client: httpx.Client, playbook: str, run_id: str, answer: Any
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The open requests before the answer, and the answer's fact: the build's request answered through the inbox."""
    before = listed(client, playbook)
    response = answered(client, playbook, run_id, answer, claimed_for="the data team")
    assert response.status_code == 200, response.text
    fact: dict[str, Any] = response.json()
    return before, fact


def _ended(client: httpx.Client, playbook: str, run_id: str) -> dict[str, Any]:
    """The run once it ended; the server scores it at its next sweep."""
    deadline = time.monotonic() + SCORING_BOUND_SECONDS
    while time.monotonic() < deadline:
        run: dict[str, Any] = client.get(f"{playbook}/runs/{run_id}").json()
        if run["status"] != "started":
            return run
        time.sleep(0.1)
    raise AssertionError(f"the build {run_id} did not end within {SCORING_BOUND_SECONDS} s")


def test_upload_build_candidates_answer_scoring_activation_and_a_question(
    prediction_server: PredictionServer, client: httpx.Client, playbook: str
) -> None:
    function = _function(client, playbook)
    problem(client.post(f"{function}/run", json={"input": {"series": "a"}}), 409, "conflict", "no_version")
    run_id = _build(client, function).json()["run_id"]
    digests = [_upload(client, playbook, run_id, model).json()["candidate"] for model in (NAIVE, LINEAR, NOT_FINITE)]
    scope = PlaybookScope("acme", playbook.rsplit("/", 1)[1])
    requests, fact = _inbox(client, playbook, run_id, {"candidates": digests})
    (request,) = requests
    asked_at = datetime.fromisoformat(request.pop("requested_at").replace("Z", "+00:00"))
    expires_at = datetime.fromisoformat(request.pop("expires_at").replace("Z", "+00:00"))
    # expires_at is reckoned from the build's clock reading, requested_at from build_asked's recording: the two
    # differ by the append's own milliseconds.
    assert abs(expires_at - asked_at - timedelta(days=2)) < timedelta(seconds=1)
    assert request == {
        "run_id": run_id,
        "type": "prediction",
        "function": "units",
        "version": 1,
        "to": "units-trainers",
        "delivery": None,
        "message": request_message("acme", scope.playbook, run_id, "units"),
        "takes_answer": True,
        "answer_schema": ANSWER_SCHEMA,
        "attempts": 0,
        "conversation": None,
        "answerer": None,
        "reply_refusals": 0,
        "standing": "in_inbox",
    }
    assert request["message"].startswith(f"Build {run_id} of the prediction function units asks for candidate")
    assert listed(client, playbook) == []
    assert fact["answer"] == {"candidates": digests} and fact["claimed_for"] == "the data team"

    run = _ended(client, playbook, run_id)
    assert run["status"] == "succeeded", run
    assert "output_shape" not in run
    assert run["output"] == {
        "version": 1,
        "state": "active",
        "candidate": digests[1],
        "mase": 0,
        "msis": 1,
        "coverage": 1,
        "baseline_mase": 1,
        "baseline_msis": 2,
    }
    kinds = [event["type"] for event in _history(client, playbook, run_id)]
    assert kinds[kinds.index("request_answered") :] == [
        "request_answered",
        "candidate_scored",
        "candidate_disqualified",
        "candidate_scored",
        "candidate_disqualified",
        "version_built",
        "version_activated",
        "build_ended",
        "run_succeeded",
    ]
    history = _history(client, playbook, run_id)
    disqualified = [event["data"] for event in history if event["type"] == "candidate_disqualified"]
    assert disqualified == [
        {"candidate": digests[0], "because": "not_better", "mase": 1, "baseline_mase": 1},
        {"candidate": digests[2], "because": "not_finite"},
    ]
    events = {event["type"]: event for event in history}
    assert events["version_activated"]["data"] == {"version": 1, "rule": "none_active", "previous": None}
    assert events["build_ended"]["metadata"]["by"] == f"playbook:{scope.playbook}"

    answer = client.post(f"{function}/run", json={"input": {"series": "a"}})
    assert answer.status_code == 200, answer.text
    asked = client.get(f"{playbook}/runs/{answer.json()['run_id']}").json()
    assert asked["output_shape"] == "series"
    assert asked["output"] == {
        "series": "a",
        "period": "month",
        "lines": [
            {"name": "observed", "points": [{"period": f"2025-{m:02d}", "value": m} for m in range(1, 13)]},
            {
                "name": "predicted",
                "points": [{"period": "2026-01", "horizon": 1, "value": 13, "low": 12.5, "high": 13.5}],
            },
        ],
    }
    record = asked["record"]
    assert (record["version"], record["coverage"], record["origin"], record["candidate"]) == (
        1,
        0.8,
        "2025-12",
        digests[1],
    )
    problem(client.post(f"{function}/run", json={"input": {"series": "zz"}}), 422, "invalid_input")
    models = client.get(function).json()["standing"]["models"]
    assert models["active"] == 1 and models["build"] is None
    (version,) = models["versions"]
    assert {key: version[key] for key in ("version", "state", "candidate", "rule", "mase", "baseline_mase")} == {
        "version": 1,
        "state": "active",
        "candidate": digests[1],
        "rule": "none_active",
        "mase": 0,
        "baseline_mase": 1,
    }


def test_a_second_version_shadows_then_is_activated_by_hand_until_its_contract_changes(
    prediction_server: PredictionServer, client: httpx.Client, playbook: str
) -> None:
    function = _function(client, playbook)
    for expected_state in ("active", "shadowing"):
        run_id = _build(client, function).json()["run_id"]
        digest = _upload(client, playbook, run_id, LINEAR).json()["candidate"]
        _inbox(client, playbook, run_id, {"candidates": [digest]})
        run = _ended(client, playbook, run_id)
        assert run["output"]["state"] == expected_state, run
    activated = client.post(f"{function}/activate", json={"version": 2})
    assert activated.status_code == 200, activated.text
    assert activated.json()["function"] == "units" and activated.json()["rule"] == "by_hand"
    assert activated.json()["version"] == 2
    problem(client.post(f"{function}/activate", json={"version": 2}), 409, "conflict", "already_active")
    problem(client.post(f"{function}/activate", json={"version": 3}), 404, "not_found")
    question = client.post(f"{function}/run", json={"input": {"series": "a", "horizon": 1}})
    assert question.status_code == 200, question.text
    assert client.get(f"{playbook}/runs/{question.json()['run_id']}").json()["record"]["version"] == 2
    source = client.get(function).json()["source"].replace("lags: 2", "lags: 3")
    assert client.put(function, json={"source": source}).status_code == 200
    problem(client.post(f"{function}/activate", json={"version": 1}), 409, "conflict", "contract_changed")
    refused = problem(client.post(f"{function}/run", json={"input": {"series": "a"}}), 409, "conflict", "no_version")
    assert refused["because"] == "contract_changed"
    models = client.get(function).json()["standing"]["models"]
    assert models["active"] is None
    assert [version["state"] for version in models["versions"]] == ["unfit", "unfit"]


def _waited(check: Callable[[], Any], what: str) -> Any:
    """`check()` once it is truthy (polled within a bound, not timed)."""
    deadline = time.monotonic() + SCORING_BOUND_SECONDS
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"no {what} within {SCORING_BOUND_SECONDS} s")


@pytest.mark.parametrize(
    ("decision", "state", "rule"), [("approve", "active", "approved"), ("reject", "refused", None)]
)
def test_a_function_that_names_an_approver_waits_for_its_answer_in_the_inbox(
    client: httpx.Client, playbook: str, decision: str, state: str, rule: str | None
) -> None:
    function = _function(client, playbook, approve="approve-versions")
    run_id = _build(client, function).json()["run_id"]
    digest = _upload(client, playbook, run_id, LINEAR).json()["candidate"]
    _inbox(client, playbook, run_id, {"candidates": [digest]})
    run = _ended(client, playbook, run_id)
    assert run["output"]["state"] == "awaiting_approval", run
    kinds = [event["type"] for event in _history(client, playbook, run_id)]
    assert "version_activated" not in kinds
    problem(client.post(f"{function}/run", json={"input": {"series": "a"}}), 409, "conflict", "no_version")
    (request,) = _waited(lambda: listed(client, playbook, function="approve-versions"), "approver's request")
    assert (request["type"], request["to"], request["message"]) == ("interaction", "lead", "Approve 1?\n")
    approver = client.get(f"{playbook}/runs/{request['run_id']}").json()
    assert approver["input"]["function"] == "units" and approver["input"]["version"] == 1
    assert "| Version 1 |" in approver["input"]["summary"]
    response = answered(client, playbook, request["run_id"], {"decision": decision})
    assert response.status_code == 200, response.text

    def decided() -> dict[str, Any] | None:
        models: dict[str, Any] = client.get(function).json()["standing"]["models"]
        return models if models["versions"][0]["state"] != "awaiting_approval" else None

    models = _waited(decided, "decision")
    assert models["versions"][0]["state"] == state
    assert models["versions"][0]["rule"] == rule
    assert models["active"] == (1 if rule else None)
    asked = client.post(f"{function}/run", json={"input": {"series": "a"}})
    assert asked.status_code == (200 if rule else 409), asked.text
