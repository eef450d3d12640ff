"""The operator's `connections` rules and who may add a connection (configuration "Connections"; HTTP page
"Connections", "A connection that is not ready"): refusals at `add_connection`, and rules changed between two
starts reaching the connections already added. SQLite only: the rules are the same on both ledgers, which
`test_connections.py` covers."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat

from auto_runtime.tools.connection_rules import NO_CONNECTION
from tests.conformance.connections.conftest import (
    ORG,
    SECRET,
    SIGNING_KEY,
    ConnectionFakes,
    ConnectionsServer,
    add,
    approve,
    connection_settings,
    execute,
    fresh_name,
    give,
    new_key,
    new_playbook_id,
    secret_connection,
)
from tests.conformance.helpers import problem
from tests.e2e.server_process import ServerProcess, free_port, start_server
from tests.e2e.test_access import issue_key
from tests.fakes.gateway_process import start_oauth_server

HOSTS = "The host {} is not one the operator allows connections to reach (connections.allowed_hosts)."
KINDS = "The operator does not let a connection take a credential of the kind {} (connections.credential_kinds)."
VARIABLES = "The variable {} is not one the operator lets a reference credential name (connections.variables)."
RULES = {
    "allowed_hosts": ["127.0.0.1", "*.example.com"],
    "credential_kinds": ["none", "secret", "reference"],
    "variables": ["CRM_API_KEY"],
}
"""The rules of the restart test's second life: loopback by its address (not `localhost`) and the hosts under
example.com, three kinds of credential, one variable."""


def _post(client: httpx.Client, url: str, credential: dict[str, Any]) -> httpx.Response:
    body = {"name": fresh_name(), "kind": "mcp", "entry": {"url": url}, "credential": credential}
    return client.post(f"/v1/orgs/{ORG}/connections", json=body)


def test_a_reference_to_a_variable_the_operator_does_not_list_is_forbidden(
    connections_server: ConnectionsServer,
) -> None:
    credential = {"kind": "reference", "variable": "OTHER_KEY", "name": "X-Key", "in": "header"}
    with connections_server.client() as client:
        refused = problem(_post(client, connections_server.fakes.open.url, credential), 403, "forbidden")
    assert refused["detail"] == VARIABLES.format("OTHER_KEY")


def test_a_key_adds_no_connection_where_people_sign_in(tmp_path: Path, connection_fakes: ConnectionFakes) -> None:
    """With `PUBLIC_URL` set (people sign in), a key is still refused; a server of keys alone is the last life of
    `test_rules_changed_between_starts_reach_the_connections_already_added`."""
    every = [part for p in ("org:read", "org:write", "playbook:read", "playbook:write") for part in ("--permission", p)]
    writer = issue_key(tmp_path, "--org", ORG, *every)
    settings = connection_settings(
        connection_fakes, API_KEYS=json.dumps([writer.entry]), PUBLIC_URL="https://runtime.example.com"
    )
    server = start_server(tmp_path / "signs-in", settings)
    try:
        with server.client(Authorization=f"Bearer {writer.secret}") as client:
            _a_key_adds_no_connection(client, connection_fakes, "not by an API key")
    finally:
        assert server.stop() == 0, server.log()


def _a_key_adds_no_connection(client: httpx.Client, connection_fakes: ConnectionFakes, words: str) -> None:
    refused = problem(_post(client, connection_fakes.open.url, {"kind": "none"}), 403, "forbidden")
    assert words in refused["detail"]
    assert client.get(f"/v1/orgs/{ORG}/connections").status_code == 200


def _the_rules_refuse_a_host_a_kind_of_credential_and_a_variable(
    client: httpx.Client, connection_fakes: ConnectionFakes
) -> None:
    """Under `RULES`: each refusal in the rule's sentence, and a host under `*.example.com` taken."""
    local = connection_fakes.open.url.replace("127.0.0.1", "localhost")
    refused = problem(_post(client, local, {"kind": "none"}), 403, "forbidden")
    assert refused["detail"] == HOSTS.format("localhost")
    refused = problem(_post(client, "https://example.com/mcp", {"kind": "none"}), 403, "forbidden")
    assert refused["detail"] == HOSTS.format("example.com")  # *. covers the hosts under it, not itself
    assert _post(client, "https://crm.example.com/mcp", {"kind": "none"}).status_code == 201
    oauth = {"kind": "client_credentials", "issuer": "https://auth.example.com", "client_id": "c"}
    refused = problem(_post(client, "https://crm.example.com/mcp", oauth), 403, "forbidden")
    assert refused["detail"] == KINDS.format("client_credentials")
    reference = {"kind": "reference", "variable": "OTHER_KEY", "name": "X-Key", "in": "header"}
    refused = problem(_post(client, "https://crm.example.com/mcp", reference), 403, "forbidden")
    assert refused["detail"] == VARIABLES.format("OTHER_KEY")
    document = {
        "name": fresh_name(),
        "kind": "openapi",
        "entry": {"document": "https://api.example.com/openapi.json", "base_url": "https://api.other.com/v1"},
        "credential": {"kind": "none"},
    }
    refused = problem(client.post(f"/v1/orgs/{ORG}/connections", json=document), 403, "forbidden")
    assert refused["detail"] == HOSTS.format("api.other.com")


