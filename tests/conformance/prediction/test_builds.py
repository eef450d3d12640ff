"""prediction-format §8.1–§8.5 and §10: asking a build, its walk, rows, baseline and brief, its first events, the
build routes' refusals, one build at a time, `PREDICTION_BUILDS_PER_DAY` and cancelling a waiting build."""

from __future__ import annotations

import time
from typing import Any

import httpx

from tests.conformance.helpers import problem
from tests.conformance.prediction.helpers import create, uploaded
from tests.e2e.moved_clock import past

ENDING_BOUND_SECONDS = 60.0
SMALL = (
    "period,series,units\n"
    + "".join(f"2025-{month:02d},a,{month}\n" for month in range(1, 13))
    + "".join(f"2025-{month:02d},b,5\n" for month in range(1, 13))
    + "".join(f"2025-{month:02d},c,{month}\n" for month in range(1, 4))
).encode()


def _document(dataset: str, **fields: Any) -> str:
    values: dict[str, Any] = {
        "dataset": dataset,
        "period": "month",
        "target": "units",
        "lags": 2,
        "horizons": "[1]",
        "season": 1,
        "backtest": 2,
        "trainer": "train-forecasts",
    }
    values.update(fields)
    return "---\n" + "".join(f"{key}: {value}\n" for key, value in values.items()) + "---\nWhole boxes.\n"


def _function(client: httpx.Client, playbook: str, data: bytes = SMALL, **fields: Any) -> str:
    dataset = uploaded(client, playbook, data)["dataset"]
    response = create(client, playbook, "units", _document(dataset, **fields))
    assert response.status_code == 201, response.text
    return f"{playbook}/definitions/prediction/units"


def _build(client: httpx.Client, function: str) -> httpx.Response:
    return client.post(f"{function}/run", json={"input": {"build": {}}})


