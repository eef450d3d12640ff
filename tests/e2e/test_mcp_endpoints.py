"""The MCP endpoints in local mode, through the SDK's own client in both protocol generations (spec mcp.md)."""

from __future__ import annotations

import uuid

import httpx
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from auto_runtime import __version__
from auto_runtime.auth.caller import LOCAL_CALLER
from auto_runtime.guides import RECIPES, load_guides
from auto_runtime.mcp_server.prompts import RecipePrompts
from auto_runtime.mcp_server.toolset import ToolSet
from auto_runtime.operations.runtime_catalog import build_catalog
from tests.e2e.mcp_client import MODES, PROTOCOL_OF_MODE, mcp_client, output_of, problem_of
from tests.e2e.server_process import ServerProcess

GUIDES = load_guides()
TOOLS = ToolSet(build_catalog(GUIDES), outside_effects=True)
PROMPTS = RecipePrompts(RECIPES, GUIDES, [s.name for s in TOOLS.of_kind("playbook")])


def fresh(prefix: str = "mcp") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def listed_names(kind: str) -> list[str]:
    return [s.name for s in TOOLS.for_caller(kind, LOCAL_CALLER)]  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", MODES)
async def test_initialize_names_the_server_and_its_capabilities(local_server: ServerProcess, mode: str) -> None:
    async with mcp_client(local_server.base_url, mode=mode) as client:
        assert client.protocol_version == PROTOCOL_OF_MODE[mode]
        assert client.server_info is not None
        assert client.server_info.name == "auto-runtime"
        assert client.server_info.version == __version__
        capabilities = client.server_capabilities
        assert capabilities.tools is not None and not capabilities.tools.list_changed
        assert capabilities.resources is not None and not capabilities.resources.subscribe
        assert not capabilities.resources.list_changed
        assert capabilities.prompts is not None and not capabilities.prompts.list_changed
        assert capabilities.logging is None and capabilities.completions is None
        instructions = client.instructions or ""
        assert instructions.startswith("A playbook is ")
        assert len(instructions) <= 2000
        assert "get_guide" in instructions
        assert "the org local" in instructions


@pytest.mark.parametrize("mode", MODES)
async def test_each_endpoint_lists_its_tools(local_server: ServerProcess, mode: str) -> None:
    endpoints = {"own": "/mcp", "org": "/orgs/acme/mcp", "playbook": "/orgs/acme/playbooks/anything/mcp"}
    for kind, path in endpoints.items():
        async with mcp_client(local_server.base_url, path, mode=mode) as client:
            tools = (await client.list_tools()).tools
            assert [t.name for t in tools] == listed_names(kind), kind
            assert tools[-1].name == "get_guide"
            for tool in tools:
                assert tool.output_schema is None
                assert tool.annotations is not None
                assert tool.annotations.destructive_hint is not None
                assert tool.annotations.open_world_hint is not None
                properties = tool.input_schema["properties"]
                if kind == "own" and tool.name == "list_runs":
                    assert next(iter(properties)) == "playbook"
                    assert "playbook" in tool.input_schema["required"]
                if kind == "playbook":
                    assert "playbook" not in properties
    assert "get_playbook" not in listed_names("own")
    assert "run_definition" in listed_names("playbook") and "create_playbook" not in listed_names("playbook")


