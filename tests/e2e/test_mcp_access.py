"""Access to the MCP endpoints with API keys: the same chain as HTTP, and a tool list that follows the key."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from auto_runtime.guides import RECIPES
from tests.e2e.mcp_client import MODES, mcp_client, output_of, problem_of, sse_or_json
from tests.e2e.server_process import ServerProcess, start_server
from tests.e2e.test_access import issue_key

EVERY_PERMISSION = ("org:read", "org:write", "playbook:read", "playbook:write")
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
PUBLIC_URL = "https://runtime.example"


@dataclass
class Keys:
    server: ServerProcess
    admin: str
    reader: str
    limited: str
    other_org: str
    writer: str

    def post(self, path: str, secret: str | None, **headers: str) -> httpx.Response:
        sent = {**MCP_HEADERS, **headers}
        if secret is not None:
            sent["Authorization"] = f"Bearer {secret}"
        with self.server.client() as client:
            return client.post(path, headers=sent, json=LIST)


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Keys]:
    folder = Path(tmp_path_factory.mktemp("mcp-keys"))
    admin = issue_key(folder, "--org", "acme", *[x for p in EVERY_PERMISSION for x in ("--permission", p)])
    reader = issue_key(folder, "--org", "acme", "--permission", "playbook:read")
    limited = issue_key(
        folder, "--org", "acme", *[x for p in EVERY_PERMISSION for x in ("--permission", p)], "--playbook", "sales"
    )
    other = issue_key(folder, "--org", "globex", *[x for p in EVERY_PERMISSION for x in ("--permission", p)])
    writer = issue_key(folder, "--org", "acme", "--permission", "playbook:read", "--permission", "playbook:write")
    api_keys = json.dumps([k.entry for k in (admin, reader, limited, other, writer)], separators=(",", ":"))
    server = start_server(folder, {"API_KEYS": api_keys, "PUBLIC_URL": PUBLIC_URL})
    yield Keys(server, admin.secret, reader.secret, limited.secret, other.secret, writer.secret)
    assert server.stop() == 0, server.log()


def _problem(response: httpx.Response, status: int, reason: str) -> dict[str, object]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.headers["x-request-id"]
    problem: dict[str, object] = response.json()
    assert problem["reason"] == reason
    return problem


def test_credentials_are_checked_before_any_mcp_processing(keys: Keys) -> None:
    metadata = f'resource_metadata="{PUBLIC_URL}/.well-known/oauth-protected-resource/orgs/acme/mcp"'
    missing = keys.post("/orgs/acme/mcp", None)
    _problem(missing, 401, "unauthenticated")
    assert missing.headers["www-authenticate"] == f"Bearer {metadata}"
    invalid = keys.post("/orgs/acme/mcp", "abk_00000000_" + "A" * 43)
    _problem(invalid, 401, "unauthenticated")
    assert invalid.headers["www-authenticate"] == f'Bearer error="invalid_token", {metadata}'
    _problem(keys.post("/mcp", None, Authorization=f"Basic {keys.admin}"), 401, "unauthenticated")
    with keys.server.client() as client:
        bearer = ("Authorization", f"Bearer {keys.admin}")
        twice = client.post("/mcp", headers=[*MCP_HEADERS.items(), bearer, bearer], json=LIST)
    _problem(twice, 400, "bad_request")


def test_scoped_endpoints_refuse_another_org_or_playbook(keys: Keys) -> None:
    other = keys.post("/orgs/acme/mcp", keys.other_org)
    _problem(other, 403, "forbidden")
    assert other.headers["www-authenticate"] == 'Bearer error="insufficient_scope"'
    playbook = keys.post("/orgs/acme/playbooks/support/mcp", keys.limited)
    _problem(playbook, 403, "forbidden")
    assert playbook.headers["www-authenticate"] == 'Bearer error="insufficient_scope"'
    assert keys.post("/orgs/acme/playbooks/sales/mcp", keys.limited).status_code == 200
    assert keys.post("/orgs/globex/mcp", keys.other_org).status_code == 200


def test_protected_resource_metadata_is_served_without_a_credential(keys: Keys) -> None:
    with keys.server.client() as client:
        for path in ("/mcp", "/orgs/acme/mcp", "/orgs/acme/playbooks/sales/mcp"):
            response = client.get(f"/.well-known/oauth-protected-resource{path}")
            assert response.status_code == 200, response.text
            document = response.json()
            assert document["resource"] == PUBLIC_URL + path
            assert isinstance(document["authorization_servers"], list) and document["authorization_servers"]
        root = client.get("/.well-known/oauth-protected-resource")
        assert root.status_code == 200 and root.json()["resource"] == PUBLIC_URL


@pytest.mark.parametrize("mode", MODES)
async def test_the_tool_list_follows_the_key(keys: Keys, mode: str) -> None:
    base = keys.server.base_url
    async with mcp_client(base, mode=mode, secret=keys.reader) as client:
        tools = (await client.list_tools()).tools
        assert tools
        for tool in tools:
            assert tool.annotations is not None and tool.annotations.read_only_hint is True, tool.name
        names = {t.name for t in tools}
        assert "list_runs" in names and "create_playbook" not in names and "run_definition" not in names
        with pytest.raises(MCPError) as refused:
            await client.call_tool("create_playbook", {"playbook": "nope-nope", "name": "No"})
        assert refused.value.code == types.INVALID_PARAMS
        assert (await client.list_prompts()).prompts == []
        assert len((await client.list_resources()).resources) == 11
        assert "create_playbook" not in (client.instructions or "")
    async with mcp_client(base, "/orgs/acme/mcp", mode=mode, secret=keys.reader) as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["list_playbooks", "search", "get_guide"]
    async with mcp_client(base, mode=mode, secret=keys.admin) as client:
        admin_names = {t.name for t in (await client.list_tools()).tools}
        assert {"create_playbook", "run_definition", "list_runs", "get_guide"} <= admin_names


@pytest.mark.parametrize("mode", MODES)
async def test_a_playbook_endpoint_offers_every_recipe_but_the_first_playbook_to_a_key_that_writes(
    keys: Keys, mode: str
) -> None:
    """Spec mcp.md §9, settled point 26: `give-tools` is offered although its text names `list_models`, an org
    tool no playbook endpoint lists; a key that may not write definitions is offered none, anywhere."""
    base = keys.server.base_url
    endpoint = "/orgs/acme/playbooks/sales/mcp"
    for secret in (keys.writer, keys.admin):
        async with mcp_client(base, endpoint, mode=mode, secret=secret) as client:
            assert "list_models" not in {t.name for t in (await client.list_tools()).tools}
            prompts = (await client.list_prompts()).prompts
            assert [p.name for p in prompts] == ["remember", "give-tools", "schedule"]
            got = await client.get_prompt("give-tools", {})
            assert [m.role for m in got.messages] == ["user", "user"]
            with pytest.raises(MCPError) as refused:
                await client.get_prompt("first-playbook", {})
            assert refused.value.code == types.INVALID_PARAMS
    async with mcp_client(base, mode=mode, secret=keys.writer) as client:
        assert [p.name for p in (await client.list_prompts()).prompts] == ["remember", "give-tools", "schedule"]
    async with mcp_client(base, mode=mode, secret=keys.admin) as client:
        assert [p.name for p in (await client.list_prompts()).prompts] == list(RECIPES)
    for path in (endpoint, "/mcp", "/orgs/acme/mcp"):
        async with mcp_client(base, path, mode=mode, secret=keys.reader) as client:
            assert (await client.list_prompts()).prompts == [], path
            with pytest.raises(MCPError) as refused:
                await client.get_prompt("remember", {"what": "the last refunds"})
            assert refused.value.code == types.INVALID_PARAMS
    async with mcp_client(base, "/orgs/acme/mcp", mode=mode, secret=keys.admin) as client:
        assert (await client.list_prompts()).prompts == []


@pytest.mark.parametrize("mode", MODES)
async def test_calls_act_in_the_keys_org_and_playbooks(keys: Keys, mode: str) -> None:
    base = keys.server.base_url
    playbook = f"sales-{mode}"[:20]
    async with mcp_client(base, mode=mode, secret=keys.admin) as client:
        created = output_of(await client.call_tool("create_playbook", {"playbook": playbook, "name": "Sales"}))
        assert created["created_by"].startswith("key_")
    with keys.server.client(Authorization=f"Bearer {keys.admin}") as http:
        assert http.get(f"/v1/orgs/acme/playbooks/{playbook}").json()["name"] == "Sales"
    async with mcp_client(base, mode=mode, secret=keys.limited) as client:
        refused = problem_of(await client.call_tool("list_runs", {"playbook": playbook}))
        assert refused["reason"] == "forbidden" and refused["status"] == 403
        missing = problem_of(await client.call_tool("list_runs", {"playbook": "sales"}))
        assert missing["reason"] == "not_found"


async def test_running_a_definition_is_destructive_only_where_tools_may_change_things_outside(
    keys: Keys, tmp_path: Path
) -> None:
    """Sign-in on: people may add connections, so running is marked destructive; API keys alone: it is not."""
    async with mcp_client(keys.server.base_url, "/orgs/acme/playbooks/sales/mcp", secret=keys.admin) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        annotations = tools["run_definition"].annotations
        assert annotations is not None and annotations.destructive_hint is True
    admin = issue_key(tmp_path, "--org", "acme", *[x for p in EVERY_PERMISSION for x in ("--permission", p)])
    server = start_server(tmp_path, {"API_KEYS": json.dumps([admin.entry])})
    try:
        async with mcp_client(server.base_url, "/orgs/acme/playbooks/sales/mcp", secret=admin.secret) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            annotations = tools["run_definition"].annotations
            assert annotations is not None and annotations.destructive_hint is False
            assert annotations.open_world_hint is True and annotations.read_only_hint is False
    finally:
        assert server.stop() == 0, server.log()


def test_a_request_state_the_server_did_not_seal_is_refused(keys: Keys) -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "list_playbooks", "arguments": {}, "requestState": "v1.forged"},
    }
    with keys.server.client() as client:
        response = client.post(
            "/orgs/acme/mcp",
            headers={**MCP_HEADERS, "Authorization": f"Bearer {keys.admin}", "MCP-Protocol-Version": "2025-11-25"},
            json=call,
        )
    message = sse_or_json(response)
    assert message["error"]["code"] == -32602
    assert message["error"]["message"] == "Invalid or expired requestState"
    assert message["error"]["data"] == {"reason": "invalid_request_state"}
