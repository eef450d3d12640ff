"""`list_interactions` and `answer_interaction` as MCP tools from the catalog, through the SDK's own client."""

from __future__ import annotations

import uuid

import httpx

from tests.conformance.helpers import new_playbook
from tests.conformance.interactions.documents import QUESTION, ask, defined, ended
from tests.e2e.mcp_client import mcp_client, output_of, problem_of
from tests.e2e.server_process import ServerProcess


async def test_the_inbox_tools_list_and_answer_a_request(server: ServerProcess, client: httpx.Client) -> None:
    playbook_url = new_playbook(client)
    playbook = playbook_url.rsplit("/", 1)[1]
    defined(client, playbook_url, "deploy", QUESTION)
    run_id = str(uuid.uuid4())
    assert ask(client, playbook_url, "deploy", {"lead": "ana", "service": "billing"}, run_id).status_code == 200
    async with mcp_client(server.base_url, f"/orgs/acme/playbooks/{playbook}/mcp") as mcp:
        listed = output_of(await mcp.call_tool("list_interactions", {"to": "ana"}))
        assert [item["run_id"] for item in listed["interactions"]] == [run_id]
        assert listed["interactions"][0]["standing"] == "in_inbox"
        refused = problem_of(await mcp.call_tool("answer_interaction", {"run_id": run_id, "answer": {}}))
        assert refused["reason"] == "invalid_input" and refused["status"] == 422
        answered = output_of(
            await mcp.call_tool("answer_interaction", {"run_id": run_id, "answer": {"decision": "go"}})
        )
        assert answered["run_id"] == run_id and answered["answer"] == {"decision": "go"}
    assert ended(client, playbook_url, run_id)["output"] == {"decision": "go"}