def _because(client: httpx.Client, playbook: str, name: str) -> dict[str, Any]:
    refused = problem(execute(client, playbook, name, "get_customer", {"id": "1"}), 503, "unavailable")
    assert refused["kind"] == "tool_not_offered"
    found = client.get(f"/v1/orgs/{ORG}/playbooks/{playbook}/tool-servers/search", params={"server": name}).json()
    server = found["servers"][0]
    assert (server["because"], server["unavailable"]) == (refused["because"], refused["detail"])
    return refused


def test_rules_changed_between_starts_reach_the_connections_already_added(
    tmp_path: Path, connection_fakes: ConnectionFakes
) -> None:
    """Four connections added and used, then the server started again with other rules, another key, the
    variable unset and a `tool_servers` entry of a connection's name; then once more without people; then with
    API keys alone.

    The lives with rules also check the rules' refusals at `add_connection` (each life is a start, so the
    rules' own refusals are checked in them rather than on servers of their own): the second refuses a host, a
    kind of credential and a variable (`RULES`), the third every connection (`people_may_add: false`), the last
    a connection added with a key (no one signs in)."""
    local = connection_fakes.open.url.replace("127.0.0.1", "localhost")
    reference = {"kind": "reference", "variable": "CRM_API_KEY", "name": "X-Crm-Key", "in": "header"}
    with_key = issue_key(tmp_path, "--org", ORG, "--permission", "org:read", "--permission", "org:write")
    server = start_server(tmp_path, connection_settings(connection_fakes))
    with server.client() as client:
        playbook = new_playbook_id(client)
        by_host, token = add(client, "mcp", {"url": local}, {"kind": "none"})
        assert approve(client, by_host["id"], token).status_code == 200
        secret = secret_connection(client, connection_fakes.guarded.url)
        referenced, token = add(client, "mcp", {"url": connection_fakes.referenced.url}, reference)
        assert approve(client, referenced["id"], token).status_code == 200
        pending, _ = add(client, "mcp", {"url": connection_fakes.open.url}, {"kind": "none"})
        waiting, waiting_token = add(client, "mcp", {"url": connection_fakes.open.url}, {"kind": "none"})
        for name in (by_host["name"], secret["name"], referenced["name"]):
            assert execute(client, playbook, name, "get_customer", {"id": "1"}).json()["outcome"] == "result"
    assert server.stop() == 0, server.log()

    changed = connection_settings(
        connection_fakes,
        CONNECTIONS=json.dumps(RULES),
        SECRETS_KEY=new_key(),
        TOOL_SERVERS=json.dumps({pending["name"]: {"url": connection_fakes.open.url, "org": ORG}}),
    )
    del changed["CRM_API_KEY"]
    server = start_server(tmp_path, changed)
    try:
        with server.client() as client:
            refused = _because(client, playbook, by_host["name"])
            assert refused["because"] == "connection_not_allowed" and refused["detail"] == HOSTS.format("localhost")
            refused = _because(client, playbook, secret["name"])
            assert refused["because"] == "connection_broken"
            shown = client.get(f"/v1/orgs/{ORG}/connections/{secret['id']}").json()
            assert shown["status"] == "broken" and "cannot be read" in shown["broken"]
            refused = _because(client, playbook, referenced["name"])
            assert refused["because"] == "connection_not_allowed" and "CRM_API_KEY" in refused["detail"]
            assert "not set" in refused["detail"]
            called = execute(client, playbook, pending["name"], "get_customer", {"id": "1"})
            assert called.status_code == 200  # the configuration's entry of that name
            _the_rules_refuse_a_host_a_kind_of_credential_and_a_variable(client, connection_fakes)
    finally:
        assert server.stop() == 0, server.log()

    without_people = connection_settings(connection_fakes, CONNECTIONS=json.dumps({"people_may_add": False}))
    server = start_server(tmp_path, without_people)
    try:
        with server.client() as client:
            refused = _because(client, playbook, referenced["name"])
            assert refused["because"] == "connection_not_allowed" and refused["detail"] == NO_CONNECTION
            listed = {c["id"]: c["status"] for c in client.get(f"/v1/orgs/{ORG}/connections").json()["connections"]}
            assert listed[referenced["id"]] == "connected" and listed[secret["id"]] == "broken"
            refused = problem(_post(client, connection_fakes.open.url, {"kind": "none"}), 403, "forbidden")
            assert refused["detail"] == NO_CONNECTION
    finally:
        assert server.stop() == 0, server.log()

    keyed = connection_settings(connection_fakes, API_KEYS=json.dumps([with_key.entry]))
    server = start_server(tmp_path, keyed)
    try:
        with server.client(Authorization=f"Bearer {with_key.secret}") as client:
            refused = problem(approve(client, waiting["id"], waiting_token), 403, "forbidden")
            assert "person who added" in refused["detail"]
            _a_key_adds_no_connection(client, connection_fakes, "signs nobody in")
    finally:
        assert server.stop() == 0, server.log()
    assert SECRET not in (tmp_path / "server.log").read_text()