@pytest.mark.parametrize("mode", MODES)
async def test_calls_succeed_and_refusals_carry_the_problem(local_server: ServerProcess, mode: str) -> None:
    playbook = fresh()
    async with mcp_client(local_server.base_url, mode=mode) as client:
        created = output_of(await client.call_tool("create_playbook", {"playbook": playbook, "name": " Desk "}))
        assert created["id"] == playbook and created["name"] == "Desk" and created["created_by"] == "local"

        again = problem_of(await client.call_tool("create_playbook", {"playbook": playbook, "name": "Desk"}))
        assert again["status"] == 409 and again["reason"] == "conflict"
        assert again["type"] == "https://on.auto/problems/conflict"

        listed = output_of(await client.call_tool("list_definitions", {"playbook": playbook, "type": "workflow"}))
        assert listed == {"definitions": []}

        missing = problem_of(await client.call_tool("list_runs", {}))
        assert missing["reason"] == "invalid_input" and missing["status"] == 422
        assert [e["pointer"] for e in missing["errors"]] == ["/playbook"]
        malformed = problem_of(await client.call_tool("list_runs", {"playbook": "Not An Id", "limit": 0}))
        assert [e["pointer"] for e in malformed["errors"]] == ["/playbook"]

        absent = problem_of(await client.call_tool("list_runs", {"playbook": fresh("absent")}))
        assert absent["reason"] == "not_found" and absent["status"] == 404

        limit = problem_of(await client.call_tool("list_runs", {"playbook": playbook, "limit": 0}))
        assert [e["pointer"] for e in limit["errors"]] == ["/limit"]

        org_field = problem_of(await client.call_tool("list_playbooks", {"org": "local"}))
        assert org_field["reason"] == "invalid_input"

        source = problem_of(
            await client.call_tool(
                "create_definition", {"playbook": playbook, "type": "reasoning", "name": "triage", "source": "x"}
            )
        )
        assert [e["pointer"] for e in source["errors"]] == ["/source"]

        output_of(await client.call_tool("retire_playbook", {"playbook": playbook}))
        retired = problem_of(
            await client.call_tool("run_definition", {"playbook": playbook, "type": "workflow", "name": "daily"})
        )
        assert retired["reason"] == "conflict" and retired["kind"] == "retired"

    async with mcp_client(local_server.base_url, f"/orgs/local/playbooks/{playbook}/mcp", mode=mode) as client:
        runs = output_of(await client.call_tool("list_runs", {}))
        assert runs["runs"] == [] and runs["has_more"] is False
        with_playbook = problem_of(await client.call_tool("list_runs", {"playbook": playbook}))
        assert with_playbook["reason"] == "invalid_input"


@pytest.mark.parametrize("mode", MODES)
async def test_a_tool_the_connection_does_not_list_is_unknown(local_server: ServerProcess, mode: str) -> None:
    async with mcp_client(local_server.base_url, "/orgs/acme/mcp", mode=mode) as client:
        for name in ("get_playbook", "list_runs", "no_such_tool"):
            with pytest.raises(MCPError) as refused:
                await client.call_tool(name, {})
            assert refused.value.code == types.INVALID_PARAMS


@pytest.mark.parametrize("mode", MODES)
async def test_guides_are_resources_with_the_http_text(local_server: ServerProcess, mode: str) -> None:
    async with mcp_client(local_server.base_url, mode=mode) as client:
        resources = (await client.list_resources()).resources
        assert [r.name for r in resources] == list(GUIDES)
        with local_server.client() as http:
            for resource in resources:
                assert str(resource.uri) == f"guide://{resource.name}"
                assert resource.mime_type == "text/markdown"
                assert resource.annotations is not None and resource.annotations.audience == ["assistant"]
                assert resource.title and resource.description
                contents = (await client.read_resource(str(resource.uri))).contents
                assert len(contents) == 1
                content = contents[0]
                assert isinstance(content, types.TextResourceContents)
                assert content.mime_type == "text/markdown" and str(content.uri) == str(resource.uri)
                served = http.get(f"/v1/guides/{resource.name}")
                assert served.status_code == 200
                assert content.text == served.text
                tool = await client.call_tool("get_guide", {"guide": resource.name})
                assert not tool.is_error and tool.structured_content is None
                assert [c.text for c in tool.content if isinstance(c, types.TextContent)] == [served.text]
        with pytest.raises(MCPError) as unknown:
            await client.read_resource("guide://no-such-guide")
        assert unknown.value.code == types.INVALID_PARAMS
        bad_name = problem_of(await client.call_tool("get_guide", {"guide": "no-such-guide"}))
        assert [e["pointer"] for e in bad_name["errors"]] == ["/guide"]


