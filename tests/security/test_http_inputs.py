"""Malformed and hostile HTTP inputs get the seeds' problem, never a 500, through the real server.

- A member given twice in a JSON body is `bad_request` at its pointer (both readers: the fast one and the
  iterative one that reads bodies nested past the recursion limit), and in an MCP tool call's arguments.
- Integers longer than the interpreter converts (4,300 digits): in a body, a number too large for a double
  at its pointer; in `limit=` and `days=`, the words of the parameter's bounds.
- A lone surrogate in a text field (a definition's `source`, a playbook's `name`) is `invalid_input` there, and
  so is a list nested past the recursion limit where a text goes.
- `Content-Length` with `Transfer-Encoding: chunked` is `400` and the connection closes (a raw socket: httpx
  sends only one of them).
- A WebSocket handshake on any path is a `400` problem document (raw socket).
"""

from __future__ import annotations

import json
import socket
from typing import Any

import httpx
import pytest

from auto_runtime.problems import cut_text
from tests.conformance.helpers import ECHO_PROGRAM, create_computation, new_playbook, pointers, problem
from tests.e2e.mcp_client import sse_or_json
from tests.e2e.server_process import ServerProcess
from tests.security.liveness import kept_live

HUGE = "9" * 5000
JSON = {"Content-Type": "application/json"}
MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2025-11-25",
}
TOO_LARGE_FOR_A_DOUBLE = "The input holds a number too large for a double."


def post_text(client: httpx.Client, url: str, text: str) -> httpx.Response:
    return client.post(url, content=text.encode("utf-8"), headers=JSON)


def only_issue(body: dict[str, Any]) -> dict[str, str]:
    assert len(body["errors"]) == 1, body
    issue: dict[str, str] = body["errors"][0]
    assert body["detail"] == issue["detail"], body
    return issue


@pytest.fixture(scope="module")
def playbook_url(client: httpx.Client) -> str:
    url = new_playbook(client)
    create_computation(client, url, "echo", ECHO_PROGRAM)
    return url


# A member given twice ----------------------------------------------------------------------------------------


def test_a_top_level_field_given_twice_is_a_bad_request_at_its_pointer(client: httpx.Client) -> None:
    response = post_text(client, "/v1/orgs/acme/playbooks", '{"playbook": "pb-twice", "name": "A", "name": "B"}')
    body = problem(response, 400, "bad_request")
    assert body["type"] == "https://on.auto/problems/bad_request"
    assert body["detail"] == "The field name is given more than once, at /name."
    assert only_issue(body)["pointer"] == "/name"
    assert client.get("/v1/orgs/acme/playbooks/pb-twice").status_code == 404


def test_a_nested_member_given_twice_names_its_whole_pointer(client: httpx.Client, playbook_url: str) -> None:
    text = '{"input": {"rows": [1, {"k~ey/": 1, "k\\u007eey/": 2}]}}'
    response = post_text(client, f"{playbook_url}/definitions/computation/echo/run", text)
    body = problem(response, 400, "bad_request")
    assert only_issue(body)["pointer"] == "/input/rows/1/k~0ey~1"
    assert body["detail"] == "The field k~ey/ is given more than once, at /input/rows/1/k~0ey~1."


def test_a_member_given_twice_past_the_recursion_limit_is_found_by_the_deep_reader(
    client: httpx.Client, playbook_url: str
) -> None:
    depth = 3000
    text = '{"input": ' + "[" * depth + '{"a": 1, "a": 2}' + "]" * depth + "}"
    response = post_text(client, f"{playbook_url}/definitions/computation/echo/run", text)
    body = problem(response, 400, "bad_request")
    pointer = "/input" + "/0" * depth + "/a"
    assert only_issue(body) == {
        "detail": cut_text(f"The field a is given more than once, at {pointer}."),
        "pointer": cut_text(pointer),
    }
    assert body["detail"].startswith("The field a is given more than once, at /input/0/0/") and body["detail"].endswith(
        "…"
    )


def test_the_same_deep_body_without_a_duplicate_is_still_refused_for_its_depth(
    client: httpx.Client, playbook_url: str
) -> None:
    depth = 3000
    text = '{"input": ' + "[" * depth + '{"a": 1, "b": 2}' + "]" * depth + "}"
    response = post_text(client, f"{playbook_url}/definitions/computation/echo/run", text)
    body = problem(response, 422, "invalid_input")
    assert pointers(body) == ["/input"]


