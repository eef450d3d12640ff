"""prediction-format §8.6 (seeds, `upload_candidate`): a waiting build's candidates, checked in order, refused as
`invalid_input` at `/body` with `candidate_refused`, accepted with `candidate_uploaded`, at most 8."""

from __future__ import annotations

import hashlib
from typing import Any

import httpx

from tests.conformance.helpers import pointers, problem
from tests.conformance.prediction.test_builds import _build, _function, _history
from tests.functions.prediction.onnx_models import allocating, candidate

NAIVE = candidate([[0], [1]], [0.5])


def _upload(
    client: httpx.Client, playbook: str, run_id: str, data: bytes, media: str = "application/octet-stream"
) -> httpx.Response:
    return client.post(f"{playbook}/runs/{run_id}/build/candidates", content=data, headers={"Content-Type": media})


def _waiting(client: httpx.Client, playbook: str) -> str:
    run_id: str = _build(client, _function(client, playbook)).json()["run_id"]
    return run_id


def _facts(client: httpx.Client, playbook: str, run_id: str, kind: str) -> list[dict[str, Any]]:
    return [event["data"] for event in _history(client, playbook, run_id) if event["type"] == kind]


def test_a_candidate_is_checked_and_accepted_once(client: httpx.Client, playbook: str) -> None:
    run_id = _waiting(client, playbook)
    response = _upload(client, playbook, run_id, NAIVE)
    assert response.status_code == 200, response.text
    digest = hashlib.sha256(NAIVE).hexdigest()
    assert response.json() == {"candidate": digest, "bytes": len(NAIVE), "opset": 17}
    assert _upload(client, playbook, run_id, NAIVE).json() == response.json()
    assert _facts(client, playbook, run_id, "candidate_uploaded") == [
        {"candidate": digest, "bytes": len(NAIVE), "opset": 17, "accepted": 1}
    ]


def _refused(client: httpx.Client, playbook: str, run_id: str, data: bytes, because: str) -> None:
    body = problem(_upload(client, playbook, run_id, data), 422, "invalid_input")
    assert pointers(body) == ["/body"] and body["because"] == because, body
    refused = _facts(client, playbook, run_id, "candidate_refused")[-1]
    assert refused == {"candidate": hashlib.sha256(data).hexdigest(), "bytes": len(data), "because": because}


def test_refusals_in_the_order_of_the_check(client: httpx.Client, playbook: str) -> None:
    run_id = _waiting(client, playbook)
    _refused(client, playbook, run_id, b"\x08\x07 not a model at all \xff\xff", "not_loadable")
    _refused(client, playbook, run_id, candidate([[0], [1]], [0.5], opset=12), "opset")
    _refused(client, playbook, run_id, candidate([[0], [1]], [0.5], names=("x", "value", "low", "high")), "signature")
    _refused(client, playbook, run_id, candidate([[0], [0], [1]], [0.5]), "signature")
    _refused(client, playbook, run_id, candidate([[0, 0], [1, 1]], [0.5, 0.5]), "signature")
    _refused(client, playbook, run_id, allocating(2, 1), "out_of_memory")
    assert _facts(client, playbook, run_id, "candidate_uploaded") == []
    assert _upload(client, playbook, run_id, NAIVE).status_code == 200


def test_a_candidate_that_answers_not_finite_values_is_accepted_until_scoring(
    client: httpx.Client, playbook: str
) -> None:
    run_id = _waiting(client, playbook)
    assert _upload(client, playbook, run_id, candidate([[0], [1]], [0.5], bias=[float("nan")])).status_code == 200


def test_at_most_eight_candidates(client: httpx.Client, playbook: str) -> None:
    run_id = _waiting(client, playbook)
    for index in range(8):
        assert _upload(client, playbook, run_id, candidate([[0], [1]], [0.5 + index])).status_code == 200
    _refused(client, playbook, run_id, candidate([[0], [1]], [9.5]), "too_many")
    assert _facts(client, playbook, run_id, "candidate_uploaded")[-1]["accepted"] == 8


def test_media_type_and_length(client: httpx.Client, playbook: str) -> None:
    run_id = _waiting(client, playbook)
    problem(_upload(client, playbook, run_id, NAIVE, "application/json"), 415, "unsupported_media_type")

    def chunks() -> Any:
        yield NAIVE

    response = client.post(
        f"{playbook}/runs/{run_id}/build/candidates",
        content=chunks(),
        headers={"Content-Type": "application/octet-stream"},
    )
    problem(response, 411, "length_required")


def test_a_cancelled_build_takes_no_candidates(client: httpx.Client, playbook: str) -> None:
    run_id = _waiting(client, playbook)
    assert client.post(f"{playbook}/runs/{run_id}/cancel", json={}).status_code == 200
    problem(_upload(client, playbook, run_id, NAIVE), 409, "conflict", "build_ended")
