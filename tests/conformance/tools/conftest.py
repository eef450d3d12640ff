"""A real server whose tool servers are the three fakes, all real processes, for the tool operations' tests.

The server (local mode) is set up with:

* `helpdesk`: the fake MCP server over HTTP, its `request_id` read from the result's metadata;
* `narrow`: the same server, allowing only `get_customer`, its content not kept;
* `notes`: the fake MCP server over stdio, with the secret `NOTES_API_KEY` in its environment;
* `billing`: the fake HTTP API from its OpenAPI document, its key a secret in the query and a header;
* `sales-desk`: the fake MCP server, for the playbook `SALES` only;
* `elsewhere`: the fake MCP server, for another org;
* `down`: an MCP server at an address nothing listens on;
* `crowded`: a second fake MCP server listing 120 more tools, for the playbook `MANY` only.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.e2e.moved_clock import TEST_CLOCK_SETTINGS
from tests.e2e.server_process import ServerProcess, free_port, start_server
from tests.fakes.gateway_process import (
    HttpFakeProcess,
    McpToolServerProcess,
    start_mcp_tool_server,
    start_openapi_service,
)
from tests.fakes.openapi_service import KEY
from tests.per_ledger import LEDGERS, PerLedger, ServerStack, per_ledger
from tests.postgres_support import fresh_database, server_on

STDIO_FAKE = Path(__file__).resolve().parents[2] / "fakes" / "mcp_stdio_server.py"
NOTES_SECRET = "notes-secret-0123456789abcdef"
SIGNING_KEY = "signing-key-for-the-fakes-0123456789"
SALES = "sales-desk-pb"
MANY = "many-tools-pb"
ORG = "acme"


@dataclass
class ToolFakes:
    helpdesk: McpToolServerProcess
    billing: HttpFakeProcess
    crowded: McpToolServerProcess


@dataclass
class ToolsServer:
    server: ServerProcess
    fakes: ToolFakes
    database_url: str | None

    def client(self, **headers: str) -> httpx.Client:
        return self.server.client(**headers)


@pytest.fixture(scope="session")
def tool_fakes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ToolFakes]:
    helpdesk = start_mcp_tool_server(Path(tmp_path_factory.mktemp("helpdesk")))
    billing = start_openapi_service(SIGNING_KEY, "billing-api")
    crowded = start_mcp_tool_server(Path(tmp_path_factory.mktemp("crowded")), "--extra-tools", "120")
    yield ToolFakes(helpdesk, billing, crowded)
    helpdesk.stop()
    billing.stop()
    crowded.stop()


def tool_server_entries(fakes: ToolFakes) -> dict[str, object]:
    return {
        "helpdesk": {"url": fakes.helpdesk.url, "org": ORG, "request_id": "fake/request_id"},
        "narrow": {"url": fakes.helpdesk.url, "org": ORG, "allowed": ["get_customer"], "record_content": False},
        "notes": {
            "command": sys.executable,
            "args": [str(STDIO_FAKE)],
            "env": {"NOTES_API_KEY": "${NOTES_KEY}"},
            "org": ORG,
        },
        "billing": {
            "document": f"{fakes.billing.origin}/openapi.json",
            "security": {"apiKeyQuery": "${BILLING_KEY}", "apiKeyAuth": "${BILLING_KEY}"},
            "request_id": "x-request-id",
            "org": ORG,
        },
        "sales-desk": {"url": fakes.helpdesk.url, "org": ORG, "playbooks": [SALES], "allowed": ["get_customer"]},
        "elsewhere": {"url": fakes.helpdesk.url, "org": "globex"},
        "down": {"url": f"http://127.0.0.1:{free_port()}/mcp", "org": ORG},
        "crowded": {"url": fakes.crowded.url, "org": ORG, "playbooks": [MANY]},
    }


def tool_settings(fakes: ToolFakes) -> dict[str, str]:
    """The tool servers, their keys, and a clock the tests move (`tests/e2e/moved_clock.py`): a hung call is cut
    when the clock passes its 30 s, without waiting them out."""
    return {
        "TOOL_SERVERS": json.dumps(tool_server_entries(fakes)),
        "BILLING_KEY": KEY,
        "NOTES_KEY": NOTES_SECRET,
        **TEST_CLOCK_SETTINGS,
    }


@pytest.fixture(scope="session")
def tools_servers(tmp_path_factory: pytest.TempPathFactory, tool_fakes: ToolFakes) -> Iterator[PerLedger[ToolsServer]]:
    """The servers, one for each ledger, started on first use and stopped at the session's end
    (`tests/per_ledger.py`)."""

    def start(ledger: str, stack: ServerStack) -> ToolsServer:
        settings = tool_settings(tool_fakes)
        database_url: str | None = None
        if ledger == "postgres":
            database_url = stack.enter_context(fresh_database("tools_test"))
            settings.update(server_on(database_url))
        server = start_server(Path(tmp_path_factory.mktemp(f"tools-server-{ledger}")), settings)
        stack.stop_at_the_end(server)
        with server.client() as client:
            for playbook in (SALES, MANY):
                response = client.post(f"/v1/orgs/{ORG}/playbooks", json={"playbook": playbook, "name": "Tools"})
                assert response.status_code == 201, response.text
        return ToolsServer(server, tool_fakes, database_url)

    with per_ledger(start) as servers:
        yield servers


@pytest.fixture(scope="module", params=LEDGERS)
def tools_server(request: pytest.FixtureRequest, tools_servers: PerLedger[ToolsServer]) -> ToolsServer:
    """The server on each ledger: every test that uses it runs against SQLite and against the real PostgreSQL."""
    return tools_servers.get(request.param)