def test_a_list_nested_past_the_recursion_limit_where_text_goes_is_refused_at_its_field(client: httpx.Client) -> None:
    depth = 3000
    text = '{"playbook": "pb-deep", "name": ' + "[" * depth + "]" * depth + "}"
    body = problem(post_text(client, "/v1/orgs/acme/playbooks", text), 422, "invalid_input")
    assert only_issue(body) == {
        "detail": "name, The name of the playbook, 1 to 100 characters: expected a string.",
        "pointer": "/name",
    }


def test_nan_is_not_json(client: httpx.Client, playbook_url: str) -> None:
    response = post_text(client, f"{playbook_url}/definitions/computation/echo/run", '{"input": {"a": NaN}}')
    body = problem(response, 400, "bad_request")
    assert body["detail"] == "The body is not JSON: NaN is not a JSON value."


def _mcp_call(client: httpx.Client, path: str, body: str) -> httpx.Response:
    return client.post(path, content=body.encode("utf-8"), headers=MCP_HEADERS)


def test_an_mcp_tool_argument_given_twice_is_the_calls_bad_request(client: httpx.Client, playbook_url: str) -> None:
    playbook = playbook_url.rsplit("/", 1)[1]
    arguments = '{"type": "computation", "name": "echo", "input": {"x": 1, "x": 2}}'
    body = '{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "run_definition", "arguments": '
    response = _mcp_call(client, f"/orgs/acme/playbooks/{playbook}/mcp", body + arguments + "}}")
    assert response.status_code == 200, response.text
    result = sse_or_json(response)["result"]
    assert result["isError"] is True
    refused = json.loads(result["content"][1]["text"])
    assert refused["reason"] == "bad_request" and refused["status"] == 400
    assert refused["errors"] == [{"detail": "The field x is given more than once, at /input/x.", "pointer": "/input/x"}]


def test_an_mcp_envelope_member_given_twice_is_a_parse_error(client: httpx.Client) -> None:
    body = '{"jsonrpc": "2.0", "id": 4, "method": "tools/list", "method": "tools/call", "params": {}}'
    response = _mcp_call(client, "/mcp", body)
    assert response.status_code == 400, response.text
    error = response.json()
    assert error["id"] is None
    assert error["error"]["code"] == -32700
    assert error["error"]["message"] == "Parse error: the field method is given more than once, at /method"


# Integers past the interpreter's conversion limit ------------------------------------------------------------


@pytest.mark.parametrize("sign", ["", "-"])
def test_a_huge_integer_in_a_run_input_is_too_large_for_a_double(
    client: httpx.Client, playbook_url: str, sign: str
) -> None:
    text = '{"input": {"rows": [0, ' + sign + HUGE + "]}}"
    response = post_text(client, f"{playbook_url}/definitions/computation/echo/run", text)
    body = problem(response, 422, "invalid_input")
    assert only_issue(body) == {"detail": TOO_LARGE_FOR_A_DOUBLE, "pointer": "/input/rows/1"}


def test_a_huge_integer_in_event_data_is_too_large_for_a_double(client: httpx.Client) -> None:
    url = new_playbook(client)
    text = '{"event": {"type": "com.acme.checked", "source": "/tests", "data": {"n": ' + HUGE + "}}}"
    body = problem(post_text(client, f"{url}/events", text), 422, "invalid_input")
    assert only_issue(body) == {"detail": TOO_LARGE_FOR_A_DOUBLE, "pointer": "/event/data/n"}
    sent = '{"event": {"type": "com.acme.checked", "data": [1e400]}}'
    run_url = f"{url}/runs/0190a000-0000-7000-8000-000000000000/events"
    body = problem(post_text(client, run_url, sent), 422, "invalid_input")
    assert only_issue(body) == {"detail": TOO_LARGE_FOR_A_DOUBLE, "pointer": "/event/data/0"}


def test_a_huge_integer_in_a_typed_field_is_too_large_for_a_double_not_a_wrong_type(client: httpx.Client) -> None:
    url = new_playbook(client)
    text = '{"reason": ' + HUGE + "}"
    body = problem(
        post_text(client, f"{url}/runs/0190a000-0000-7000-8000-000000000000/cancel", text), 422, "invalid_input"
    )
    assert only_issue(body) == {"detail": TOO_LARGE_FOR_A_DOUBLE, "pointer": "/reason"}


