"""prediction-format §8.5: a build's request as `list_interactions` lists it and `answer_interaction` answers it,
through `BuildRequests`, the interface the inbox calls (settled point 16). Checked in order: a run the playbook
lacks, the same answer again, another answer or an ended build, the schema under `/answer`, candidates the build
did not accept; the request stays open after 3 and 4. The answer is written beside the server, so on PostgreSQL."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import trio

from auto_runtime.functions.prediction.build_requests import BuildRequests
from auto_runtime.functions.prediction.builds import Builds
from auto_runtime.functions.prediction.datasets import Datasets
from auto_runtime.ledger import PlaybookScope, open_ledger
from auto_runtime.problems import Rejection
from auto_runtime.server import RUNTIME_PROJECTIONS
from tests.conformance.prediction.conftest import PredictionServer
from tests.conformance.prediction.test_builds import _build, _function
from tests.conformance.prediction.test_candidates import _upload
from tests.conformance.prediction.test_full_cycle import _ended
from tests.functions.prediction.onnx_models import candidate

LINEAR = candidate([[-1], [2]], [0.5])


def _answers(url: str, scope: PlaybookScope, attempts: list[tuple[str, Any]]) -> list[Any]:
    """Each (run id, answer) through `BuildRequests.answer`: the fact, or the rejection's problem; then the
    open requests."""

    async def act() -> list[Any]:
        async with open_ledger(None, url, RUNTIME_PROJECTIONS) as ledger:
            requests = BuildRequests(Builds(ledger, Datasets(ledger), 4))
            outcomes: list[Any] = []
            for run_id, answer in attempts:
                try:
                    outcomes.append(await requests.answer(scope, run_id, answer, None, "key:trainer"))
                except Rejection as rejection:
                    outcomes.append(rejection.problem())
            outcomes.append(await requests.open_requests(scope))
            return outcomes

    return trio.run(act)


def test_answers_are_checked_in_order_and_the_request_stays_open_after_a_refusal(
    prediction_server: PredictionServer, client: httpx.Client, playbook: str
) -> None:
    if prediction_server.database_url is None:
        pytest.skip("the answer is written by another process, which a SQLite ledger does not let in")
    url = prediction_server.database_url
    scope = PlaybookScope("acme", playbook.rsplit("/", 1)[1])
    run_id = _build(client, _function(client, playbook)).json()["run_id"]
    digest = _upload(client, playbook, run_id, LINEAR).json()["candidate"]
    missing, wrong_schema, unknown, still_open = _answers(
        url,
        scope,
        [
            ("0190d6a0-0000-7000-8000-000000000000", {"candidates": []}),
            (run_id, {"candidates": [digest, digest], "note": 1}),
            (run_id, {"candidates": [digest, "a" * 64, "b" * 64]}),
        ],
    )
    assert missing["reason"] == "not_found"
    assert wrong_schema["reason"] == "invalid_input"
    assert {error["pointer"] for error in wrong_schema["errors"]} == {"/answer/note", "/answer/candidates"}
    assert unknown["reason"] == "invalid_input"
    assert [error["pointer"] for error in unknown["errors"]] == ["/answer/candidates/1", "/answer/candidates/2"]
    assert [request["run_id"] for request in still_open] == [run_id]
    first, again, other, after = _answers(
        url,
        scope,
        [(run_id, {"candidates": [digest]}), (run_id, {"candidates": [digest]}), (run_id, {"candidates": []})],
    )
    assert first["answer"] == {"candidates": [digest]} and first["answered_by"] == "key:trainer"
    assert again == first
    assert other["reason"] == "conflict"
    assert after == []
    for route in ("brief", "rows"):
        response = client.get(f"{playbook}/runs/{run_id}/build/{route}")
        assert response.status_code == 409 and response.json()["kind"] == "build_ended"


def test_an_empty_answer_ends_the_build_without_a_version(
    prediction_server: PredictionServer, client: httpx.Client, playbook: str
) -> None:
    if prediction_server.database_url is None:
        pytest.skip("the answer is written by another process, which a SQLite ledger does not let in")
    scope = PlaybookScope("acme", playbook.rsplit("/", 1)[1])
    run_id = _build(client, _function(client, playbook)).json()["run_id"]
    _answers(prediction_server.database_url, scope, [(run_id, {"candidates": []})])
    run = _ended(client, playbook, run_id)
    assert run["status"] == "rejected"
    assert (run["rejection"]["kind"], run["rejection"]["because"]) == ("not_built", "no_candidates")


def test_a_function_retired_during_its_build_ends_it_retired(
    prediction_server: PredictionServer, client: httpx.Client, playbook: str
) -> None:
    if prediction_server.database_url is None:
        pytest.skip("the answer is written by another process, which a SQLite ledger does not let in")
    scope = PlaybookScope("acme", playbook.rsplit("/", 1)[1])
    function = _function(client, playbook)
    run_id = _build(client, function).json()["run_id"]
    digest = _upload(client, playbook, run_id, LINEAR).json()["candidate"]
    assert client.post(f"{function}/retire").status_code == 200
    _answers(prediction_server.database_url, scope, [(run_id, {"candidates": [digest]})])
    run = _ended(client, playbook, run_id)
    assert (run["status"], run["rejection"]["reason"], run["rejection"]["kind"]) == ("rejected", "conflict", "retired")
