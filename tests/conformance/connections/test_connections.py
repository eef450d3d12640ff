"""The connection operations end to end (HTTP page "Connections", "A connection that is not ready"): every field
they answer, the link's rules, approval and credentials, removal, and the refusals of the table."""

from __future__ import annotations

import urllib.parse
from datetime import datetime, timedelta

import pytest

from tests.conformance.connections.conftest import (
    ORG,
    REFERENCE_VALUE,
    SECRET,
    ConnectionsServer,
    add,
    approve,
    execute,
    fresh_name,
    give,
    new_playbook_id,
    secret_connection,
)
from tests.conformance.helpers import pointers, problem

FIELDS = {
    "id",
    "name",
    "kind",
    "entry",
    "credential",
    "status",
    "added_by",
    "added_at",
    "connected_at",
    "connected_by",
    "credential_ends_with",
    "broken",
}


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_add_answers_the_pending_connection_and_studios_link(connections_server: ConnectionsServer) -> None:
    url = connections_server.fakes.open.url
    name = fresh_name()
    with connections_server.client() as client:
        response = client.post(
            f"/v1/orgs/{ORG}/connections",
            json={
                "name": name,
                "kind": "mcp",
                "entry": {"url": url, "allowed": ["get_customer"], "record_content": False},
                "credential": {"kind": "none"},
            },
        )
    assert response.status_code == 201, response.text
    assert response.headers["cache-control"] == "no-store"
    added = response.json()
    assert set(added) == FIELDS | {"connect"}
    assert added["name"] == name and added["kind"] == "mcp"
    assert added["entry"] == {"url": url, "allowed": ["get_customer"], "record_content": False}
    assert added["credential"] == {"kind": "none"}
    assert added["status"] == "pending"
    assert added["added_by"] == "local"
    assert added["connected_at"] is None and added["connected_by"] is None
    assert added["credential_ends_with"] is None and added["broken"] is None
    assert len(added["id"]) == 36 and added["id"][14] == "7"  # a UUIDv7
    link = urllib.parse.urlsplit(added["connect"]["url"])
    assert f"{link.scheme}://{link.netloc}{link.path}" == "https://studio.on.auto/connect"
    query = urllib.parse.parse_qs(link.query)
    assert query["server"] == [connections_server.server.base_url]
    assert query["org"] == [ORG] and query["connection"] == [added["id"]]
    assert len(query["token"][0]) >= 32
    assert _time(added["connect"]["expires_at"]) - _time(added["added_at"]) == timedelta(minutes=10)


def test_list_answers_newest_first_and_removed_ones_only_when_asked(connections_server: ConnectionsServer) -> None:
    url = connections_server.fakes.open.url
    with connections_server.client() as client:
        first, _ = add(client, "mcp", {"url": url}, {"kind": "none"})
        second, _ = add(client, "mcp", {"url": url}, {"kind": "none"})
        assert client.delete(f"/v1/orgs/{ORG}/connections/{first['id']}").status_code == 200
        listed = client.get(f"/v1/orgs/{ORG}/connections").json()["connections"]
        every = client.get(f"/v1/orgs/{ORG}/connections", params={"include_removed": "true"}).json()["connections"]
    ids = [connection["id"] for connection in listed]
    assert second["id"] in ids and first["id"] not in ids
    assert ids.index(second["id"]) == 0 or ids == sorted(ids, reverse=True)
    every_ids = [connection["id"] for connection in every]
    assert every_ids.index(second["id"]) < every_ids.index(first["id"])
    assert all(set(connection) == FIELDS for connection in every)


def test_get_answers_the_connection_and_an_unknown_id_is_not_found(connections_server: ConnectionsServer) -> None:
    with connections_server.client() as client:
        added, _ = add(client, "mcp", {"url": connections_server.fakes.open.url}, {"kind": "none"})
        got = client.get(f"/v1/orgs/{ORG}/connections/{added['id']}")
        assert got.status_code == 200
        assert got.json() == {key: value for key, value in added.items() if key != "connect"}
        problem(client.get(f"/v1/orgs/{ORG}/connections/018f0000-0000-7000-8000-000000000000"), 404, "not_found")
        problem(client.get(f"/v1/orgs/globex/connections/{added['id']}"), 404, "not_found")
        problem(client.get(f"/v1/orgs/{ORG}/connections/not-an-id"), 404, "not_found")