@pytest.mark.parametrize("kind", ["none", "reference"])
def test_a_connection_approved_is_recorded_with_who_connected_it(
    connections_server: ConnectionsServer, kind: str
) -> None:
    credential: dict[str, Any] = {"kind": kind}
    if kind == "reference":
        credential.update(variable="CRM_API_KEY", name="X-Crm-Key", **{"in": "header"})
    with connections_server.client() as client:
        added, token = add(client, "mcp", {"url": connections_server.fakes.referenced.url}, credential)
        approved = approve(client, added["id"], token).json()
    assert approved["connected_by"] == "local" and approved["credential_ends_with"] is None


@pytest.fixture
def static_document(tmp_path: Path, connection_fakes: ConnectionFakes) -> Iterator[str]:
    """The billing fake's document, whose server is named by `localhost`, served from 127.0.0.1 by Python's own
    HTTP server (a real process)."""
    folder = tmp_path / "static"
    folder.mkdir()
    origin = connection_fakes.billing.origin
    served = httpx.get(f"{origin}/openapi.json", timeout=10).json()
    served["servers"] = [{"url": origin.replace("127.0.0.1", "localhost") + "/v2/"}]
    (folder / "openapi.json").write_text(json.dumps(served))
    port = free_port()
    command = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(folder)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/openapi.json"
    try:
        for _ in range(200):
            try:
                if httpx.get(url, timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                process.poll()
                assert process.returncode is None
                time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture(scope="module")
def loopback_only(
    tmp_path_factory: pytest.TempPathFactory, connection_fakes: ConnectionFakes
) -> Iterator[ServerProcess]:
    """A server whose rules let connections reach 127.0.0.1 alone, shared by the tests of such rules: each adds
    connections of fresh names and uses a playbook of its own."""
    rules = {"allowed_hosts": ["127.0.0.1"], "variables": ["CRM_API_KEY"]}
    server = start_server(
        tmp_path_factory.mktemp("loopback-only"), connection_settings(connection_fakes, CONNECTIONS=json.dumps(rules))
    )
    yield server
    assert server.stop() == 0, server.log()


def test_the_server_a_document_names_is_checked_once_the_document_is_read(
    loopback_only: ServerProcess, static_document: str
) -> None:
    with loopback_only.client() as client:
        added, token = add(client, "openapi", {"document": static_document}, {"kind": "none"})
        assert approve(client, added["id"], token).status_code == 200
        refused = _because(client, new_playbook_id(client), added["name"])
    assert refused["because"] == "connection_not_allowed" and refused["detail"] == HOSTS.format("localhost")


def test_after_a_restart_an_entry_no_longer_taken_is_not_allowed_and_a_private_key_still_signs(
    tmp_path: Path, connection_fakes: ConnectionFakes
) -> None:
    """Two connections added on one server, which is then started again with a gateway named as one of them:

    * the connection named as the gateway since it was added: its entry is one the runtime no longer takes;
    * the connection given a private key signs its client assertion after the restart too, and the key is
      never written to the log."""
    key = ec.generate_private_key(ec.SECP256R1())
    private = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode()
    public = tmp_path / "client.pub"
    public.write_bytes(key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo))
    oauth = start_oauth_server(SIGNING_KEY, "billing-api", client_public_key=public)
    billing = connection_fakes.billing
    credential = {"kind": "client_credentials", "issuer": oauth.origin, "client_id": "tools-client", "scope": "reports"}
    try:
        server = start_server(tmp_path / "server", connection_settings(connection_fakes))
        try:
            with server.client() as client:
                playbook = new_playbook_id(client)
                gatewayed, token = add(
                    client, "mcp", {"url": connection_fakes.open.url}, {"kind": "none"}, name="crmgw"
                )
                assert approve(client, gatewayed["id"], token).status_code == 200
                assert execute(client, playbook, "crmgw", "get_customer", {"id": "1"}).status_code == 200
                added, token = add(client, "openapi", {"document": f"{billing.origin}/openapi.json"}, credential)
                given = give(client, added["id"], token, private_key=private, algorithm="ES256")
                assert given.status_code == 200, given.text
                assert given.json()["credential_ends_with"] is None
                called = execute(client, playbook, added["name"], "listReports", {})
                assert called.json()["outcome"] == "result", called.text
        finally:
            assert server.stop() == 0, server.log()
        gateway = {"name": "crmgw", "base_url": "http://127.0.0.1:9/v1", "api_key_env": "GATEWAY_KEY"}
        settings = connection_settings(
            connection_fakes, MODEL_GATEWAYS=json.dumps([gateway]), GATEWAY_KEY="gateway-key-0123456789"
        )
        server = start_server(tmp_path / "server", settings)
        try:
            with server.client() as client:
                refused = _because(client, playbook, "crmgw")
                again = execute(client, playbook, added["name"], "listReports", {})
                assert again.json()["outcome"] == "result", again.text
        finally:
            assert server.stop() == 0, server.log()
    finally:
        oauth.stop()
    assert refused["because"] == "connection_not_allowed"
    assert refused["detail"].startswith("The runtime no longer takes the entry of the connection crmgw: name:")
    assert "BEGIN PRIVATE KEY" not in server.log()
    for line in private.splitlines()[1:-1]:
        assert line not in server.log()


