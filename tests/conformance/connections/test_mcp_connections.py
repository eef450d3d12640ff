"""The connection operations as MCP tools (spec mcp.md §4.1, §4.4), through the SDK's own client against the
real server: the three org tools with their annotations, the four operations served over HTTP alone, and
`add_connection`, `list_connections` and `remove_connection` answering as over HTTP."""

from __future__ import annotations

import pytest

from tests.conformance.connections.conftest import ORG, ConnectionsServer, fresh_name
from tests.e2e.mcp_client import MODES, mcp_client, output_of, problem_of

HINTS = {
    "add_connection": (False, False, False, False),
    "list_connections": (True, False, True, False),
    "remove_connection": (False, True, True, False),
}
HTTP_ALONE = {"get_connection", "read_link", "approve", "give_credential"}


@pytest.mark.parametrize("mode", MODES)
async def test_the_org_tools_carry_the_annotations_of_the_spec(
    connections_server: ConnectionsServer, mode: str
) -> None:
    base = connections_server.server.base_url
    for path in (f"/orgs/{ORG}/mcp", "/mcp"):
        async with mcp_client(base, path, mode=mode) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert not HTTP_ALONE & set(tools)
        for name, expected in HINTS.items():
            hints = tools[name].annotations
            assert hints is not None
            shown = (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint, hints.open_world_hint)
            assert shown == expected, name
        add = tools["add_connection"].input_schema
        assert set(add["required"]) == {"name", "kind", "entry", "credential"}
        assert tools["remove_connection"].input_schema["required"] == ["id"]


@pytest.mark.parametrize("mode", MODES)
async def test_add_list_and_remove_answer_as_over_http(connections_server: ConnectionsServer, mode: str) -> None:
    base = connections_server.server.base_url
    name = fresh_name()
    arguments = {
        "name": name,
        "kind": "mcp",
        "entry": {"url": connections_server.fakes.open.url},
        "credential": {"kind": "none"},
    }
    async with mcp_client(base, f"/orgs/{ORG}/mcp", mode=mode) as client:
        added = output_of(await client.call_tool("add_connection", arguments))
        assert added["status"] == "pending" and added["connect"]["url"].startswith("https://studio.on.auto/connect?")
        listed = output_of(await client.call_tool("list_connections", {}))
        assert added["id"] in [connection["id"] for connection in listed["connections"]]
        again = problem_of(await client.call_tool("add_connection", arguments))
        assert again["reason"] == "conflict"
        removed = output_of(await client.call_tool("remove_connection", {"id": added["id"]}))
        assert removed["status"] == "removed"
        refused = problem_of(await client.call_tool("add_connection", {**arguments, "credential": {"kind": "x"}}))
        assert refused["reason"] == "invalid_input"
    with connections_server.client() as http:
        shown = http.get(f"/v1/orgs/{ORG}/connections/{added['id']}").json()
    assert shown == removed
