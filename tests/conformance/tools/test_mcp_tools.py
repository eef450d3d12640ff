"""The tool operations as MCP tools (spec mcp.md §3, §4.1, §4.2, §6, §7), through the SDK's own client against
the real server: their annotations, the org form of `search` on the org endpoint, and results as HTTP answers."""

from __future__ import annotations

import httpx
import pytest

from auto_runtime.tools.scrubbing import encodings_of
from tests.client_tls import tls_context
from tests.conformance.helpers import new_playbook
from tests.conformance.tools.conftest import NOTES_SECRET, ORG, ToolsServer
from tests.e2e.mcp_client import MODES, mcp_client, output_of, problem_of

HINTS = {
    "search": (True, False, True, True),
    "introspect": (True, False, True, True),
    "dry_run": (True, False, True, True),
    "execute": (False, True, False, True),
}


def _playbook_id(tools_server: ToolsServer) -> str:
    with tools_server.client() as client:
        return new_playbook(client).rsplit("/", 1)[1]


@pytest.mark.parametrize("mode", MODES)
async def test_the_tools_carry_the_annotations_of_the_spec(tools_server: ToolsServer, mode: str) -> None:
    playbook = _playbook_id(tools_server)
    base = tools_server.server.base_url
    for path in (f"/orgs/{ORG}/playbooks/{playbook}/mcp", f"/orgs/{ORG}/mcp", "/mcp"):
        async with mcp_client(base, path, mode=mode) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert "validate" not in tools
        names = ("search",) if path == f"/orgs/{ORG}/mcp" else tuple(HINTS)
        for name in names:
            hints = tools[name].annotations
            assert hints is not None
            shown = (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint, hints.open_world_hint)
            assert shown == HINTS[name], name
        search = tools["search"].input_schema["properties"]
        if path == f"/orgs/{ORG}/playbooks/{playbook}/mcp":
            assert "playbook" not in search
        else:
            assert "playbook" in search and "playbook" not in tools["search"].input_schema.get("required", [])
    async with mcp_client(base, f"/orgs/{ORG}/playbooks/{playbook}/mcp", mode=mode) as client:
        execute = next(tool for tool in (await client.list_tools()).tools if tool.name == "execute")
    assert set(execute.input_schema["properties"]) == {"server", "tool", "arguments"}
    assert execute.input_schema["required"] == ["server", "tool"]


@pytest.mark.parametrize("mode", MODES)
async def test_search_introspect_dry_run_and_execute_answer_as_over_http(tools_server: ToolsServer, mode: str) -> None:
    playbook = _playbook_id(tools_server)
    base = tools_server.server.base_url
    async with mcp_client(base, f"/orgs/{ORG}/mcp", mode=mode) as client:
        org_search = output_of(await client.call_tool("search", {"playbook": playbook, "server": "helpdesk"}))
    assert org_search["servers"][0]["playbooks"] == ["*"] and org_search["scopes"] == ["helpdesk"]
    async with mcp_client(base, f"/orgs/{ORG}/playbooks/{playbook}/mcp", mode=mode) as client:
        found = output_of(await client.call_tool("search", {"terms": "customer", "server": "helpdesk"}))
        introspected = output_of(await client.call_tool("introspect", {"server": "helpdesk", "tool": "get_customer"}))
        dry = output_of(await client.call_tool("dry_run", {"server": "narrow", "tool": "broken"}))
        called = output_of(
            await client.call_tool("execute", {"server": "helpdesk", "tool": "get_customer", "arguments": {"id": "m"}})
        )
        tool_error = output_of(await client.call_tool("execute", {"server": "helpdesk", "tool": "broken"}))
        refused = problem_of(await client.call_tool("execute", {"server": "narrow", "tool": "broken"}))
        too_big = problem_of(
            await client.call_tool(
                "execute", {"server": "notes", "tool": "echo", "arguments": {"text": "x" * (16 * 1024)}}
            )
        )
        secret = output_of(
            await client.call_tool("execute", {"server": "notes", "tool": "echo", "arguments": {"text": NOTES_SECRET}})
        )
    assert found["tools"][0] == {
        "server": "helpdesk",
        "tool": "get_customer",
        "summary": "Reads a customer by id.",
        "read_only": True,
    }
    async with httpx.AsyncClient(base_url=base, verify=tls_context()) as http:
        route = f"/v1/orgs/{ORG}/playbooks/{playbook}/tool-servers/helpdesk/tools/get_customer"
        over_http = (await http.get(route)).json()
    assert introspected == over_http
    assert dry["would_run"] is False and dry["allowed"] is False
    assert called["outcome"] == "result" and called["answer"] == {"id": "m", "plan": "pro"}
    assert tool_error["outcome"] == "tool_error"
    assert refused["reason"] == "unavailable" and refused["kind"] == "tool_not_offered"
    assert refused["because"] == "tool_not_allowed"
    assert too_big["reason"] == "invalid_input" and [e["pointer"] for e in too_big["errors"]] == ["/arguments"]
    assert secret["text"] == "[redacted]"
    assert not any(form in str(secret) for form in encodings_of(NOTES_SECRET))


@pytest.mark.parametrize("mode", MODES)
async def test_on_mcp_the_playbook_tools_take_the_playbook_argument(tools_server: ToolsServer, mode: str) -> None:
    playbook = _playbook_id(tools_server)
    async with mcp_client(tools_server.server.base_url, "/mcp", mode=mode) as client:
        missing = problem_of(await client.call_tool("introspect", {"server": "helpdesk", "tool": "get_customer"}))
        absent = problem_of(
            await client.call_tool("dry_run", {"playbook": "no-such-playbook", "server": "helpdesk", "tool": "x"})
        )
        local = problem_of(
            await client.call_tool("introspect", {"playbook": playbook, "server": "helpdesk", "tool": "get_customer"})
        )
    assert [e["pointer"] for e in missing["errors"]] == ["/playbook"]
    assert absent["reason"] == "not_found"
    assert local["reason"] == "not_found"  # /mcp acts in the caller's own org, `local`, which has no such playbook