@pytest.mark.parametrize(
    ("query", "detail"),
    [
        (f"limit={HUGE}", "limit, How many items a page holds, 1 to 100: expected at most 100."),
        (f"limit=-{HUGE}", "limit, How many items a page holds, 1 to 100: expected at least 1."),
        ("limit=1000", "limit, How many items a page holds, 1 to 100: expected at most 100."),
    ],
)
def test_a_huge_limit_is_refused_with_the_words_of_its_bounds(
    client: httpx.Client, playbook_url: str, query: str, detail: str
) -> None:
    body = problem(client.get(f"{playbook_url}/runs?{query}"), 422, "invalid_input")
    assert only_issue(body) == {"detail": detail, "pointer": "/limit"}


def test_a_huge_days_is_refused_with_the_words_of_its_values(client: httpx.Client, playbook_url: str) -> None:
    for days in (HUGE, "8"):
        body = problem(client.get(f"{playbook_url}/analytics?days={days}"), 422, "invalid_input")
        assert only_issue(body) == {"detail": "days: expected 7, 14 or 30.", "pointer": "/days"}


def test_leading_zeros_do_not_make_a_small_limit_huge(client: httpx.Client, playbook_url: str) -> None:
    response = client.get(f"{playbook_url}/runs?limit={'0' * 5000}5")
    assert response.status_code == 200, response.text


# Lone surrogates ----------------------------------------------------------------------------------------------

SOURCE_WITH_A_LONE_SURROGATE = (
    '{"name": "lonely", "source": "---\\nlanguage: python\\n---\\ndef main(input):\\n    return \\"\\ud800\\"\\n"}'
)


def test_a_lone_surrogate_in_a_source_is_invalid_input_at_source(client: httpx.Client, playbook_url: str) -> None:
    for method, url in (
        ("POST", f"{playbook_url}/definitions/computation"),
        ("PUT", f"{playbook_url}/definitions/computation/echo"),
    ):
        text = SOURCE_WITH_A_LONE_SURROGATE
        if method == "PUT":
            text = text.replace('"name": "lonely", ', "")
        response = client.request(method, url, content=text.encode("utf-8"), headers=JSON)
        body = problem(response, 422, "invalid_input")
        issue = only_issue(body)
        assert issue["pointer"] == "/source"
        assert issue["detail"].startswith("source, The definition's document")
        assert issue["detail"].endswith(": expected text that is valid Unicode, without a lone surrogate.")
    assert client.get(f"{playbook_url}/definitions/computation/lonely").status_code == 404


def test_a_lone_surrogate_in_other_text_fields_is_refused_there(client: httpx.Client) -> None:
    text = '{"playbook": "pb-lonely", "name": "A\\udc00", "description": "\\ud83d"}'
    body = problem(post_text(client, "/v1/orgs/acme/playbooks", text), 422, "invalid_input")
    assert pointers(body) == ["/description", "/name"]
    for issue in body["errors"]:
        assert issue["detail"].endswith(": expected text that is valid Unicode, without a lone surrogate.")


def test_a_surrogate_pair_is_ordinary_text(client: httpx.Client) -> None:
    text = '{"playbook": "pb-paired", "name": "A \\ud83d\\ude00"}'
    response = post_text(client, "/v1/orgs/acme/playbooks", text)
    assert response.status_code == 201, response.text
    assert response.json()["name"] == "A \U0001f600"


def test_a_lone_surrogate_in_a_run_input_is_refused_in_the_words_of_every_text(
    client: httpx.Client, playbook_url: str
) -> None:
    text = '{"input": {"a": "\\ud800"}}'
    body = problem(post_text(client, f"{playbook_url}/definitions/computation/echo/run", text), 422, "invalid_input")
    assert only_issue(body) == {
        "detail": "input, then a: expected text that is valid Unicode, without a lone surrogate.",
        "pointer": "/input/a",
    }


# Raw HTTP: framing and WebSocket --------------------------------------------------------------------------------


def raw_exchange(server: ServerProcess, request: bytes) -> bytes:
    """Sends `request` on a fresh connection and reads until the server closes it."""
    host, port = server.base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as connection:
        connection.sendall(request)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    return received


