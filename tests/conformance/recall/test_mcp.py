"""Recall functions over MCP, through the SDK's own client against the real server: a save refused with the same
problem as over HTTP, the standing in `get_definition`, and a run answered from the view."""

from __future__ import annotations

import httpx
import pytest

from tests.conformance.helpers import fresh_id
from tests.conformance.recall.documents import caught_up, counting, publish, recall
from tests.e2e.mcp_client import MODES, mcp_client, output_of, problem_of
from tests.e2e.server_process import ServerProcess


@pytest.mark.parametrize("mode", MODES)
async def test_save_standing_and_run_over_mcp(
    local_server: ServerProcess, client: httpx.Client, playbook: str, mode: str
) -> None:
    path = playbook.removeprefix("/v1") + "/mcp"
    name = fresh_id("tally")
    kind = fresh_id("com.acme.tally")
    async with mcp_client(local_server.base_url, path, mode=mode) as mcp:
        refused = problem_of(
            await mcp.call_tool(
                "create_definition",
                {
                    "type": "recall",
                    "name": fresh_id("bad"),
                    "source": recall("", "def fold(view, event):\n    return view\n"),
                },
            )
        )
        assert refused["reason"] == "invalid_input"
        assert refused["errors"] == [
            {"detail": "Line 1: The front matter names the events the view folds: source.events", "pointer": "/source"}
        ]
        created = output_of(
            await mcp.call_tool("create_definition", {"type": "recall", "name": name, "source": counting(kind)})
        )
        assert created["version"] == 1
        publish(client, playbook, kind, {"n": 1})
        caught_up(client, playbook, name, 1)
        shown = output_of(await mcp.call_tool("get_definition", {"type": "recall", "name": name}))
        assert shown["standing"]["state"] == "live"
        assert shown["standing"]["folded"] == 1
        ran = output_of(await mcp.call_tool("run_definition", {"type": "recall", "name": name}))
        assert ran["status"] == "succeeded"
        assert ran["output"]["count"] == 1
