"""`search` on a playbook and on the org (HTTP page "Searching the tools"), end to end through the real server."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conformance.helpers import new_playbook, pointers, problem
from tests.conformance.tools.conftest import MANY, ORG, SALES, ToolsServer

ACME_SERVERS = ["billing", "down", "helpdesk", "narrow", "notes"]


def _search(client: httpx.Client, playbook_url: str, **params: str) -> dict[str, Any]:
    response = client.get(f"{playbook_url}/tool-servers/search", params=params)
    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    body: dict[str, Any] = response.json()
    return body


def test_the_playbook_search_lists_its_servers_sorted_with_their_fields(tools_server: ToolsServer) -> None:
    with tools_server.client() as client:
        playbook = new_playbook(client)
        body = _search(client, playbook)
    assert set(body) == {"servers", "tools", "scopes"}
    names = [server["name"] for server in body["servers"]]
    assert names == ACME_SERVERS
    assert body["scopes"] == ACME_SERVERS
    by_name = {server["name"]: server for server in body["servers"]}
    assert by_name["helpdesk"] == {"name": "helpdesk", "type": "mcp", "record_content": True, "tool_count": 8}
    assert by_name["narrow"] == {"name": "narrow", "type": "mcp", "record_content": False, "tool_count": 1}
    assert by_name["notes"]["type"] == "stdio" and by_name["notes"]["tool_count"] == 6
    assert by_name["billing"]["type"] == "openapi" and by_name["billing"]["tool_count"] > 10
    down = by_name["down"]
    assert set(down) == {"name", "type", "record_content", "unavailable", "because"}
    assert down["because"] == "unreachable"
    assert down["unavailable"].startswith("The tool server down could not be used: ")
    assert len(down["unavailable"].encode()) <= 1024
    assert "playbooks" not in by_name["helpdesk"]


def test_without_terms_every_tool_is_listed_in_server_order(tools_server: ToolsServer) -> None:
    with tools_server.client() as client:
        body = _search(client, new_playbook(client))
    tools = body["tools"]
    total = sum(server.get("tool_count", 0) for server in body["servers"])
    assert len(tools) == total <= 100
    servers_in_order = [tool["server"] for tool in tools]
    assert servers_in_order == sorted(servers_in_order, key=ACME_SERVERS.index)
    helpdesk = [tool["tool"] for tool in tools if tool["server"] == "helpdesk"]
    assert helpdesk[:3] == ["get_customer", "create_ticket", "broken"]
    first = next(tool for tool in tools if tool["server"] == "helpdesk")
    summary = "Reads a customer by id."
    assert first == {"server": "helpdesk", "tool": "get_customer", "summary": summary, "read_only": True}
    assert [tool["tool"] for tool in tools if tool["server"] == "narrow"] == ["get_customer"]


def test_terms_score_names_then_arguments_then_descriptions(tools_server: ToolsServer) -> None:
    with tools_server.client() as client:
        playbook = new_playbook(client)
        body = _search(client, playbook, terms="invoice")
        assert [(tool["server"], tool["tool"]) for tool in body["tools"]] == [("billing", "getInvoice")]
        ranked = _search(client, playbook, terms="ticket id", server="helpdesk")
        assert [tool["tool"] for tool in ranked["tools"]] == [
            "create_ticket",
            "broken",
            "busy",
            "crash",
            "get_customer",
            "picky",
            "picture",
            "swamped",
        ]
        by_description = _search(client, playbook, terms="opens")
        assert [(t["server"], t["tool"]) for t in by_description["tools"]] == [("helpdesk", "create_ticket")]
        by_argument = _search(client, playbook, terms="TITLE")
        assert [(t["server"], t["tool"]) for t in by_argument["tools"]] == [("helpdesk", "create_ticket")]
        by_parts = _search(client, playbook, terms="customer_GET")
        names = [(t["server"], t["tool"]) for t in by_parts["tools"]]
        assert names[:2] == [("helpdesk", "get_customer"), ("narrow", "get_customer")]
        nothing = _search(client, playbook, terms="zebra")
    assert nothing["tools"] == []
    assert nothing["scopes"] == ACME_SERVERS


def test_only_read_and_only_write_keep_the_tools_by_their_read_only_mark(tools_server: ToolsServer) -> None:
    with tools_server.client() as client:
        playbook = new_playbook(client)
        reads = _search(client, playbook, only="read", server="helpdesk")
        writes = _search(client, playbook, only="write", server="helpdesk")
    assert [tool["tool"] for tool in reads["tools"]] == ["get_customer"]
    assert reads["servers"][0]["tool_count"] == 1
    assert "get_customer" not in [tool["tool"] for tool in writes["tools"]]
    assert writes["servers"][0]["tool_count"] == 7
    assert all(tool["read_only"] is False for tool in writes["tools"])


def test_server_keeps_one_server_and_an_unknown_one_is_refused(tools_server: ToolsServer) -> None:
    with tools_server.client() as client:
        playbook = new_playbook(client)
        body = _search(client, playbook, server="notes")
        assert body["scopes"] == ["notes"] and [s["name"] for s in body["servers"]] == ["notes"]
        assert {tool["server"] for tool in body["tools"]} == {"notes"}
        refused = client.get(f"{playbook}/tool-servers/search", params={"server": "elsewhere"})
        assert pointers(problem(refused, 422, "invalid_input")) == ["/server"]
        sales_only = client.get(f"{playbook}/tool-servers/search", params={"server": "sales-desk"})
        assert pointers(problem(sales_only, 422, "invalid_input")) == ["/server"]


def test_terms_are_at_most_eight_words_of_sixty_four_characters(tools_server: ToolsServer) -> None:
    with tools_server.client() as client:
        playbook = new_playbook(client)
        assert _search(client, playbook, terms=" ".join(["a"] * 8))["scopes"]
        nine = client.get(f"{playbook}/tool-servers/search", params={"terms": " ".join(["a"] * 9)})
        assert pointers(problem(nine, 422, "invalid_input")) == ["/terms"]
        long_word = client.get(f"{playbook}/tool-servers/search", params={"terms": "a" * 65})
        assert pointers(problem(long_word, 422, "invalid_input")) == ["/terms"]
        wrong_only = client.get(f"{playbook}/tool-servers/search", params={"only": "both"})
        assert pointers(problem(wrong_only, 422, "invalid_input")) == ["/only"]


def test_a_playbook_that_does_not_exist_is_not_found(tools_server: ToolsServer) -> None:
    with tools_server.client() as client:
        response = client.get(f"/v1/orgs/{ORG}/playbooks/no-such-playbook/tool-servers/search")
    problem(response, 404, "not_found")


def test_a_playbook_named_by_an_entry_sees_that_entry(tools_server: ToolsServer) -> None:
    with tools_server.client() as client:
        body = _search(client, f"/v1/orgs/{ORG}/playbooks/{SALES}")
    assert "sales-desk" in body["scopes"]
    assert [t["tool"] for t in body["tools"] if t["server"] == "sales-desk"] == ["get_customer"]


def test_the_org_search_covers_every_entry_of_the_org_with_its_playbooks(tools_server: ToolsServer) -> None:
    with tools_server.client() as client:
        response = client.get(f"/v1/orgs/{ORG}/tool-servers/search")
        assert response.status_code == 200, response.text
        body = response.json()
        by_name = {server["name"]: server for server in body["servers"]}
        assert sorted(by_name) == sorted([*ACME_SERVERS, "sales-desk", "crowded"])
        assert by_name["sales-desk"]["playbooks"] == [SALES]
        assert by_name["helpdesk"]["playbooks"] == ["*"]
        assert "elsewhere" not in by_name
        playbook = new_playbook(client)
        one = client.get(f"/v1/orgs/{ORG}/tool-servers/search", params={"playbook": playbook.rsplit("/", 1)[1]})
        assert one.status_code == 200, one.text
        assert one.json()["scopes"] == ACME_SERVERS
        assert all("playbooks" in server for server in one.json()["servers"])
        missing = client.get(f"/v1/orgs/{ORG}/tool-servers/search", params={"playbook": "no-such-playbook"})
        problem(missing, 404, "not_found")
        unknown = client.get(f"/v1/orgs/{ORG}/tool-servers/search", params={"server": "elsewhere"})
        assert pointers(problem(unknown, 422, "invalid_input")) == ["/server"]
        other_org = client.get("/v1/orgs/globex/tool-servers/search")
        assert [server["name"] for server in other_org.json()["servers"]] == ["elsewhere"]


def test_nothing_of_an_entry_but_its_name_type_and_record_content_is_shown(tools_server: ToolsServer) -> None:
    with tools_server.client() as client:
        text = client.get(f"/v1/orgs/{ORG}/tool-servers/search").text
    fakes = tools_server.fakes
    for value in (fakes.helpdesk.url, fakes.billing.origin, "mcp_stdio_server", "NOTES_API_KEY", "x-request-id"):
        assert value not in text


def test_more_than_a_hundred_tools_without_terms_lists_only_the_servers(tools_server: ToolsServer) -> None:
    with tools_server.client() as client:
        playbook = f"/v1/orgs/{ORG}/playbooks/{MANY}"
        body = _search(client, playbook)
        counts = {server["name"]: server.get("tool_count") for server in body["servers"]}
        searched = _search(client, playbook, terms="extra")
        one_server = _search(client, playbook, server="crowded", only="read")
    assert body["tools"] == []
    assert counts["crowded"] == 128 and counts["helpdesk"] == 8
    assert len(searched["tools"]) == 100
    assert [tool["tool"] for tool in searched["tools"][:3]] == ["extra_1", "extra_10", "extra_100"]
    assert [tool["tool"] for tool in one_server["tools"]] == ["get_customer"]