@pytest.mark.parametrize("mode", MODES)
async def test_prompts_follow_the_tools_listed(local_server: ServerProcess, mode: str) -> None:
    expected = {
        "/mcp": [o.recipe.name for o in PROMPTS.offered(listed_names("own"))],
        "/orgs/local/mcp": [],
        "/orgs/local/playbooks/anything/mcp": [o.recipe.name for o in PROMPTS.offered(listed_names("playbook"))],
    }
    assert "first-playbook" not in expected["/orgs/local/playbooks/anything/mcp"]
    for path, names in expected.items():
        async with mcp_client(local_server.base_url, path, mode=mode) as client:
            prompts = (await client.list_prompts()).prompts
            assert [p.name for p in prompts] == names, path
            for prompt in prompts:
                recipe = RECIPES[prompt.name]
                assert prompt.title == recipe.title
                arguments = {a.name: f"the {a.name}" for a in recipe.arguments}
                got = await client.get_prompt(prompt.name, arguments)
                assert [m.role for m in got.messages] == ["user", "user"]
                first, second = (m.content for m in got.messages)
                assert isinstance(first, types.TextContent) and GUIDES[prompt.name].text in first.text
                assert isinstance(second, types.EmbeddedResource)
                assert isinstance(second.resource, types.TextResourceContents)
                assert str(second.resource.uri) == f"guide://{recipe.format_guide}"
                assert second.resource.text == GUIDES[recipe.format_guide].text
                if any(a.required for a in recipe.arguments):
                    with pytest.raises(MCPError) as missing:
                        await client.get_prompt(prompt.name, {})
                    assert missing.value.code == types.INVALID_PARAMS
            with pytest.raises(MCPError) as unknown:
                await client.get_prompt("no-such-prompt", {})
            assert unknown.value.code == types.INVALID_PARAMS


MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def _jsonrpc_refusal(response: httpx.Response, status: int, code: int) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["id"] is None and body["error"]["code"] == code
    assert response.headers["x-request-id"]


def test_transport_refusals(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        for method in ("GET", "DELETE", "PUT"):
            response = client.request(method, "/mcp", headers=MCP_HEADERS)
            assert response.status_code == 405
            assert response.headers["allow"] == "POST"
            assert response.headers["content-type"] == "application/problem+json"
            assert response.json()["reason"] == "method_not_allowed"
        _jsonrpc_refusal(client.post("/mcp", headers=MCP_HEADERS, content=b"{not json"), 400, -32700)
        _jsonrpc_refusal(client.post("/mcp", headers=MCP_HEADERS, json=[LIST, LIST]), 400, -32600)
        _jsonrpc_refusal(
            client.post("/mcp", headers={**MCP_HEADERS, "Accept": "application/json"}, json=LIST), 406, -32600
        )
        _jsonrpc_refusal(
            client.post("/mcp", headers={**MCP_HEADERS, "Content-Type": "text/plain"}, json=LIST), 415, -32600
        )
        large = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_":"' + b"x" * 1_048_576 + b'"}}'
        _jsonrpc_refusal(client.post("/mcp", headers=MCP_HEADERS, content=large), 413, -32600)
        served = client.post("/mcp", headers=MCP_HEADERS, json=LIST)
        assert served.status_code == 200
        assert served.headers["x-request-id"]
        assert "mcp-session-id" not in served.headers


def test_local_mode_refuses_other_hosts_and_origins(local_server: ServerProcess) -> None:
    with local_server.client(Host="evil.example") as client:
        response = client.post("/mcp", headers=MCP_HEADERS, json=LIST)
        assert response.status_code == 403 and response.json()["reason"] == "origin_not_allowed"
    with local_server.client(Origin="https://evil.example") as client:
        response = client.post("/mcp", headers=MCP_HEADERS, json=LIST)
        assert response.status_code == 403 and response.json()["reason"] == "origin_not_allowed"
    with local_server.client(Origin="https://studio.on.auto") as client:
        preflight = client.options("/mcp", headers={"Access-Control-Request-Method": "POST"})
        assert preflight.status_code == 204
        assert preflight.headers["access-control-allow-origin"] == "https://studio.on.auto"


def test_protected_resource_metadata_is_not_served_without_sign_in(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        assert client.get("/.well-known/oauth-protected-resource/mcp").status_code == 404
