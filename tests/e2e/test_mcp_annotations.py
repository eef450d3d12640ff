"""Every tool's four hints, read by the SDK's client from the real server, against the tables of spec mcp.md §4.1,
§4.2 and §4.3 (settled point 27: `answer_interaction` is destructive)."""

from __future__ import annotations

import pytest

from tests.e2e.mcp_client import MODES, mcp_client
from tests.e2e.server_process import ServerProcess

T, F = True, False
OUTSIDE = True
"""The † of §4.2 on a server in local mode: a person may add connections there (`connections.people_may_add`
is true by default), so `execute` and `run_definition` may change something outside."""

SPEC_HINTS: dict[str, tuple[bool, bool, bool, bool]] = {
    # tool: (readOnlyHint, destructiveHint, idempotentHint, openWorldHint), transcribed from the spec's tables.
    # §4.1 Org tools
    "create_playbook": (F, F, F, F),
    "list_playbooks": (T, F, T, F),
    "update_playbook": (F, F, T, F),
    "retire_playbook": (F, T, T, F),
    "list_models": (T, F, T, T),
    "add_connection": (F, F, F, F),
    "list_connections": (T, F, T, F),
    "remove_connection": (F, T, T, F),
    # §4.1 and §4.2: `search` (the org's on `/mcp` and the org endpoint, the playbook's on a playbook endpoint)
    "search": (T, F, T, T),
    # §4.2 Playbook tools
    "create_definition": (F, F, F, F),
    "list_definitions": (T, F, T, F),
    "get_definition": (T, F, T, F),
    "update_definition": (F, F, T, F),
    "retire_definition": (F, T, T, F),
    "run_definition": (F, OUTSIDE, F, T),
    "get_run": (T, F, T, F),
    "cancel_run": (F, T, T, F),
    "send_run_event": (F, F, F, F),
    "list_interactions": (T, F, T, F),
    "answer_interaction": (F, T, T, F),
    "publish_event": (F, F, F, F),
    "list_runs": (T, F, T, F),
    "list_playbook_events": (T, F, T, F),
    "get_event": (T, F, T, F),
    "introspect": (T, F, T, T),
    "dry_run": (T, F, T, T),
    "execute": (F, OUTSIDE, F, T),
    # §4.3 The guide tool
    "get_guide": (T, F, T, F),
}
ENDPOINTS = ("/mcp", "/orgs/local/mcp", "/orgs/local/playbooks/anything/mcp")


@pytest.mark.parametrize("mode", MODES)
async def test_every_tool_carries_the_four_hints_of_the_spec_table(local_server: ServerProcess, mode: str) -> None:
    listed: set[str] = set()
    for path in ENDPOINTS:
        async with mcp_client(local_server.base_url, path, mode=mode) as client:
            for tool in (await client.list_tools()).tools:
                assert tool.name in SPEC_HINTS, f"{tool.name} ({path}) is in none of the spec's tables"
                hints = tool.annotations
                assert hints is not None, tool.name
                got = (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint, hints.open_world_hint)
                assert got == SPEC_HINTS[tool.name], f"{tool.name} on {path}"
                listed.add(tool.name)
    assert listed == set(SPEC_HINTS), "every tool of the spec's tables is listed on some endpoint"
