"""The secret store end to end (configuration `SECRETS_KEY`, `SECRETS_KEY_PREVIOUS`; HTTP page "Connections"):
credentials given to connections are sealed, never kept, answered or logged in clear in any encoding, and survive
a rotation of the key: seal, start again with a new key and the old one as previous, read everything back,
start again without the previous key, read again. On SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from tests.conformance.connections.conftest import (
    ORG,
    SECRET,
    ConnectionFakes,
    ConnectionsServer,
    add,
    connection_settings,
    execute,
    give,
    new_key,
    new_playbook_id,
    secret_connection,
)
from tests.conformance.helpers import problem
from tests.conformance.secret_search import found_in, found_in_bytes
from tests.conformance.secret_search import stored as stored_by
from tests.e2e.mcp_client import mcp_client, output_of
from tests.e2e.server_process import ServerProcess, start_server
from tests.fakes.openapi_service import KEY
from tests.postgres_support import fresh_database

CLIENT_SECRET = "client-secret-of-the-test-0123456789"
SECRETS = (SECRET, KEY, CLIENT_SECRET)


async def _over_mcp(base: str, playbook: str, server: str) -> list[str]:
    async with mcp_client(base, f"/orgs/{ORG}/playbooks/{playbook}/mcp") as client:
        called = output_of(await client.call_tool("execute", {"server": server, "tool": "echoKey"}))
        found = output_of(await client.call_tool("search", {"server": server}))
    async with mcp_client(base, f"/orgs/{ORG}/mcp") as client:
        listed = output_of(await client.call_tool("list_connections", {}))
    return [repr(called), repr(found), repr(listed)]


def test_no_credential_reaches_a_response_an_mcp_answer_the_ledger_or_the_log(
    connections_server: ConnectionsServer,
) -> None:
    billing = connections_server.fakes.billing
    responses: list[str] = []
    with connections_server.client() as client:
        playbook = new_playbook_id(client)
        added, token = add(
            client,
            "openapi",
            {"document": f"{billing.origin}/openapi.json"},
            {"kind": "secret", "name": "apiKeyAuth", "in": "security"},
        )
        given = give(client, added["id"], token, value=KEY)
        assert given.status_code == 200
        echoed = execute(client, playbook, added["name"], "echoKey", {})
        assert echoed.status_code == 200, echoed.text
        assert echoed.json()["answer"]["received"] == "[redacted]"
        oauth, oauth_token = add(
            client,
            "mcp",
            {"url": connections_server.fakes.open.url},
            {"kind": "client_credentials", "issuer": "https://auth.example.com", "client_id": "tools-client"},
        )
        given_client = give(client, oauth["id"], oauth_token, client_secret=CLIENT_SECRET)
        responses += [given.text, echoed.text, given_client.text]
        events = client.get(f"/v1/orgs/{ORG}/playbooks/{playbook}/events", params={"limit": 100})
        responses.append(events.text)
        responses.append(client.get(f"/v1/orgs/{ORG}/connections", params={"include_removed": "true"}).text)
        responses.append(client.get(f"/v1/orgs/{ORG}/playbooks/{playbook}/tool-servers/search").text)
        refused = give(client, added["id"], token, value=KEY)  # the link is used up: refused, and not echoed
        responses.append(problem(refused, 404, "not_found").__repr__())
    responses += asyncio.run(_over_mcp(connections_server.server.base_url, playbook, added["name"]))
    for text in responses:
        assert found_in(text, SECRETS) == [], text
    stored = stored_by(connections_server.server.folder, connections_server.database_url)
    assert any(b"connection_connected" in data for data in stored)
    for data in stored:
        assert found_in_bytes(data, SECRETS) == []
    assert found_in(connections_server.server.log(), SECRETS) == []


@contextmanager
def _ledger(kind: str) -> Iterator[dict[str, str]]:
    with ExitStack() as stack:
        yield {"DATABASE_URL": stack.enter_context(fresh_database("rotation_test"))} if kind == "postgres" else {}


def _started(folder: Path, fakes: ConnectionFakes, ledger: dict[str, str], **keys: str) -> ServerProcess:
    return start_server(folder, connection_settings(fakes, **ledger, **keys))


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@pytest.mark.slow(seconds=8)
def test_rotation_reseals_every_credential_under_the_new_key(
    tmp_path: Path, connection_fakes: ConnectionFakes, kind: str
) -> None:
    old, new = new_key(), new_key()
    with _ledger(kind) as ledger:
        server = _started(tmp_path, connection_fakes, ledger, SECRETS_KEY=old)
        try:
            with server.client() as client:
                playbook = new_playbook_id(client)
                connections = [secret_connection(client, connection_fakes.guarded.url) for _ in range(3)]
                for connection in connections:
                    assert execute(client, playbook, connection["name"], "get_customer", {"id": "1"}).status_code == 200
        finally:
            assert server.stop() == 0, server.log()

        for keys in ({"SECRETS_KEY": new, "SECRETS_KEY_PREVIOUS": old}, {"SECRETS_KEY": new}):
            server = _started(tmp_path, connection_fakes, ledger, **keys)
            try:
                with server.client() as client:
                    for connection in connections:
                        called = execute(client, playbook, connection["name"], "get_customer", {"id": "2"})
                        assert called.status_code == 200 and called.json()["outcome"] == "result", called.text
                        shown = client.get(f"/v1/orgs/{ORG}/connections/{connection['id']}").json()
                        assert shown["status"] == "connected" and shown["credential_ends_with"] == SECRET[-4:]
            finally:
                assert server.stop() == 0, server.log()
        assert "3 sealed again under SECRETS_KEY" in server.log()

        server = _started(tmp_path, connection_fakes, ledger, SECRETS_KEY=old)  # the old key opens nothing now
        try:
            with server.client() as client:
                refused = problem(
                    execute(client, playbook, connections[0]["name"], "get_customer", {}), 503, "unavailable"
                )
                assert refused["because"] == "connection_broken"
        finally:
            assert server.stop() == 0, server.log()
        for data in stored_by(tmp_path, ledger.get("DATABASE_URL")):
            assert SECRET.encode() not in data
