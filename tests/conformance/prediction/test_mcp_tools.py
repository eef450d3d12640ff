"""A build's request through the MCP tools `list_interactions` and `answer_interaction` (settled point 16), with
the SDK's own client: listed as the route lists it, refused under `/answer` as the route refuses, and answered."""

from __future__ import annotations

import httpx

from tests.conformance.prediction.conftest import PredictionServer
from tests.conformance.prediction.test_builds import _build, _function
from tests.conformance.prediction.test_candidates import _upload
from tests.conformance.prediction.test_full_cycle import LINEAR, _ended, listed
from tests.e2e.mcp_client import mcp_client, output_of, problem_of


async def test_the_inbox_tools_list_and_answer_a_build(
    prediction_server: PredictionServer, client: httpx.Client, playbook: str
) -> None:
    run_id = _build(client, _function(client, playbook)).json()["run_id"]
    digest = _upload(client, playbook, run_id, LINEAR).json()["candidate"]
    (request,) = listed(client, playbook)
    async with mcp_client(
        prediction_server.server.base_url, f"/orgs/acme/playbooks/{playbook.rsplit('/', 1)[1]}/mcp"
    ) as mcp:
        shown = output_of(await mcp.call_tool("list_interactions", {"type": "prediction"}))
        assert shown["interactions"] == [request]
        refused = problem_of(await mcp.call_tool("answer_interaction", {"run_id": run_id, "answer": {}}))
        assert (refused["status"], refused["reason"]) == (422, "invalid_input")
        answer = {"candidates": [digest]}
        fact = output_of(await mcp.call_tool("answer_interaction", {"run_id": run_id, "answer": answer}))
        assert fact["run_id"] == run_id and fact["answer"] == answer
    run = _ended(client, playbook, run_id)
    assert run["status"] == "succeeded" and run["output"]["state"] == "active", run
