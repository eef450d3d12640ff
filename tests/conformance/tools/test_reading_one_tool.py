"""`introspect`, `validate` and `dry_run` (HTTP page "Reading one tool"), end to end through the real server."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conformance.helpers import new_playbook, pointers, problem
from tests.conformance.tools.conftest import ORG, ToolsServer

BIG = {"text": "x" * (16 * 1024)}


def _tool(playbook: str, server: str, tool: str, action: str = "") -> str:
    return f"{playbook}/tool-servers/{server}/tools/{tool}" + (f"/{action}" if action else "")


def _refusal(response: httpx.Response, kind: str, because: str) -> dict[str, Any]:
    body = problem(response, 503, "unavailable", kind)
    assert body["because"] == because, body
    return body


def test_introspect_reads_one_tool_in_full(tools_server: ToolsServer) -> None:
    with tools_server.client() as client:
        playbook = new_playbook(client)
        response = client.get(_tool(playbook, "helpdesk", "get_customer"))
        plain = client.get(_tool(playbook, "helpdesk", "broken"))
        billing = client.get(_tool(playbook, "billing", "getInvoice"))
    assert response.status_code == 200, response.text
    assert response.json() == {
        "server": "helpdesk",
        "tool": "get_customer",
        "description": "Reads a customer by id.",
        "input_schema": {"type": "object", "properties": {"id": {"type": "string"}}, "additionalProperties": True},
        "annotations": {
            "readOnlyHint": True,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": False,
        },
    }
    assert "annotations" not in plain.json()
    invoice = billing.json()
    assert invoice["input_schema"]["properties"]["id"] == {"type": "string"}
    assert invoice["input_schema"]["required"] == ["id"]
    assert invoice["annotations"]["readOnlyHint"] is True


def test_the_refusals_of_the_reads(tools_server: ToolsServer) -> None:
    with tools_server.client() as client:
        playbook = new_playbook(client)
        for method, action, body in (("GET", "", None), ("POST", "validate", {"arguments": {}})):
            unknown = client.request(method, _tool(playbook, "elsewhere", "get_customer", action), json=body)
            _refusal(unknown, "tool_not_offered", "tool_server_not_configured")
            not_allowed = client.request(method, _tool(playbook, "narrow", "broken", action), json=body)
            _refusal(not_allowed, "tool_not_offered", "tool_not_allowed")
            not_listed = client.request(method, _tool(playbook, "helpdesk", "nothing", action), json=body)
            _refusal(not_listed, "tool_not_offered", "tool_not_listed")
            down = client.request(method, _tool(playbook, "down", "anything", action), json=body)
            failed = _refusal(down, "tool_server_failed", "unreachable")
            assert "retry-after" in down.headers and failed["detail"]
        missing = client.get(f"/v1/orgs/{ORG}/playbooks/no-such-playbook/tool-servers/helpdesk/tools/get_customer")
        problem(missing, 404, "not_found")
        assert "retry-after" not in not_listed.headers


def test_validate_reports_each_issue_at_its_pointer(tools_server: ToolsServer) -> None:
    with tools_server.client() as client:
        playbook = new_playbook(client)
        good = client.post(_tool(playbook, "billing", "getInvoice", "validate"), json={"arguments": {"id": "inv-1"}})
        wrong = client.post(_tool(playbook, "billing", "getInvoice", "validate"), json={"arguments": {"id": 42}})
        missing = client.post(_tool(playbook, "billing", "getInvoice", "validate"), json={"arguments": {}})
    assert good.status_code == 200, good.text
    assert good.json() == {"valid": True, "issues": []}
    assert wrong.json() == {"valid": False, "issues": [{"path": "/id", "message": "Expected a string"}]}
    assert missing.json()["valid"] is False
    assert [issue["path"] for issue in missing.json()["issues"]] == ["/id"]


def test_validate_lists_twenty_issues_then_how_many_more(tools_server: ToolsServer) -> None:
    arguments = {"tag": list(range(31))}
    with tools_server.client() as client:
        playbook = new_playbook(client)
        response = client.post(_tool(playbook, "billing", "listInvoices", "validate"), json={"arguments": arguments})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["valid"] is False
    assert len(body["issues"]) == 21
    assert [issue["path"] for issue in body["issues"][:20]] == [f"/tag/{index}" for index in range(20)]
    assert body["issues"][-1] == {"path": "", "message": "11 more issues"}


def test_validate_and_dry_run_take_at_most_sixteen_kib_of_arguments(tools_server: ToolsServer) -> None:
    with tools_server.client() as client:
        playbook = new_playbook(client)
        for action in ("validate", "dry-run"):
            response = client.post(_tool(playbook, "notes", "echo", action), json={"arguments": BIG})
            assert pointers(problem(response, 422, "invalid_input")) == ["/arguments"]
        no_arguments = client.post(_tool(playbook, "notes", "echo", "validate"), json={})
        assert pointers(problem(no_arguments, 422, "invalid_input")) == [""]
        not_object = client.post(_tool(playbook, "notes", "echo", "validate"), json={"arguments": [1]})
        assert pointers(problem(not_object, 422, "invalid_input")) == ["/arguments"]


def test_a_query_string_beside_the_body_is_a_bad_request(tools_server: ToolsServer) -> None:
    with tools_server.client() as client:
        playbook = new_playbook(client)
        for action in ("validate", "dry-run"):
            url = _tool(playbook, "notes", "echo", action) + "?arguments=x"
            problem(client.post(url, json={"arguments": {}}), 400, "bad_request")


def test_dry_run_reports_what_execute_would_check(tools_server: ToolsServer) -> None:
    with tools_server.client() as client:
        playbook = new_playbook(client)
        ready = client.post(_tool(playbook, "notes", "echo", "dry-run"), json={"arguments": {"text": 5}})
        bare = client.post(_tool(playbook, "helpdesk", "create_ticket", "dry-run"))
    assert ready.status_code == 200, ready.text
    assert ready.json() == {
        "would_run": True,
        "needs": "playbook:write",
        "caller_may": True,
        "playbook_retired": False,
        "allowed": True,
        "read_only": True,
        "arguments": {"valid": False, "issues": [{"path": "/text", "message": "Expected a string"}]},
        "server": {"reachable": "yes"},
    }
    body = bare.json()
    assert body["would_run"] is True and body["read_only"] is False and body["arguments"] is None


def test_dry_run_of_a_tool_the_operator_does_not_allow_or_a_server_that_cannot_be_asked(
    tools_server: ToolsServer,
) -> None:
    with tools_server.client() as client:
        playbook = new_playbook(client)
        not_allowed = client.post(_tool(playbook, "narrow", "broken", "dry-run"), json={"arguments": {}})
        down = client.post(_tool(playbook, "down", "anything", "dry-run"), json={"arguments": {"a": 1}})
        not_listed = client.post(_tool(playbook, "helpdesk", "nothing", "dry-run"))
        unknown = client.post(_tool(playbook, "elsewhere", "get_customer", "dry-run"))
    refused = not_allowed.json()
    assert refused["allowed"] is False and refused["would_run"] is False and refused["read_only"] is None
    assert refused["arguments"]["valid"] is None and len(refused["arguments"]["issues"]) == 1
    assert down.status_code == 200, down.text
    failed = down.json()
    assert failed["server"] == {"reachable": "no", "because": "unreachable"}
    assert failed["would_run"] is False and failed["read_only"] is None and failed["allowed"] is True
    assert failed["arguments"]["valid"] is None
    _refusal(not_listed, "tool_not_offered", "tool_not_listed")
    _refusal(unknown, "tool_not_offered", "tool_server_not_configured")


def test_a_retired_playbook_serves_the_reads_and_dry_run_says_it_is_retired(tools_server: ToolsServer) -> None:
    with tools_server.client() as client:
        playbook = new_playbook(client)
        assert client.post(f"{playbook}/retire").status_code == 200
        search = client.get(f"{playbook}/tool-servers/search", params={"server": "notes"})
        introspect = client.get(_tool(playbook, "notes", "echo"))
        dry_run = client.post(_tool(playbook, "notes", "echo", "dry-run"))
        execute = client.post(_tool(playbook, "notes", "echo", "execute"), json={"arguments": {"text": "hi"}})
    assert search.status_code == 200 and introspect.status_code == 200
    assert dry_run.json()["playbook_retired"] is True and dry_run.json()["would_run"] is False
    problem(execute, 409, "conflict", "retired")
