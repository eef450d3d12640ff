"""prediction-format §8.5: a build's request as `list_interactions` lists it and `answer_interaction` answers it,
over HTTP (settled point 16), on both ledgers. Checked in order: a run the playbook lacks, the same answer again,
another answer or an ended build, the schema under `/answer`, candidates the build did not accept; the request
stays open after 3 and 4. A question's run takes no answer; an answer over 64 KiB or 512 levels is refused under
`/answer`; the MCP tool `answer_interaction` answers a build as the route does."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conformance.prediction.test_builds import _build, _function
from tests.conformance.prediction.test_candidates import _upload
from tests.conformance.prediction.test_full_cycle import _ended, _inbox, answered, listed
from tests.functions.prediction.onnx_models import candidate

LINEAR = candidate([[-1], [2]], [0.5])


def _answers(client: httpx.Client, playbook: str, attempts: list[tuple[str, Any]]) -> list[Any]:
    """Each (run id, answer) through `answer_interaction`: (status, body); then the open requests' run ids."""
    outcomes: list[Any] = []
    for run_id, answer in attempts:
        response = answered(client, playbook, run_id, answer)
        outcomes.append((response.status_code, response.json()))
    outcomes.append([request["run_id"] for request in listed(client, playbook)])
    return outcomes


def test_answers_are_checked_in_order_and_the_request_stays_open_after_a_refusal(
    client: httpx.Client, playbook: str
) -> None:
    function = _function(client, playbook)
    run_id = _build(client, function).json()["run_id"]
    digest = _upload(client, playbook, run_id, LINEAR).json()["candidate"]
    assert [request["run_id"] for request in listed(client, playbook, type="prediction", function="units")] == [run_id]
    assert listed(client, playbook, type="interaction") == []
    assert listed(client, playbook, function="other") == []
    assert listed(client, playbook, to="units-trainers")[0]["run_id"] == run_id
    deep: Any = {"candidates": []}
    for _ in range(600):
        deep = [deep]
    missing, wrong_schema, unknown, too_big, too_deep, still_open = _answers(
        client,
        playbook,
        [
            ("0190d6a0-0000-7000-8000-000000000000", {"candidates": []}),
            (run_id, {"candidates": [digest, digest], "note": 1}),
            (run_id, {"candidates": [digest, "a" * 64, "b" * 64]}),
            (run_id, {"candidates": ["a" * 64] * 1200}),
            (run_id, deep),
        ],
    )
    assert (missing[0], missing[1]["reason"]) == (404, "not_found")
    assert (wrong_schema[0], wrong_schema[1]["reason"]) == (422, "invalid_input")
    assert {error["pointer"] for error in wrong_schema[1]["errors"]} == {"/answer/note", "/answer/candidates"}
    assert (unknown[0], unknown[1]["reason"]) == (422, "invalid_input")
    assert [error["pointer"] for error in unknown[1]["errors"]] == ["/answer/candidates/1", "/answer/candidates/2"]
    for status, body in (too_big, too_deep):
        assert (status, body["reason"]) == (422, "invalid_input"), body
        assert all(error["pointer"].startswith("/answer") for error in body["errors"]), body
    assert still_open == [run_id]
    first, again, other, after = _answers(
        client,
        playbook,
        [(run_id, {"candidates": [digest]}), (run_id, {"candidates": [digest]}), (run_id, {"candidates": []})],
    )
    assert first[0] == 200 and first[1]["answer"] == {"candidates": [digest]}
    assert first[1]["answered_by"] and first[1]["run_id"] == run_id
    assert again == first
    assert (other[0], other[1]["reason"]) == (409, "conflict")
    assert after == []
    for route in ("brief", "rows"):
        response = client.get(f"{playbook}/runs/{run_id}/build/{route}")
        assert response.status_code == 409 and response.json()["kind"] == "build_ended"


def test_a_question_takes_no_answer(client: httpx.Client, playbook: str) -> None:
    function = _function(client, playbook)
    run_id = _build(client, function).json()["run_id"]
    digest = _upload(client, playbook, run_id, LINEAR).json()["candidate"]
    _inbox(client, playbook, run_id, {"candidates": [digest]})
    assert _ended(client, playbook, run_id)["status"] == "succeeded"
    asked = client.post(f"{function}/run", json={"input": {"series": "a"}})
    assert asked.status_code == 200, asked.text
    response = answered(client, playbook, asked.json()["run_id"], {"candidates": []})
    assert (response.status_code, response.json()["reason"]) == (409, "conflict")


def test_an_empty_answer_ends_the_build_without_a_version(client: httpx.Client, playbook: str) -> None:
    run_id = _build(client, _function(client, playbook)).json()["run_id"]
    _inbox(client, playbook, run_id, {"candidates": []})
    run = _ended(client, playbook, run_id)
    assert run["status"] == "rejected"
    assert (run["rejection"]["kind"], run["rejection"]["because"]) == ("not_built", "no_candidates")


def test_a_function_retired_during_its_build_ends_it_retired(client: httpx.Client, playbook: str) -> None:
    function = _function(client, playbook)
    run_id = _build(client, function).json()["run_id"]
    digest = _upload(client, playbook, run_id, LINEAR).json()["candidate"]
    assert client.post(f"{function}/retire").status_code == 200
    _inbox(client, playbook, run_id, {"candidates": [digest]})
    run = _ended(client, playbook, run_id)
    assert (run["status"], run["rejection"]["reason"], run["rejection"]["kind"]) == ("rejected", "conflict", "retired")