def test_approve_connects_a_connection_of_no_credential_and_uses_its_link_up(
    connections_server: ConnectionsServer,
) -> None:
    with connections_server.client() as client:
        added, token = add(client, "mcp", {"url": connections_server.fakes.open.url}, {"kind": "none"})
        read = client.get(f"/v1/orgs/{ORG}/connections/{added['id']}/link/{token}")
        assert read.status_code == 200 and read.json()["status"] == "pending"
        approved = approve(client, added["id"], token)
        assert approved.status_code == 200, approved.text
        body = approved.json()
        assert body["status"] == "connected" and body["connected_by"] == "local"
        assert _time(body["connected_at"]) >= _time(body["added_at"])
        for response in (
            approve(client, added["id"], token),
            client.get(f"/v1/orgs/{ORG}/connections/{added['id']}/link/{token}"),
            give(client, added["id"], token, value=SECRET),
        ):
            problem(response, 404, "not_found")


def test_an_unknown_token_is_not_found(connections_server: ConnectionsServer) -> None:
    with connections_server.client() as client:
        added, token = add(client, "mcp", {"url": connections_server.fakes.open.url}, {"kind": "none"})
        wrong = token[:-2] + ("aa" if not token.endswith("aa") else "bb")
        problem(client.get(f"/v1/orgs/{ORG}/connections/{added['id']}/link/{wrong}"), 404, "not_found")
        problem(approve(client, added["id"], wrong), 404, "not_found")
        problem(approve(client, "018f0000-0000-7000-8000-000000000000", token), 404, "not_found")
        problem(approve(client, added["id"], token, org="globex"), 404, "not_found")
        assert client.get(f"/v1/orgs/{ORG}/connections/{added['id']}").json()["status"] == "pending"


def test_approve_of_a_credential_to_give_and_give_of_none_conflict(connections_server: ConnectionsServer) -> None:
    url = connections_server.fakes.open.url
    with connections_server.client() as client:
        secret, secret_token = add(client, "mcp", {"url": url}, {"kind": "secret", "name": "X-Api-Key", "in": "header"})
        problem(approve(client, secret["id"], secret_token), 409, "conflict")
        none, none_token = add(client, "mcp", {"url": url}, {"kind": "none"})
        problem(give(client, none["id"], none_token, value=SECRET), 409, "conflict")
        reference, reference_token = add(
            client,
            "mcp",
            {"url": url},
            {"kind": "reference", "variable": "CRM_API_KEY", "name": "X-Crm", "in": "header"},
        )
        problem(give(client, reference["id"], reference_token, value=SECRET), 409, "conflict")
        # Neither refusal used the link up.
        assert approve(client, none["id"], none_token).status_code == 200


def test_give_credential_connects_and_shows_only_its_last_four_characters(
    connections_server: ConnectionsServer,
) -> None:
    url = connections_server.fakes.guarded.url
    with connections_server.client() as client:
        connected = secret_connection(client, url)
        assert connected["status"] == "connected" and connected["connected_by"] == "local"
        assert connected["credential_ends_with"] == SECRET[-4:]
        assert connected["credential"] == {"kind": "secret", "name": "X-Api-Key", "in": "header"}
        assert SECRET not in client.get(f"/v1/orgs/{ORG}/connections").text
        short, token = add(client, "mcp", {"url": url}, {"kind": "secret", "name": "X-Api-Key", "in": "header"})
        shown = give(client, short["id"], token, value="short-value")  # 11 characters
        assert shown.status_code == 200 and shown.json()["credential_ends_with"] is None


def test_give_credential_refuses_the_fields_its_kind_does_not_take(connections_server: ConnectionsServer) -> None:
    url = connections_server.fakes.guarded.url
    with connections_server.client() as client:
        added, token = add(client, "mcp", {"url": url}, {"kind": "secret", "name": "X-Api-Key", "in": "header"})
        assert pointers(problem(give(client, added["id"], token), 422, "invalid_input")) == ["/value"]
        body = problem(give(client, added["id"], token, value=SECRET, client_secret=SECRET), 422, "invalid_input")
        assert pointers(body) == ["/client_secret"]
        oauth, oauth_token = add(
            client,
            "mcp",
            {"url": url},
            {"kind": "client_credentials", "issuer": "https://auth.example.com", "client_id": "tools-client"},
        )
        body = problem(give(client, oauth["id"], oauth_token, value=SECRET), 422, "invalid_input")
        assert "/value" in pointers(body)
        body = problem(give(client, oauth["id"], oauth_token, private_key="-----BEGIN"), 422, "invalid_input")
        assert pointers(body) == ["/algorithm"]
        connected = give(client, oauth["id"], oauth_token, client_secret="tools-client-secret-0123")
        assert connected.status_code == 200 and connected.json()["credential_ends_with"] == "0123"