def test_a_request_to_a_host_the_rules_do_not_allow_makes_the_connection_not_allowed(
    loopback_only: ServerProcess, connection_fakes: ConnectionFakes
) -> None:
    """The authorization server's metadata names a token endpoint on a host `allowed_hosts` does not take: the
    call that would mint the token is stopped before the request is sent and fails, and from then on the
    connection is not ready, `connection_not_allowed` in the rule's sentence, in `execute` and in `search`."""
    oauth = start_oauth_server(SIGNING_KEY, "billing-api", mode="token_elsewhere")
    credential = {"kind": "client_credentials", "issuer": oauth.origin, "client_id": "tools-client", "scope": "reports"}
    try:
        with loopback_only.client() as client:
            playbook = new_playbook_id(client)
            document = f"{connection_fakes.billing.origin}/openapi.json"
            added, token = add(client, "openapi", {"document": document}, credential)
            assert give(client, added["id"], token, client_secret="tools-client-secret-0123").status_code == 200
            called = execute(client, playbook, added["name"], "listReports", {})
            assert called.status_code == 200 and called.json()["outcome"] == "server_failure", called.text
            refused = _because(client, playbook, added["name"])
        assert oauth.get("/_fake/minted") == {"minted": 0}
    finally:
        oauth.stop()
    assert refused["because"] == "connection_not_allowed" and refused["detail"] == HOSTS.format("localhost")