def _history(client: httpx.Client, playbook: str, run_id: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = client.get(f"{playbook}/runs/{run_id}/history", params={"limit": 100}).json()[
        "events"
    ]
    return events


def test_a_build_starts_assembles_walks_the_baseline_and_asks_its_trainer(client: httpx.Client, playbook: str) -> None:
    function = _function(client, playbook)
    response = _build(client, function)
    assert response.status_code == 200, response.text
    run = response.json()
    assert run["status"] == "started"
    events = _history(client, playbook, run["run_id"])
    assert [event["type"] for event in events] == ["run_started", "dataset_assembled", "baseline_scored", "build_asked"]
    assembled, baseline, asked = (event["data"] for event in events[1:])
    rows = "series,origin,history_1,history_2,target_h1\n" + "".join(
        f"a,2025-{origin:02d},{origin - 1},{origin},{origin + 1}\n" for origin in range(2, 10)
    )
    assert {key: value for key, value in assembled.items() if key != "rows_sha256"} == {
        "dataset": uploaded(client, playbook, SMALL)["dataset"],
        "rows": 27,
        "series": 3,
        "series_walked": 1,
        "series_too_short": 1,
        "series_flat": 1,
        "training_rows": 8,
        "points": 2,
        "rows_bytes": len(rows),
    }
    assert baseline == {"method": "seasonal_naive", "season": 1, "mase": 1, "msis": 2, "coverage": 1, "points": 2}
    assert asked["to"] == "units-trainers" and asked["delivery"] is None
    assert (asked["training_rows"], asked["rows_bytes"]) == (8, len(rows))
    assert all(event["metadata"]["by"] == events[0]["metadata"]["by"] for event in events)
    fetched = client.get(f"{playbook}/runs/{run['run_id']}/build/rows")
    assert fetched.status_code == 200 and fetched.headers["content-type"].startswith("text/csv")
    assert fetched.text == rows
    brief = client.get(f"{playbook}/runs/{run['run_id']}/build/brief")
    assert brief.status_code == 200 and brief.headers["content-type"].startswith("text/markdown")
    assert brief.text.startswith(f"# Build {run['run_id']} of units\n")
    headings = [line for line in brief.text.splitlines() if line.startswith("## ")]
    assert headings == [
        "## The forecast",
        "## The signature",
        "## The rows",
        "## The bar",
        "## Handing candidates over",
        "## Notes from the function",
    ]
    assert len(brief.content) == asked["brief_bytes"]
    assert "MASE 1.000000, MSIS 2.000000 and coverage 1.000000" in brief.text
    assert client.get(f"{playbook}/runs/{run['run_id']}").json()["status"] == "started"


def test_one_build_at_a_time_per_function(client: httpx.Client, playbook: str) -> None:
    function = _function(client, playbook)
    assert _build(client, function).status_code == 200
    problem(_build(client, function), 409, "conflict", "build_in_progress")


def _ended(client: httpx.Client, playbook: str, run_id: str) -> dict[str, Any]:
    """The run once it ended (polled within a bound, not timed): a cancelled build is ended by the lease holder
    within a moment of the cancel."""
    deadline = time.monotonic() + ENDING_BOUND_SECONDS
    while time.monotonic() < deadline:
        run: dict[str, Any] = client.get(f"{playbook}/runs/{run_id}").json()
        if run["status"] != "started":
            return run
        time.sleep(0.05)  # a poll of the run, not a bound: the loop ends on the run's end
    raise AssertionError(f"the build {run_id} did not end within {ENDING_BOUND_SECONDS} s of its cancel")


def cancelled(client: httpx.Client, playbook: str, run_id: str, **body: Any) -> dict[str, Any]:
    """`cancel_run` on a build: it answers the run as it stands, still `started` (settled point 24); the run once
    its owner ended it."""
    response = client.post(f"{playbook}/runs/{run_id}/cancel", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "started", response.json()
    return _ended(client, playbook, run_id)


def test_a_cancelled_waiting_build_answers_started_then_ends_and_its_routes_answer_build_ended(
    client: httpx.Client, playbook: str
) -> None:
    function = _function(client, playbook)
    run_id = _build(client, function).json()["run_id"]
    answer = client.post(f"{playbook}/runs/{run_id}/cancel", json={"reason": "The data was wrong."})
    assert answer.status_code == 200, answer.text
    assert (answer.json()["run_id"], answer.json()["status"]) == (run_id, "started")
    for route in ("brief", "rows"):
        problem(client.get(f"{playbook}/runs/{run_id}/build/{route}"), 409, "conflict", "build_ended")
    again = client.post(f"{playbook}/runs/{run_id}/cancel", json={})
    assert again.status_code in (200, 409), again.text  # 200 while it is still started, 409 once it ended
    run = _ended(client, playbook, run_id)
    assert run["status"] == "rejected", run
    rejection = run["rejection"]
    assert (rejection["reason"], rejection["kind"]) == ("cancelled", "requested")
    assert rejection["detail"] == "The data was wrong."
    events = _history(client, playbook, run_id)
    assert [event["type"] for event in events][-3:] == ["run_cancel_requested", "build_ended", "run_rejected"]
    asked, ended, rejected = events[-3:]
    assert [event["type"] for event in events].count("run_cancel_requested") == 1
    assert ended["data"] == {"outcome": "cancelled", "because": "requested"}
    for ending in (ended, rejected):
        assert ending["metadata"]["by"] == asked["metadata"]["by"] == events[0]["metadata"]["by"]
        assert ending["metadata"]["causation_id"] == asked["id"]
    assert _build(client, function).status_code == 200


def test_builds_of_the_day(client: httpx.Client, playbook: str) -> None:
    """The test server keeps the default `PREDICTION_BUILDS_PER_DAY`, 4."""
    function = _function(client, playbook)
    for _ in range(4):
        run_id = _build(client, function).json()["run_id"]
        assert cancelled(client, playbook, run_id)["status"] == "rejected"
    refused = problem(_build(client, function), 503, "unavailable", "builds_full")
    assert refused["because"] == "builds_of_the_day"
    assert "Retry-After" not in _build(client, function).headers


def _not_walked(client: httpx.Client, playbook: str, data: bytes, because: str) -> None:
    function = _function(client, playbook, data)
    body = problem(_build(client, function), 409, "conflict", "not_walked")
    assert body["because"] == because
    runs = client.get(f"{playbook}/runs").json()["runs"]
    events = _history(client, playbook, runs[0]["run_id"])
    assert [event["type"] for event in events] == [
        "run_started",
        "dataset_assembled",
        "baseline_not_walked",
        "build_ended",
        "run_rejected",
    ]
    assert events[2]["data"]["because"] == because
    assert events[2]["data"]["periods_needed"] == 5  # max(2 + 2·1 + 2 − 1, 1·1 + 1 + 2)
    assert events[3]["data"] == {"outcome": "not_walked", "because": because}


def test_a_build_without_a_walked_series_too_short(client: httpx.Client, playbook: str) -> None:
    data = b"period,series,units\n" + b"".join(f"2025-{m:02d},a,{m}\n".encode() for m in range(1, 5))
    _not_walked(client, playbook, data, "too_short")


def test_a_build_without_a_walked_series_flat(client: httpx.Client, playbook: str) -> None:
    data = b"period,series,units\n" + b"".join(f"2025-{m:02d},a,7\n".encode() for m in range(1, 13))
    _not_walked(client, playbook, data, "flat")


def test_a_trainer_that_cannot_be_rendered_or_is_retired_is_unworkable(client: httpx.Client, playbook: str) -> None:
    dataset = uploaded(client, playbook, SMALL)["dataset"]
    assert create(client, playbook, "unrendered", _document(dataset, trainer="unrenderable")).status_code == 201
    url = f"{playbook}/definitions/prediction/unrendered/run"
    problem(client.post(url, json={"input": {"build": {}}}), 409, "conflict", "unworkable")
    assert create(client, playbook, "orphan", _document(dataset)).status_code == 201
    assert client.post(f"{playbook}/definitions/interaction/train-forecasts/retire").status_code == 200
    url = f"{playbook}/definitions/prediction/orphan/run"
    problem(client.post(url, json={"input": {"build": {}}}), 409, "conflict", "unworkable")
    assert client.get(f"{playbook}/runs", params={"type": "prediction"}).json()["runs"] == []


def test_build_routes_refuse_runs_that_are_not_waiting_builds(client: httpx.Client, playbook: str) -> None:
    function = _function(client, playbook)
    missing = "0190d6a0-0000-7000-8000-000000000000"
    problem(client.get(f"{playbook}/runs/{missing}/build/brief"), 404, "not_found")
    question = client.post(f"{function}/run", json={"input": {"series": "a"}})
    problem(question, 409, "conflict", "no_version")
    run_id = client.get(f"{playbook}/runs").json()["runs"][0]["run_id"]
    problem(client.get(f"{playbook}/runs/{run_id}/build/rows"), 409, "conflict", "not_a_build")


def test_standing_shows_the_dataset_and_the_build_under_way(client: httpx.Client, playbook: str) -> None:
    function = _function(client, playbook)
    before = client.get(function).json()["standing"]
    assert before["dataset"] == {
        "dataset": uploaded(client, playbook, SMALL)["dataset"],
        "rows": 27,
        "series": 3,
        "period": "month",
        "last_period": "2025-12",
    }
    assert before["models"] == {
        "active": None,
        "builds_in_last_day": 0,
        "builds_per_day": 4,
        "build": None,
        "versions": [],
    }
    run_id = _build(client, function).json()["run_id"]
    models = client.get(function).json()["standing"]["models"]
    assert models["build"] == {"run_id": run_id, "state": "waiting"}
    assert models["builds_in_last_day"] == 1


def test_a_build_its_trainer_leaves_unanswered_expires(client: httpx.Client, playbook: str) -> None:
    """The trainer `quick-trainer` expires after one minute, the shortest `expires` an interaction function has:
    the server's clock (a test's) is moved past the request's `expires_at` instead of waiting the minute out."""
    function = _function(client, playbook, trainer="quick-trainer")
    run_id = _build(client, function).json()["run_id"]
    deadline = time.monotonic() + ENDING_BOUND_SECONDS
    asked: list[dict[str, Any]] = []
    while not asked:
        assert time.monotonic() < deadline, _history(client, playbook, run_id)
        asked = [event for event in _history(client, playbook, run_id) if event["type"] == "build_asked"]
        time.sleep(0.05)  # a poll of the history, not a bound: the loop ends once the trainer is asked
    past(client, asked[0]["data"]["expires_at"])
    run: dict[str, Any] = {"status": "started"}
    while run["status"] == "started" and time.monotonic() < deadline:
        time.sleep(0.05)  # a poll of the run, not a bound: the loop ends on the run's end
        run = client.get(f"{playbook}/runs/{run_id}").json()
    assert run["status"] == "rejected", run
    assert (run["rejection"]["reason"], run["rejection"]["kind"]) == ("unanswered", "expired")
    ended = [event for event in _history(client, playbook, run_id) if event["type"] == "build_ended"]
    assert [event["data"] for event in ended] == [{"outcome": "expired"}]
    assert ended[0]["metadata"]["by"].startswith("playbook:")
    again = client.post(f"{function}/run", json={"input": {"build": {}}, "run_id": run_id})
    problem(again, 410, "unanswered", "expired")