def test_a_connected_connection_is_a_tool_server_of_its_org(connections_server: ConnectionsServer) -> None:
    with connections_server.client() as client:
        name = fresh_name("crm")
        connected = secret_connection(client, connections_server.fakes.guarded.url, name=name)
        playbook = new_playbook_id(client)
        found = client.get(f"/v1/orgs/{ORG}/playbooks/{playbook}/tool-servers/search", params={"server": name})
        assert found.status_code == 200, found.text
        server = found.json()["servers"][0]
        assert server["connection"] == connected["id"] and server["type"] == "mcp" and server["tool_count"] > 0
        one = client.get(f"/v1/orgs/{ORG}/playbooks/{playbook}/tool-servers/{name}/tools/get_customer")
        assert one.status_code == 200 and one.json()["tool"] == "get_customer"
        called = execute(client, playbook, name, "get_customer", {"id": "c-1"})
        assert called.status_code == 200, called.text
        assert called.json()["outcome"] == "result" and called.json()["answer"] == {"id": "c-1", "plan": "pro"}
        org_search = client.get(f"/v1/orgs/{ORG}/tool-servers/search", params={"server": name}).json()
        assert org_search["servers"][0]["playbooks"] == ["*"]
        assert SECRET not in found.text + one.text + called.text


def test_a_reference_credential_sends_the_variables_value(connections_server: ConnectionsServer) -> None:
    with connections_server.client() as client:
        name = fresh_name("ref")
        added, token = add(
            client,
            "mcp",
            {"url": connections_server.fakes.referenced.url},
            {"kind": "reference", "variable": "CRM_API_KEY", "name": "X-Crm-Key", "in": "header"},
            name=name,
        )
        assert approve(client, added["id"], token).status_code == 200
        called = execute(client, new_playbook_id(client), name, "get_customer", {"id": "r-1"})
    assert called.status_code == 200 and called.json()["outcome"] == "result", called.text
    assert REFERENCE_VALUE not in called.text


def test_an_openapi_connection_sends_its_secret_as_the_documents_security_scheme(
    connections_server: ConnectionsServer,
) -> None:
    from tests.fakes.openapi_service import KEY

    billing = connections_server.fakes.billing
    with connections_server.client() as client:
        name = fresh_name("billing")
        added, token = add(
            client,
            "openapi",
            {"document": f"{billing.origin}/openapi.json"},
            {"kind": "secret", "name": "apiKeyAuth", "in": "security"},
            name=name,
        )
        assert give(client, added["id"], token, value=KEY).status_code == 200
        called = execute(client, new_playbook_id(client), name, "listInvoices", {})
    assert called.status_code == 200, called.text
    assert called.json()["outcome"] == "result", called.json()
    assert KEY not in called.text


def test_client_credentials_mint_a_token_from_the_issuer_for_each_call(connections_server: ConnectionsServer) -> None:
    fakes = connections_server.fakes
    minted_before = fakes.oauth.get("/_fake/minted")
    with connections_server.client() as client:
        name = fresh_name("reports")
        added, token = add(
            client,
            "openapi",
            {"document": f"{fakes.billing.origin}/openapi.json", "allowed": ["listReports"]},
            {
                "kind": "client_credentials",
                "issuer": fakes.oauth.origin,
                "client_id": "tools-client",
                "scope": "reports",
            },
            name=name,
        )
        given = give(client, added["id"], token, client_secret="tools-client-secret-0123")
        assert given.status_code == 200 and given.json()["credential_ends_with"] == "0123"
        called = execute(client, new_playbook_id(client), name, "listReports", {})
    assert called.status_code == 200 and called.json()["outcome"] == "result", called.text
    assert fakes.oauth.get("/_fake/minted") != minted_before
    assert "tools-client-secret-0123" not in called.text


def test_the_playbooks_of_an_entry_limit_who_sees_it(connections_server: ConnectionsServer) -> None:
    with connections_server.client() as client:
        chosen, other = new_playbook_id(client), new_playbook_id(client)
        name = fresh_name()
        added, token = add(
            client,
            "mcp",
            {"url": connections_server.fakes.open.url, "playbooks": [chosen]},
            {"kind": "none"},
            name=name,
        )
        assert approve(client, added["id"], token).status_code == 200
        assert execute(client, chosen, name, "get_customer", {"id": "x"}).status_code == 200
        refused = problem(execute(client, other, name, "get_customer", {"id": "x"}), 503, "unavailable")
    assert refused["kind"] == "tool_not_offered" and refused["because"] == "tool_server_not_configured"