def parsed_response(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers, body


def test_content_length_with_chunked_is_refused_and_the_connection_closes(server: ServerProcess) -> None:
    body = b'{"playbook": "pb-smuggled", "name": "Smuggled"}'
    request = (
        b"POST /v1/orgs/acme/playbooks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        + b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n"
        % (len(body), len(body), body)
        + b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    )
    status, headers, answer = parsed_response(raw_exchange(server, request))
    assert status == 400
    assert headers["connection"] == "close"
    assert headers["content-type"] == "application/problem+json"
    assert headers["x-request-id"]
    document = json.loads(answer[: int(headers["content-length"])])
    assert document["reason"] == "bad_request"
    assert document["type"] == "https://on.auto/problems/bad_request"
    assert "Content-Length" in document["detail"] and "Transfer-Encoding" in document["detail"]
    assert b"HTTP/1.1 200" not in answer, "the request after the refused one was served on the same connection"
    with server.client() as client:
        assert client.get("/v1/orgs/acme/playbooks/pb-smuggled").status_code == 404


def test_two_different_content_lengths_are_refused(server: ServerProcess) -> None:
    """Hypercorn's parser refuses these itself, with a bare 400 (the seeds allow one for a malformed request)."""
    request = (
        b"POST /v1/orgs/acme/playbooks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}"
    )
    status, _, _ = parsed_response(raw_exchange(server, request))
    assert status == 400


@pytest.mark.parametrize("path", ["/mcp", "/orgs/x/mcp", "/v1/orgs/acme/playbooks", "/nowhere"])
def test_a_websocket_handshake_gets_a_problem_on_every_path(server: ServerProcess, path: str) -> None:
    request = (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    ).encode("ascii")
    with kept_live(server):
        status, headers, answer = parsed_response(raw_exchange(server, request))
    assert status == 400
    assert headers["content-type"] == "application/problem+json"
    assert headers["x-request-id"]
    document = json.loads(answer)
    assert document == {
        "type": "https://on.auto/problems/bad_request",
        "title": "Bad request",
        "status": 400,
        "detail": "This server serves no WebSocket; send each request as a plain HTTP request.",
        "reason": "bad_request",
    }


@pytest.mark.parametrize("value", [HUGE, '"\\ud800"'])
def test_what_the_mcp_sdks_reader_cannot_read_is_a_parse_error_not_a_failure(client: httpx.Client, value: str) -> None:
    """The SDK reads the body again with pydantic, which cannot hold an integer past its range or a lone
    surrogate; both are its transport refusal, `-32700` under `400`."""
    arguments = '{"x": ' + value + "}"
    body = '{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "list_playbooks", "arguments": '
    response = _mcp_call(client, "/mcp", body + arguments + "}}")
    assert response.status_code == 400, response.text
    error = response.json()
    assert error["id"] is None and error["error"]["code"] == -32700
    assert error["error"]["message"].startswith("Parse error: ")


def test_the_server_log_has_no_incident_from_these_inputs(server: ServerProcess) -> None:
    """Every case above was refused by name, never as an incident (a 500)."""
    assert '"level": "error"' not in server.log(), server.log()[-4000:]


def test_every_integer_query_parameter_has_bounds_that_refuse_the_stand_in() -> None:
    """A query integer too long to convert is read as `BEYOND_EVERY_BOUND`; that is only safe while every integer
    query parameter has a bound (or a list of values) that refuses it: in its schema, or in the operation, as
    `days` (7, 14 or 30), which `test_a_huge_days_is_refused_with_the_words_of_its_values` checks."""
    checked_by_the_operation = {("get_playbook_analytics", "days")}
    from auto_runtime.guides import load_guides
    from auto_runtime.http.request_input import BEYOND_EVERY_BOUND
    from auto_runtime.operations.runtime_catalog import build_catalog
    from auto_runtime.operations.schemas import input_schema_of

    for operation in build_catalog(load_guides()):
        if operation.takes_body:
            continue
        for name, schema in input_schema_of(operation.name, operation.input_model).get("properties", {}).items():
            if schema.get("type") in ("integer", "number") and (operation.name, name) not in checked_by_the_operation:
                bounded = "enum" in schema or ("maximum" in schema and "minimum" in schema)
                assert bounded, f"{operation.name}: {name} has no bounds"
                assert schema.get("maximum", 0) < BEYOND_EVERY_BOUND and schema.get("minimum", 0) > -BEYOND_EVERY_BOUND
