"""The full cycle of a prediction function through the real server (issue 20's acceptance; prediction-format
§7–§10, §12): upload, build, candidates, the trainer's answer, scoring, the version's activation, a question.

The answer goes through `BuildRequests`, the interface `answer_interaction` calls for a build (settled point 16),
from this test process straight to the server's ledger, as the inbox would record it. That needs a ledger two
processes may write to, so the cycle runs on PostgreSQL; the SQLite server holds its file alone
(`tests/functions/prediction/test_cycle_on_sqlite.py` runs the cycle on SQLite in one process).
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
import trio

from auto_runtime.functions.prediction.build_requests import BuildRequests
from auto_runtime.functions.prediction.builds import Builds
from auto_runtime.functions.prediction.datasets import Datasets
from auto_runtime.ledger import PlaybookScope, open_ledger
from auto_runtime.server import RUNTIME_PROJECTIONS
from tests.conformance.helpers import problem
from tests.conformance.prediction.conftest import PredictionServer
from tests.conformance.prediction.helpers import waited_for
from tests.conformance.prediction.test_builds import _build, _function, _history
from tests.conformance.prediction.test_candidates import _upload
from tests.functions.prediction.onnx_models import candidate

LINEAR = candidate([[-1], [2]], [0.5])
NAIVE = candidate([[0], [1]], [0.5])
NOT_FINITE = candidate([[0], [1]], [0.5], bias=[float("nan")])
SCORING_BOUND_SECONDS = 60.0


def _inbox(url: str, scope: PlaybookScope, run_id: str, answer: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    async def act() -> tuple[list[dict[str, Any]], dict[str, Any]]:
        async with open_ledger(None, url, RUNTIME_PROJECTIONS) as ledger:
            requests = BuildRequests(Builds(ledger, Datasets(ledger), 4))
            listed = await requests.open_requests(scope)
            return listed, await requests.answer(scope, run_id, answer, "the data team", "key:trainer")

    return trio.run(act)


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
    if prediction_server.database_url is None:
        pytest.skip("the answer is written by another process, which a SQLite ledger does not let in")
    function = _function(client, playbook)
    problem(client.post(f"{function}/run", json={"input": {"series": "a"}}), 409, "conflict", "no_version")
    run_id = _build(client, function).json()["run_id"]
    digests = [_upload(client, playbook, run_id, model).json()["candidate"] for model in (NAIVE, LINEAR, NOT_FINITE)]
    scope = PlaybookScope("acme", playbook.rsplit("/", 1)[1])
    listed, fact = _inbox(prediction_server.database_url, scope, run_id, {"candidates": digests})
    assert [request["run_id"] for request in listed] == [run_id]
    assert listed[0]["type"] == "prediction" and listed[0]["function"] == "units" and listed[0]["version"] == 1
    assert listed[0]["to"] == "units-trainers" and listed[0]["takes_answer"] is True
    assert listed[0]["message"].startswith(f"Build {run_id} of the prediction function units asks for candidate")
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
    if prediction_server.database_url is None:
        pytest.skip("the answer is written by another process, which a SQLite ledger does not let in")
    function = _function(client, playbook)
    scope = PlaybookScope("acme", playbook.rsplit("/", 1)[1])
    for expected_state in ("active", "shadowing"):
        run_id = _build(client, function).json()["run_id"]
        digest = _upload(client, playbook, run_id, LINEAR).json()["candidate"]
        _inbox(prediction_server.database_url, scope, run_id, {"candidates": [digest]})
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


def test_a_function_that_names_an_approver_waits_for_its_approving_run(
    prediction_server: PredictionServer, client: httpx.Client, playbook: str
) -> None:
    if prediction_server.database_url is None:
        pytest.skip("the answer is written by another process, which a SQLite ledger does not let in")
    function = _function(client, playbook, approve="approve-versions")
    scope = PlaybookScope("acme", playbook.rsplit("/", 1)[1])
    run_id = _build(client, function).json()["run_id"]
    digest = _upload(client, playbook, run_id, LINEAR).json()["candidate"]
    _inbox(prediction_server.database_url, scope, run_id, {"candidates": [digest]})
    run = _ended(client, playbook, run_id)
    assert run["output"]["state"] == "awaiting_approval", run
    kinds = [event["type"] for event in _history(client, playbook, run_id)]
    assert "version_activated" not in kinds
    problem(client.post(f"{function}/run", json={"input": {"series": "a"}}), 409, "conflict", "no_version")
    # The approving run cannot run on this server (no interaction type here), so it ends without an answer.
    events = waited_for(prediction_server.database_url, scope, "activation_refused")
    assert events == [("activation_refused", {"version": 1, "because": "approval_failed"})]
    models = client.get(function).json()["standing"]["models"]
    assert models["active"] is None and models["versions"][0]["state"] == "refused"
    assert client.post(f"{function}/activate", json={"version": 1}).status_code == 200
    assert client.post(f"{function}/run", json={"input": {"series": "a"}}).status_code == 200
