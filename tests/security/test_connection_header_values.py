"""What cannot go into a header is refused when it is given (issue 37.5): a connection's secret with a
non-ASCII character, a line break or NUL, a header value or URL of an entry with NUL. Before, the secret was
kept, then every tool operation of its org answered 500 (the HTTP client could not encode the header) or a
misleading "could not be reached". A value that reaches the runtime another way (an operator's variable, a
secret kept before the rule) makes only its own connection unavailable; the org's other tools answer. An
operator's header value that a header cannot carry stops the start with one line (it was a traceback).

Through the real server (local mode, SQLite) and the fake OpenAPI service, real processes."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from auto_runtime.text_rule import HOLDS_NUL
from tests.conformance.helpers import pointers, problem
from tests.e2e.server_process import ServerProcess, free_port, run_command, start_server
from tests.fakes.gateway_process import HttpFakeProcess, start_openapi_service

SIGNING_KEY = "signing-key-for-the-fakes-0123456789"
ODD_VALUE = "clé-de-l-api-0123456789"
HEADER_TEXT = "expected text a header can carry: printable ASCII characters, spaces and tabs"
NO_CONTROL = "expected no control character, such as NUL or a line break"
"""U+0000 itself meets the one text rule first (`auto_runtime/text_rule.py`), in its words, at the same pointer."""
URL_TEXT = "expected a URL without spaces or control characters"


@pytest.fixture(scope="module")
def service() -> Iterator[HttpFakeProcess]:
    started = start_openapi_service(SIGNING_KEY, "billing-api")
    yield started
    started.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder = Path(tmp_path_factory.mktemp("header-values"))
    settings = {
        "LEDGER_FILE": str(folder / "data" / "ledger.db"),
        "CONNECTIONS": '{"variables": ["ODD_KEY"]}',
        "ODD_KEY": ODD_VALUE,
    }
    process = start_server(folder, settings)
    yield process
    assert process.stop() == 0, process.log()


@pytest.fixture
def client(server: ServerProcess) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client


def fresh_org() -> str:
    return f"org-{secrets.token_hex(4)}"


def add(client: httpx.Client, org: str, body: dict[str, Any]) -> httpx.Response:
    return client.post(f"/v1/orgs/{org}/connections", json={"name": f"c-{secrets.token_hex(3)}", **body})


def added(client: httpx.Client, org: str, body: dict[str, Any]) -> tuple[str, str]:
    response = add(client, org, body)
    assert response.status_code == 201, response.text
    return response.json()["id"], response.json()["connect"]["url"].split("token=")[1]


def refused_at(response: httpx.Response, pointer: str, words: str) -> None:
    body = problem(response, 422, "invalid_input")
    assert pointers(body) == [pointer], body
    assert body["errors"][0]["detail"].endswith(f"{words}."), body
    assert ODD_VALUE not in response.text and "\x00" not in body["detail"]


@pytest.mark.parametrize("value", [ODD_VALUE, "secret-0123456789\r\nX-Injected: yes", "secret-0123\x00456789"])
@pytest.mark.parametrize("where", ["header", "security"])
def test_a_secret_a_header_cannot_carry_is_refused_when_given(
    client: httpx.Client, service: HttpFakeProcess, value: str, where: str
) -> None:
    org = fresh_org()
    credential = {"kind": "secret", "name": "X-Api-Key" if where == "header" else "apiKeyAuth", "in": where}
    entry = {"document": f"{service.origin}/openapi.json"}
    connection, token = added(client, org, {"kind": "openapi", "entry": entry, "credential": credential})
    given = client.post(f"/v1/orgs/{org}/connections/{connection}/credential", json={"token": token, "value": value})
    refused_at(given, "/value", HOLDS_NUL if "\x00" in value else HEADER_TEXT)
    assert client.get(f"/v1/orgs/{org}/connections/{connection}").json()["status"] == "pending"
    search = client.get(f"/v1/orgs/{org}/tool-servers/search")
    assert search.status_code == 200, search.text


def test_a_secret_sent_in_the_query_may_hold_any_letter_but_no_control_character(
    client: httpx.Client, service: HttpFakeProcess
) -> None:
    org = fresh_org()
    credential = {"kind": "secret", "name": "api_key", "in": "query"}
    entry = {"document": f"{service.origin}/openapi.json"}
    connection, token = added(client, org, {"kind": "openapi", "entry": entry, "credential": credential})
    route = f"/v1/orgs/{org}/connections/{connection}/credential"
    nul = client.post(route, json={"token": token, "value": "secret-0123\x00456789"})
    refused_at(nul, "/value", HOLDS_NUL)
    refused_at(client.post(route, json={"token": token, "value": "secret-0123\r\n456789"}), "/value", NO_CONTROL)
    given = client.post(route, json={"token": token, "value": ODD_VALUE})
    assert given.status_code == 200, given.text


@pytest.mark.parametrize(
    ("body", "pointer", "words"),
    [
        ({"kind": "mcp", "entry": {"url": "https://crm.example.com/\x00mcp"}}, "/entry/url", HOLDS_NUL),
        ({"kind": "mcp", "entry": {"url": "https://crm.example.com/a b"}}, "/entry/url", URL_TEXT),
        (
            {"kind": "mcp", "entry": {"url": "https://crm.example.com/mcp", "headers": {"X-Tenant": "acme\x00"}}},
            "/entry/headers/X-Tenant",
            HOLDS_NUL,
        ),
        (
            {"kind": "mcp", "entry": {"url": "https://crm.example.com/mcp", "headers": {"X-Tenant": "société"}}},
            "/entry/headers/X-Tenant",
            HEADER_TEXT,
        ),
        (
            {"kind": "openapi", "entry": {"document": "https://api.example.com/o.json", "query_params": {"t": "a\nb"}}},
            "/entry/query_params/t",
            NO_CONTROL,
        ),
    ],
)
def test_an_entry_that_cannot_travel_is_refused_when_added(
    client: httpx.Client, body: dict[str, Any], pointer: str, words: str
) -> None:
    refused_at(add(client, fresh_org(), {**body, "credential": {"kind": "none"}}), pointer, words)


def test_a_client_id_with_a_line_break_is_refused_when_added(client: httpx.Client) -> None:
    credential = {"kind": "client_credentials", "issuer": "https://id.example.com", "client_id": "app\nX: y"}
    body = {"kind": "mcp", "entry": {"url": "https://crm.example.com/mcp"}, "credential": credential}
    refused_at(add(client, fresh_org(), body), "/credential/client_id", NO_CONTROL)


def test_an_operators_variable_a_header_cannot_carry_makes_only_its_connection_unavailable(
    client: httpx.Client, service: HttpFakeProcess
) -> None:
    org = fresh_org()
    document = {"document": f"{service.origin}/openapi.json"}
    credential = {"kind": "reference", "variable": "ODD_KEY", "name": "X-Api-Key", "in": "header"}
    for name, reference in (("odd", credential), ("billing", {"kind": "none"})):
        connection, token = added(
            client, org, {"name": name, "kind": "openapi", "entry": document, "credential": reference}
        )
        approved = client.post(f"/v1/orgs/{org}/connections/{connection}/approve", json={"token": token})
        assert approved.status_code == 200, approved.text
    search = client.get(f"/v1/orgs/{org}/tool-servers/search")
    assert search.status_code == 200, search.text
    servers = {server["name"]: server for server in search.json()["servers"]}
    assert servers["billing"]["tool_count"] >= 1
    assert servers["odd"]["because"] == "connection_not_allowed"
    assert servers["odd"]["unavailable"] == (
        f"The variable ODD_KEY the credential of the connection odd names holds a value that cannot be sent: "
        f"{HEADER_TEXT}."
    )
    playbook = f"pb-{secrets.token_hex(4)}"
    assert client.post(f"/v1/orgs/{org}/playbooks", json={"playbook": playbook, "name": "H"}).status_code == 201
    base = f"/v1/orgs/{org}/playbooks/{playbook}/tool-servers"
    body = problem(client.post(f"{base}/odd/tools/plainText/execute", json={}), 503, "unavailable", "tool_not_offered")
    assert body["because"] == "connection_not_allowed"
    answered = client.post(f"{base}/billing/tools/plainText/execute", json={})
    assert answered.status_code == 200 and answered.json()["outcome"] == "result", answered.text
    assert ODD_VALUE not in search.text + body["detail"]


@pytest.mark.parametrize("command", ["serve", "check-config"])
def test_an_operators_header_value_a_header_cannot_carry_stops_the_start_with_one_line(
    tmp_path: Path, command: str
) -> None:
    entry = {"url": "https://crm.example.com/mcp", "headers": {"X-Key": "${CRM_KEY}"}, "org": "acme"}
    settings = {
        "TOOL_SERVERS": json.dumps({"crm": entry}),
        "CRM_KEY": ODD_VALUE,
        "PORT": str(free_port()),
        "LOG_LEVEL": "error",
    }
    result = run_command(tmp_path, command, settings=settings)
    assert result.returncode == 1, result.stdout + result.stderr
    output = (result.stdout + result.stderr).strip()
    assert "Traceback" not in output and ODD_VALUE not in output, output
    assert output.splitlines()[-1] == f"TOOL_SERVERS: crm.headers.X-Key: {HEADER_TEXT.replace('expected', 'expects')}"