def test_a_pending_connection_is_not_offered(connections_server: ConnectionsServer) -> None:
    with connections_server.client() as client:
        name = fresh_name()
        add(client, "mcp", {"url": connections_server.fakes.open.url}, {"kind": "none"}, name=name)
        playbook = new_playbook_id(client)
        refused = problem(execute(client, playbook, name, "get_customer", {}), 503, "unavailable", "tool_not_offered")
        assert refused["because"] == "connection_pending"
        assert "Retry-After" not in execute(client, playbook, name, "get_customer", {}).headers
        for path in ("tools/get_customer", "tools/get_customer/dry-run"):
            method = client.get if path.endswith("customer") else client.post
            kwargs = {} if method == client.get else {"json": {}}
            response = method(f"/v1/orgs/{ORG}/playbooks/{playbook}/tool-servers/{name}/{path}", **kwargs)
            assert problem(response, 503, "unavailable", "tool_not_offered")["because"] == "connection_pending"
        found = client.get(f"/v1/orgs/{ORG}/playbooks/{playbook}/tool-servers/search", params={"server": name}).json()
    server = found["servers"][0]
    assert server["because"] == "connection_pending" and server["unavailable"] == refused["detail"]
    assert "tool_count" not in server


def test_remove_forgets_the_connection_for_good_and_frees_its_name(connections_server: ConnectionsServer) -> None:
    with connections_server.client() as client:
        name = fresh_name()
        connected = secret_connection(client, connections_server.fakes.guarded.url, name=name)
        playbook = new_playbook_id(client)
        assert execute(client, playbook, name, "get_customer", {"id": "1"}).status_code == 200
        removed = client.delete(f"/v1/orgs/{ORG}/connections/{connected['id']}")
        assert removed.status_code == 200, removed.text
        assert removed.json()["status"] == "removed" and removed.json()["credential_ends_with"] is None
        again = client.delete(f"/v1/orgs/{ORG}/connections/{connected['id']}")
        assert again.status_code == 200 and again.json() == removed.json()
        refused = problem(execute(client, playbook, name, "get_customer", {}), 503, "unavailable", "tool_not_offered")
        assert refused["because"] == "tool_server_not_configured"
        renewed, _ = add(client, "mcp", {"url": connections_server.fakes.open.url}, {"kind": "none"}, name=name)
        assert renewed["id"] != connected["id"]
        problem(client.delete(f"/v1/orgs/{ORG}/connections/018f0000-0000-7000-8000-000000000000"), 404, "not_found")


def test_a_name_taken_by_tool_servers_or_a_live_connection_conflicts(connections_server: ConnectionsServer) -> None:
    url = connections_server.fakes.open.url
    with connections_server.client() as client:
        body = {"kind": "mcp", "entry": {"url": url}, "credential": {"kind": "none"}}
        problem(client.post(f"/v1/orgs/{ORG}/connections", json={"name": "helpdesk", **body}), 409, "conflict")
        name = fresh_name()
        add(client, "mcp", {"url": url}, {"kind": "none"}, name=name)
        problem(client.post(f"/v1/orgs/{ORG}/connections", json={"name": name, **body}), 409, "conflict")
        add(client, "mcp", {"url": url}, {"kind": "none"}, name=name, org="globex")  # another org's names are its own


def test_an_org_holds_at_most_fifty_connections(connections_server: ConnectionsServer) -> None:
    org = fresh_name("full")
    url = connections_server.fakes.open.url
    with connections_server.client() as client:
        added = [
            add(client, "mcp", {"url": url}, {"kind": "none"}, name=f"c{index}", org=org)[0] for index in range(50)
        ]
        body = {"name": "one-more", "kind": "mcp", "entry": {"url": url}, "credential": {"kind": "none"}}
        full = problem(client.post(f"/v1/orgs/{org}/connections", json=body), 409, "conflict", "connections_full")
        assert "50" in full["detail"]
        assert client.delete(f"/v1/orgs/{org}/connections/{added[0]['id']}").status_code == 200
        assert client.post(f"/v1/orgs/{org}/connections", json=body).status_code == 201


INVALID_ENTRIES = [
    ({"url": "URL", "headers": {"Authorization": "Bearer abcdefghijklmnop"}}, "/entry/headers/Authorization"),
    ({"url": "URL", "headers": {"X-Token": "plain"}}, "/entry/headers/X-Token"),
    ({"url": "URL", "headers": {"X-Trace": "sk-abcdefghijklmnop"}}, "/entry/headers/X-Trace"),
    ({"url": "URL", "headers": {"X-Tenant": "${TENANT}"}}, "/entry/headers/X-Tenant"),
    ({"url": "http://crm.example.com/mcp"}, "/entry/url"),
    ({"url": "URL", "document": "https://crm.example.com/openapi.json"}, "/entry/document"),
    ({"url": "URL", "headers": {"Content-Type": "text/plain"}}, "/entry/headers/Content-Type"),
    ({"url": "URL", "allowed": ["*"]}, "/entry/allowed/0"),
    ({"url": "URL", "command": "crm"}, "/entry/command"),
    ({}, "/entry"),
]


