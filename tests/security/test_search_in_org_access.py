"""Who may search the org's tool servers (`search_in_org`, `GET /v1/orgs/{org}/tool-servers/search`) with a key
limited to some playbooks (issue 37, item 11), by the seeds' access table: the route needs `org:read` or
`playbook:read`, and a key limited to some playbooks must name one of its playbooks in `playbook`, then sees in
`playbooks` only those. Over HTTP and over MCP (`/mcp` and the org endpoint), on both ledgers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conformance.helpers import problem
from tests.e2e.server_process import ServerProcess, start_server
from tests.e2e.test_access import issue_key
from tests.fakes.gateway_process import start_mcp_tool_server
from tests.postgres_support import fresh_database, server_on

ORG = "acme"
OWN = "own-desk"
OTHER = "other-desk"
SEARCH = f"/v1/orgs/{ORG}/tool-servers/search"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
LIMITED_KEYS = {
    "playbook:read": ("--permission", "playbook:read"),
    "playbook:read and playbook:write": ("--permission", "playbook:read", "--permission", "playbook:write"),
    "org:read": ("--permission", "org:read"),
    "playbook:write": ("--permission", "playbook:write"),
}
"""Keys limited to the playbook `OWN`, by the permissions they hold."""


@dataclass
class Keyed:
    server: ServerProcess
    secrets: dict[str, str]

    def client(self, key: str) -> httpx.Client:
        return self.server.client(Authorization=f"Bearer {self.secrets[key]}")


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def keyed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Keyed]:
    folder = Path(tmp_path_factory.mktemp(f"search-in-org-{request.param}"))
    with ExitStack() as stack:
        fake = start_mcp_tool_server(folder)
        stack.callback(fake.stop)
        every = [part for p in ("org:read", "org:write", "playbook:read") for part in ("--permission", p)]
        issued = {"every": issue_key(folder, "--org", ORG, *every)}
        for name, permissions in LIMITED_KEYS.items():
            issued[name] = issue_key(folder, "--org", ORG, *permissions, "--playbook", OWN)
        settings = {
            "API_KEYS": json.dumps([key.entry for key in issued.values()]),
            "TOOL_SERVERS": json.dumps(
                {
                    "helpdesk": {"url": fake.url, "org": ORG},
                    "own-tools": {"url": fake.url, "org": ORG, "playbooks": [OWN]},
                    "other-tools": {"url": fake.url, "org": ORG, "playbooks": [OTHER]},
                }
            ),
        }
        if request.param == "postgres":
            settings.update(server_on(stack.enter_context(fresh_database("search_in_org"))))
        server = start_server(folder, settings)
        keyed = Keyed(server, {name: key.secret for name, key in issued.items()})
        with keyed.client("every") as client:
            for playbook in (OWN, OTHER):
                created = client.post(f"/v1/orgs/{ORG}/playbooks", json={"playbook": playbook, "name": "Desk"})
                assert created.status_code == 201, created.text
        yield keyed
        assert server.stop() == 0, server.log()


def mcp_search(client: httpx.Client, path: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The `search` tool's result over MCP at `path`: its structured content, or its refusal (`isError`)."""
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search", "arguments": arguments}}
    response = client.post(path, headers=MCP_HEADERS, json=call)
    assert response.status_code == 200, response.text
    data = [line[len("data: ") :] for line in response.text.splitlines() if line.startswith("data: ")]
    message: dict[str, Any] = json.loads(data[-1])
    result: dict[str, Any] = message["result"]
    return result


def shown(servers: list[dict[str, Any]]) -> dict[str, list[str]]:
    return {server["name"]: server["playbooks"] for server in servers}


@pytest.mark.parametrize("key", ["playbook:read", "playbook:read and playbook:write", "org:read"])
def test_a_key_limited_to_a_playbook_searches_that_playbooks_servers(keyed: Keyed, key: str) -> None:
    with keyed.client(key) as client:
        response = client.get(SEARCH, params={"playbook": OWN})
        assert response.status_code == 200, response.text
        assert shown(response.json()["servers"]) == {"helpdesk": [OWN], "own-tools": [OWN]}
        for path in ("/mcp", f"/orgs/{ORG}/mcp"):
            result = mcp_search(client, path, {"playbook": OWN})
            assert result.get("isError") is not True, result
            assert shown(result["structuredContent"]["servers"]) == {"helpdesk": [OWN], "own-tools": [OWN]}


@pytest.mark.parametrize("key", ["playbook:read", "org:read"])
def test_a_key_limited_to_a_playbook_is_refused_another_playbook_and_no_playbook(keyed: Keyed, key: str) -> None:
    with keyed.client(key) as client:
        other = problem(client.get(SEARCH, params={"playbook": OTHER}), 403, "forbidden")
        assert other["detail"] == f"This key may not access the playbook {OTHER}."
        without = problem(client.get(SEARCH), 403, "forbidden")
        assert without["detail"] == (
            "This key may access only some playbooks of the org: name one of its playbooks in playbook."
        )
        refused = mcp_search(client, "/mcp", {"playbook": OTHER})
        assert refused["isError"] is True
        assert json.loads(refused["content"][1]["text"])["reason"] == "forbidden"


def test_a_key_without_a_read_permission_is_refused_as_the_table_says(keyed: Keyed) -> None:
    """`search` needs `org:read` or `playbook:read`; `playbook:write` alone calls tools but does not read them,
    so the route refuses it and no MCP endpoint lists the tool."""
    with keyed.client("playbook:write") as client:
        body = problem(client.get(SEARCH, params={"playbook": OWN}), 403, "forbidden")
        assert body["detail"] == "search needs the permission org:read or playbook:read, which this key does not have."
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search", "arguments": {}}}
        response = client.post("/mcp", headers=MCP_HEADERS, json=call)
    assert "Unknown tool: search" in response.text
