"""prediction-format §9–§11: shadow work through the real server. A second version shadows the active one: it
predicts right after its build (`shadow_predicted`), and when a new document version names a dataset that
reaches the predicted period it is graded (`shadow_graded`), decided (`shadow_passed` / `shadow_failed`) and,
passing, activated by rule `shadow_passed`; the standing shows each state.

The builds are answered through `answer_interaction`, and the models stream is read beside the server, on both
ledgers."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import httpx

from auto_runtime.ledger import PlaybookScope
from tests.conformance.prediction.conftest import PredictionServer
from tests.conformance.prediction.helpers import models_events, uploaded, waited_for
from tests.conformance.prediction.test_builds import SMALL, _build, _function
from tests.conformance.prediction.test_candidates import _upload
from tests.conformance.prediction.test_full_cycle import LINEAR, _ended, _inbox
from tests.functions.prediction.onnx_models import candidate

OFF_BY_A_LITTLE = candidate([[-1], [2]], [0.5], bias=[0.25])
NOT_IN_ORDER = candidate([[-1], [2]], [-0.5])
LATER = SMALL + b"2026-01,a,13\n2026-01,b,5\n"


def _built(
    prediction_server: PredictionServer, client: httpx.Client, playbook: str, function: str, model: bytes
) -> dict[str, Any]:
    run_id = _build(client, function).json()["run_id"]
    digest = _upload(client, playbook, run_id, model).json()["candidate"]
    _inbox(client, playbook, run_id, {"candidates": [digest]})
    run = _ended(client, playbook, run_id)
    assert run["status"] == "succeeded", run
    output: dict[str, Any] = run["output"]
    return output


def _states(client: httpx.Client, function: str) -> dict[int, str]:
    versions = client.get(function).json()["standing"]["models"]["versions"]
    return {int(version["version"]): str(version["state"]) for version in versions}


def _newer_dataset(client: httpx.Client, playbook: str, function: str) -> None:
    dataset = uploaded(client, playbook, LATER)["dataset"]
    source = client.get(function).json()["source"]
    old = uploaded(client, playbook, SMALL)["dataset"]
    saved = client.put(function, json={"source": source.replace(old, dataset)})
    assert saved.status_code == 200, saved.text


def test_a_shadowing_version_predicts_is_graded_passes_and_is_activated(
    prediction_server: PredictionServer, client: httpx.Client, playbook: str
) -> None:
    function = _function(client, playbook)
    scope = PlaybookScope("acme", playbook.rsplit("/", 1)[1])
    assert _built(prediction_server, client, playbook, function, LINEAR)["state"] == "active"
    assert _built(prediction_server, client, playbook, function, LINEAR)["state"] == "shadowing"
    events = waited_for(prediction_server, scope, "shadow_predicted")
    ((_kind, predicted),) = [event for event in events if event[0] == "shadow_predicted"]
    points = [
        {
            "series": "a",
            "origin": "2025-12",
            "period": "2026-01",
            "horizon": 1,
            "value": 13,
            "low": 12.5,
            "high": 13.5,
            "against": 13,
        }
    ]
    kept = json.dumps(points, separators=(",", ":")).encode()
    assert predicted == {
        "version": 2,
        "against": 1,
        "dataset": uploaded(client, playbook, SMALL)["dataset"],
        "series": 1,
        "predictions": 1,
        "predictions_bytes": len(kept),
        "predictions_sha256": hashlib.sha256(kept).hexdigest(),
    }
    metadata = models_events(prediction_server, scope)[-1][2]
    assert metadata["by"] == f"playbook:{scope.playbook}"
    assert metadata["definition"]["name"] == "units" and metadata["definition"]["type"] == "prediction"
    assert _states(client, function) == {1: "active", 2: "shadowing"}

    _newer_dataset(client, playbook, function)
    events = waited_for(prediction_server, scope, "shadow_passed")
    kinds = [kind for kind, _ in events]
    assert kinds[kinds.index("shadow_predicted") :] == [
        "shadow_predicted",
        "shadow_graded",
        "shadow_passed",
        "version_activated",
    ]
    data = {kind: fact for kind, fact in events}
    assert data["shadow_graded"] == {
        "version": 2,
        "against": 1,
        "dataset": uploaded(client, playbook, LATER)["dataset"],
        "graded": 1,
        "graded_total": 1,
        "mase": 0,
        "against_mase": 0,
        "coverage": 1,
    }
    assert data["shadow_passed"] == {
        "version": 2,
        "against": 1,
        "graded_total": 1,
        "mase": 0,
        "against_mase": 0,
        "coverage": 1,
    }
    assert data["version_activated"] == {"version": 2, "rule": "shadow_passed", "previous": 1}
    assert _states(client, function) == {1: "replaced", 2: "active"}
    question = client.post(f"{function}/run", json={"input": {"series": "a"}})
    assert question.status_code == 200, question.text
    assert client.get(f"{playbook}/runs/{question.json()['run_id']}").json()["record"]["version"] == 2


def test_a_shadowing_version_worse_than_the_active_one_fails(
    prediction_server: PredictionServer, client: httpx.Client, playbook: str
) -> None:
    function = _function(client, playbook)
    scope = PlaybookScope("acme", playbook.rsplit("/", 1)[1])
    _built(prediction_server, client, playbook, function, LINEAR)
    assert _built(prediction_server, client, playbook, function, OFF_BY_A_LITTLE)["state"] == "shadowing"
    waited_for(prediction_server, scope, "shadow_predicted")
    _newer_dataset(client, playbook, function)
    events = waited_for(prediction_server, scope, "shadow_failed")
    (failed,) = [fact for kind, fact in events if kind == "shadow_failed"]
    assert failed == {
        "version": 2,
        "against": 1,
        "graded_total": 1,
        "mase": 0.25,
        "against_mase": 0,
        "coverage": 1,
        "because": "worse",
    }
    assert "version_activated" not in [kind for kind, _ in events]
    assert _states(client, function) == {1: "active", 2: "failed"}


def test_a_contract_change_fails_the_shadow(
    prediction_server: PredictionServer, client: httpx.Client, playbook: str
) -> None:
    function = _function(client, playbook)
    scope = PlaybookScope("acme", playbook.rsplit("/", 1)[1])
    _built(prediction_server, client, playbook, function, LINEAR)
    _built(prediction_server, client, playbook, function, LINEAR)
    waited_for(prediction_server, scope, "shadow_predicted")
    source = client.get(function).json()["source"].replace("lags: 2", "lags: 3")
    assert client.put(function, json={"source": source}).status_code == 200
    events = waited_for(prediction_server, scope, "shadow_failed")
    (failed,) = [fact for kind, fact in events if kind == "shadow_failed"]
    assert failed["because"] == "contract_changed" and failed["graded_total"] == 0
    assert _states(client, function)[2] == "unfit"


def test_a_pass_behind_a_newer_active_version_is_refused_superseded(
    prediction_server: PredictionServer, client: httpx.Client, playbook: str
) -> None:
    function = _function(client, playbook)
    scope = PlaybookScope("acme", playbook.rsplit("/", 1)[1])
    _built(prediction_server, client, playbook, function, LINEAR)
    assert _built(prediction_server, client, playbook, function, LINEAR)["state"] == "shadowing"
    assert _built(prediction_server, client, playbook, function, LINEAR)["state"] == "shadowing"
    waited_for(prediction_server, scope, "shadow_predicted", count=2)
    assert client.post(f"{function}/activate", json={"version": 3}).status_code == 200
    _newer_dataset(client, playbook, function)
    events = waited_for(prediction_server, scope, "activation_refused")
    kinds = [kind for kind, _ in events]
    assert kinds[-2:] == ["shadow_passed", "activation_refused"]
    assert events[-1][1] == {"version": 2, "because": "superseded"}
    assert events[-2][1]["against"] == 3
    assert _states(client, function) == {1: "replaced", 2: "refused", 3: "active"}


def test_a_decision_with_no_point_graded_fails_nothing_graded(
    prediction_server: PredictionServer, client: httpx.Client, playbook: str
) -> None:
    function = _function(client, playbook)
    scope = PlaybookScope("acme", playbook.rsplit("/", 1)[1])
    _built(prediction_server, client, playbook, function, LINEAR)
    _built(prediction_server, client, playbook, function, LINEAR)
    waited_for(prediction_server, scope, "shadow_predicted")
    only_b_later = SMALL + b"2026-01,b,5\n"  # series a, the one predicted, does not reach 2026-01
    dataset = uploaded(client, playbook, only_b_later)["dataset"]
    source = client.get(function).json()["source"].replace(uploaded(client, playbook, SMALL)["dataset"], dataset)
    assert client.put(function, json={"source": source}).status_code == 200
    events = waited_for(prediction_server, scope, "shadow_failed")
    assert [kind for kind, _ in events][-2:] == ["shadow_graded", "shadow_failed"]
    assert events[-2][1]["graded"] == 0 and events[-2][1]["graded_total"] == 0
    assert events[-1][1] == {
        "version": 2,
        "against": 1,
        "graded_total": 0,
        "mase": None,
        "against_mase": None,
        "coverage": None,
        "because": "nothing_graded",
    }
    assert _states(client, function) == {1: "active", 2: "failed"}


MANY = 60
MANY_SERIES = b"period,series,units\n" + b"".join(
    f"2025-{month:02d},s{index:02d},{index * 100 + month}\n".encode() for index in range(MANY) for month in range(1, 13)
)
MANY_LATER = MANY_SERIES + b"".join(f"2026-01,s{index:02d},{index * 100 + 13}\n".encode() for index in range(MANY))


def test_sixty_series_keep_their_points_as_content_and_are_graded_from_there(
    prediction_server: PredictionServer, client: httpx.Client, playbook: str
) -> None:
    """Settled point 25: with 60 series the points no longer fit an event's data; `shadow_predicted` holds their
    count, and their bytes and SHA-256 as content, whole in the history, and grading reads them from there."""
    function = _function(client, playbook, MANY_SERIES)
    scope = PlaybookScope("acme", playbook.rsplit("/", 1)[1])
    _built(prediction_server, client, playbook, function, LINEAR)
    assert _built(prediction_server, client, playbook, function, LINEAR)["state"] == "shadowing"
    waited_for(prediction_server, scope, "shadow_predicted")
    shown = client.get(f"{playbook}/events", params={"type": "shadow_predicted"})
    assert shown.status_code == 200, shown.text
    ((event),) = shown.json()["events"]
    predicted = event["data"]
    assert (predicted["series"], predicted["predictions"]) == (MANY, MANY), predicted
    assert predicted["predictions_bytes"] > 4096 and len(predicted["predictions_sha256"]) == 64
    assert set(predicted) == {
        "version",
        "against",
        "dataset",
        "series",
        "predictions",
        "predictions_bytes",
        "predictions_sha256",
    }
    dataset = uploaded(client, playbook, MANY_LATER)["dataset"]
    source = client.get(function).json()["source"].replace(uploaded(client, playbook, MANY_SERIES)["dataset"], dataset)
    assert client.put(function, json={"source": source}).status_code == 200
    events = waited_for(prediction_server, scope, "shadow_passed")
    graded = {kind: fact for kind, fact in events}["shadow_graded"]
    assert (graded["graded"], graded["graded_total"], graded["mase"], graded["coverage"]) == (MANY, MANY, 0, 1)
    assert _states(client, function) == {1: "replaced", 2: "active"}