@pytest.mark.parametrize(("entry", "pointer"), INVALID_ENTRIES)
def test_an_entry_another_entry_would_refuse_is_invalid_input(
    connections_server: ConnectionsServer, entry: dict[str, object], pointer: str
) -> None:
    url = connections_server.fakes.open.url
    entry = {key: url if value == "URL" else value for key, value in entry.items()}
    body = {"name": fresh_name(), "kind": "mcp", "entry": entry, "credential": {"kind": "none"}}
    with connections_server.client() as client:
        refused = problem(client.post(f"/v1/orgs/{ORG}/connections", json=body), 422, "invalid_input")
    assert pointer in pointers(refused), refused


INVALID_CREDENTIALS = [
    ("mcp", {"kind": "password"}, "/credential/kind"),
    ("mcp", {"kind": "none", "name": "X-Api-Key"}, "/credential/name"),
    ("mcp", {"kind": "secret", "in": "header"}, "/credential/name"),
    ("mcp", {"kind": "secret", "name": "X-Api-Key"}, "/credential/in"),
    ("mcp", {"kind": "secret", "name": "api_key", "in": "query"}, "/credential/in"),
    ("mcp", {"kind": "secret", "name": "X-Api-Key", "in": "header", "variable": "CRM_API_KEY"}, "/credential/variable"),
    ("mcp", {"kind": "reference", "name": "X-Api-Key", "in": "header"}, "/credential/variable"),
    ("mcp", {"kind": "client_credentials", "client_id": "c"}, "/credential/issuer"),
    (
        "mcp",
        {"kind": "client_credentials", "issuer": "http://auth.example.com", "client_id": "c"},
        "/credential/issuer",
    ),
    (
        "mcp",
        {"kind": "client_credentials", "issuer": "https://a.example.com", "client_id": "c", "in": "header"},
        "/credential/in",
    ),
    ("mcp", {"kind": "none", "value": "x"}, "/credential/value"),
]


@pytest.mark.parametrize(("kind", "credential", "pointer"), INVALID_CREDENTIALS)
def test_a_credential_its_kind_does_not_take_is_invalid_input(
    connections_server: ConnectionsServer, kind: str, credential: dict[str, object], pointer: str
) -> None:
    body = {
        "name": fresh_name(),
        "kind": kind,
        "entry": {"url": connections_server.fakes.open.url},
        "credential": credential,
    }
    with connections_server.client() as client:
        refused = problem(client.post(f"/v1/orgs/{ORG}/connections", json=body), 422, "invalid_input")
    assert pointer in pointers(refused), refused


def test_an_openapi_connection_takes_query_and_security(connections_server: ConnectionsServer) -> None:
    billing = connections_server.fakes.billing
    with connections_server.client() as client:
        added, _ = add(
            client,
            "openapi",
            {"document": f"{billing.origin}/openapi.json", "base_url": f"{billing.origin}/v2"},
            {"kind": "secret", "name": "api_key", "in": "query"},
        )
    assert added["credential"]["in"] == "query" and added["entry"]["base_url"] == f"{billing.origin}/v2"


@pytest.mark.parametrize("name", ["openai", "Bad_Name", "a--b", "x" * 33])
def test_a_name_an_entry_of_tool_servers_could_not_have_is_invalid_input(
    connections_server: ConnectionsServer, name: str
) -> None:
    body = {
        "name": name,
        "kind": "mcp",
        "entry": {"url": connections_server.fakes.open.url},
        "credential": {"kind": "none"},
    }
    with connections_server.client() as client:
        refused = problem(client.post(f"/v1/orgs/{ORG}/connections", json=body), 422, "invalid_input")
    assert pointers(refused) == ["/name"]


def test_a_document_that_is_not_an_https_or_loopback_url_is_invalid_input(
    connections_server: ConnectionsServer,
) -> None:
    for document in ("http://api.example.com/openapi.json", "openapi.json"):
        body = {
            "name": fresh_name(),
            "kind": "openapi",
            "entry": {"document": document},
            "credential": {"kind": "none"},
        }
        with connections_server.client() as client:
            refused = problem(client.post(f"/v1/orgs/{ORG}/connections", json=body), 422, "invalid_input")
        assert pointers(refused) == ["/entry/document"]
