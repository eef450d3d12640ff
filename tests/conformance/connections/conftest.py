"""A real server (local mode) on each ledger, whose connections reach the tool-server fakes, all real processes.

Set up with one entry of `tool_servers`, `helpdesk` (so its name is taken), and `connections.variables` naming
`CRM_API_KEY`, which is set. The fakes:

* `guarded`: the fake MCP server, which answers only requests carrying `X-Api-Key: SECRET`;
* `referenced`: the fake MCP server, which answers only requests carrying `X-Crm-Key: REFERENCE_VALUE`;
* `open`: the fake MCP server with no credential;
* `billing`: the fake HTTP API from its OpenAPI document, whose key is `openapi_service.KEY`;
* `oauth`: the fake authorization server issuing client-credentials tokens for `billing`.
"""

from __future__ import annotations

import base64
import json
import secrets
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.server_process import ServerProcess, start_server
from tests.fakes.gateway_process import (
    HttpFakeProcess,
    McpToolServerProcess,
    start_mcp_tool_server,
    start_oauth_server,
    start_openapi_service,
)
from tests.per_ledger import LEDGERS, PerLedger, ServerStack, per_ledger
from tests.postgres_support import fresh_database

ORG = "acme"
SECRET = "crm-secret-value-0123456789"
REFERENCE_VALUE = "crm-reference-value-abcdef0123"
SIGNING_KEY = "signing-key-for-the-fakes-0123456789"


@dataclass
class ConnectionFakes:
    guarded: McpToolServerProcess
    referenced: McpToolServerProcess
    open: McpToolServerProcess
    billing: HttpFakeProcess
    oauth: HttpFakeProcess


@dataclass
class ConnectionsServer:
    server: ServerProcess
    fakes: ConnectionFakes
    database_url: str | None
    settings: dict[str, str]

    def client(self, **headers: str) -> httpx.Client:
        return self.server.client(**headers)


@pytest.fixture(scope="session")
def connection_fakes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectionFakes]:
    folder = Path(tmp_path_factory.mktemp("connection-fakes"))
    for name in ("guarded", "referenced", "open"):
        (folder / name).mkdir()
    guarded = start_mcp_tool_server(folder / "guarded", "--require-header", f"X-Api-Key={SECRET}")
    referenced = start_mcp_tool_server(folder / "referenced", "--require-header", f"X-Crm-Key={REFERENCE_VALUE}")
    opened = start_mcp_tool_server(folder / "open")
    billing = start_openapi_service(SIGNING_KEY, "billing-api")
    oauth = start_oauth_server(SIGNING_KEY, "billing-api")
    yield ConnectionFakes(guarded, referenced, opened, billing, oauth)
    for fake in (guarded, referenced, opened, billing, oauth):
        fake.stop()


def new_key() -> str:
    return base64.b64encode(secrets.token_bytes(32)).decode()


def connection_settings(fakes: ConnectionFakes, **more: str) -> dict[str, str]:
    settings = {
        "TOOL_SERVERS": json.dumps({"helpdesk": {"url": fakes.open.url, "org": ORG}}),
        "CONNECTIONS": json.dumps({"variables": ["CRM_API_KEY"]}),
        "CRM_API_KEY": REFERENCE_VALUE,
    }
    settings.update(more)
    return settings


@pytest.fixture(scope="session")
def connections_servers(
    tmp_path_factory: pytest.TempPathFactory, connection_fakes: ConnectionFakes
) -> Iterator[PerLedger[ConnectionsServer]]:
    """The servers, one for each ledger, started on first use and stopped at the session's end
    (`tests/per_ledger.py`)."""

    def start(ledger: str, stack: ServerStack) -> ConnectionsServer:
        settings = connection_settings(connection_fakes)
        database_url: str | None = None
        if ledger == "postgres":
            database_url = stack.enter_context(fresh_database("connections_test"))
            settings["DATABASE_URL"] = database_url
            settings["SECRETS_KEY"] = new_key()
        server = start_server(Path(tmp_path_factory.mktemp(f"connections-{ledger}")), settings)
        stack.stop_at_the_end(server)
        return ConnectionsServer(server, connection_fakes, database_url, settings)

    with per_ledger(start) as servers:
        yield servers


@pytest.fixture(scope="module", params=LEDGERS)
def connections_server(
    request: pytest.FixtureRequest, connections_servers: PerLedger[ConnectionsServer]
) -> ConnectionsServer:
    """The server on each ledger: every test that uses it runs against SQLite and against the real PostgreSQL."""
    return connections_servers.get(request.param)


def token_of(added: dict[str, Any]) -> str:
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(added["connect"]["url"]).query)
    return query["token"][0]


def fresh_name(prefix: str = "c") -> str:
    return f"{prefix}-{secrets.token_hex(4)}"


def add(
    client: httpx.Client,
    kind: str,
    entry: dict[str, Any],
    credential: dict[str, Any],
    *,
    name: str | None = None,
    org: str = ORG,
) -> tuple[dict[str, Any], str]:
    body = {"name": name or fresh_name(), "kind": kind, "entry": entry, "credential": credential}
    response = client.post(f"/v1/orgs/{org}/connections", json=body)
    assert response.status_code == 201, response.text
    added: dict[str, Any] = response.json()
    return added, token_of(added)


def give(client: httpx.Client, connection_id: str, token: str, org: str = ORG, **fields: str) -> httpx.Response:
    return client.post(f"/v1/orgs/{org}/connections/{connection_id}/credential", json={"token": token, **fields})


def approve(client: httpx.Client, connection_id: str, token: str, org: str = ORG) -> httpx.Response:
    return client.post(f"/v1/orgs/{org}/connections/{connection_id}/approve", json={"token": token})


def secret_connection(client: httpx.Client, url: str, *, name: str | None = None) -> dict[str, Any]:
    """A connection of the guarded fake with its secret given."""
    added, token = add(client, "mcp", {"url": url}, {"kind": "secret", "name": "X-Api-Key", "in": "header"}, name=name)
    response = give(client, added["id"], token, value=SECRET)
    assert response.status_code == 200, response.text
    connected: dict[str, Any] = response.json()
    return connected


def new_playbook_id(client: httpx.Client, org: str = ORG) -> str:
    playbook = f"pb-{secrets.token_hex(5)}"
    response = client.post(f"/v1/orgs/{org}/playbooks", json={"playbook": playbook, "name": "Connections"})
    assert response.status_code == 201, response.text
    return playbook


def execute(client: httpx.Client, playbook: str, server: str, tool: str, arguments: dict[str, Any]) -> httpx.Response:
    return client.post(
        f"/v1/orgs/{ORG}/playbooks/{playbook}/tool-servers/{server}/tools/{tool}/execute", json={"arguments": arguments}
    )
