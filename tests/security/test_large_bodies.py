"""Large JSON bodies are read off the event loop (issue 37, item 2), through the real server.

- Many 1 MiB bodies nested as deep as they can (brackets half a million deep, and objects of one member each,
  two hundred thousand deep), sent at once to `create_playbook`: a `/health` sent while they are being read is
  answered before the last of them (order, not time), and each of them still gets its refusal
  (`invalid_input` at `/name`, in the words of a name that is not a string).
- A body nested past the depth a body is kept to is refused at the same place and in the same words as
  before: `/input` for a run's input, and a member given twice deep inside is still found at its pointer.
- A small body still reads in place, and a large shallow body reads in a worker: both answer as ever.

The order test's server is this module's own (the security suite's `server` fixture): the attack leaves no
state, and no ledger is involved (the bodies are refused before the ledger is asked).
"""

from __future__ import annotations

import json

import httpx
import pytest

from tests.conformance.helpers import ECHO_PROGRAM, create_computation, new_playbook, pointers, problem
from tests.e2e.server_process import ServerProcess
from tests.security.answer_order import OrderedAnswers, request_bytes

ATTACK_BODIES = 12
"""Enough bodies that reading them takes far longer than a `/health`, two at a time, on a loaded machine."""
SEND_BOUND_SECONDS = 120.0
MAX_JSON_BODY = 1_048_576
NAME_NOT_TEXT = {
    "detail": "name, The name of the playbook, 1 to 100 characters: expected a string.",
    "pointer": "/name",
}


def nested_name_body(playbook: str, size: int = MAX_JSON_BODY) -> bytes:
    """A `create_playbook` body of exactly `size` bytes whose `name` is brackets nested as deep as fits."""
    head, tail = f'{{"playbook": "{playbook}", "name": '.encode(), b"}"
    depth = (size - len(head) - len(tail)) // 2
    return head + b"[" * depth + b"]" * depth + tail


def nested_objects_body(playbook: str, size: int = MAX_JSON_BODY) -> bytes:
    """A `create_playbook` body of at most `size` bytes whose `name` is objects nested as deep as fits, each
    with one member: no run of brackets, so every level is read one at a time."""
    head, tail = f'{{"playbook": "{playbook}", "name": '.encode(), b"}"
    depth = (size - len(head) - len(tail) - 1) // len(b'{"a":}')
    return head + b'{"a":' * depth + b"1" + b"}" * depth + tail


def attack_body(number: int) -> bytes:
    playbook = f"pb-nested-{number}"
    return nested_name_body(playbook) if number % 2 else nested_objects_body(playbook)


@pytest.mark.slow(seconds=8)
def test_health_is_answered_while_nested_bodies_are_read(server: ServerProcess) -> None:
    answers = OrderedAnswers(server.base_url)
    attack = [
        answers.in_background(
            f"attack-{number}",
            request_bytes("POST", "/v1/orgs/acme/playbooks", attack_body(number), "application/json"),
        )
        for number in range(ATTACK_BODIES)
    ]
    for _, sent in attack:
        assert sent.wait(SEND_BOUND_SECONDS)
    health = answers.exchange("health", request_bytes("GET", "/health"))
    for thread, _ in attack:
        thread.join()
    assert health.status == 200 and health.json() == {"status": "ok"}
    for number in range(ATTACK_BODIES):
        refused = answers.answers[f"attack-{number}"]
        assert refused.status == 422, refused.body[:300]
        assert refused.json()["errors"] == [NAME_NOT_TEXT]
    assert answers.position("health") < ATTACK_BODIES, answers.arrived


def test_a_bracket_body_of_a_mebibyte_is_not_a_json_object(client: httpx.Client) -> None:
    depth = MAX_JSON_BODY // 2
    response = client.post(
        "/v1/orgs/acme/playbooks", content=b"[" * depth + b"]" * depth, headers={"Content-Type": "application/json"}
    )
    assert problem(response, 400, "bad_request")["detail"] == "The body is not a JSON object."


def test_a_mebibyte_deep_run_input_is_refused_at_input(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    create_computation(client, playbook, "echo", ECHO_PROGRAM)
    head, tail = b'{"input": ', b"}"
    depth = (MAX_JSON_BODY - len(head) - len(tail)) // 2
    response = client.post(
        f"{playbook}/definitions/computation/echo/run",
        content=head + b"[" * depth + b"]" * depth + tail,
        headers={"Content-Type": "application/json"},
    )
    body = problem(response, 422, "invalid_input")
    assert pointers(body) == ["/input"]
    assert body["errors"][0]["detail"] == "input: expected at most 512 levels of nesting."


def test_a_member_given_twice_below_the_kept_depth_is_found_at_its_pointer(client: httpx.Client) -> None:
    depth = 100_000
    text = '{"playbook": "pb-twice-deep", "name": ' + "[" * depth + '{"a": 1, "a": 2}' + "]" * depth + "}"
    response = client.post(
        "/v1/orgs/acme/playbooks", content=text.encode(), headers={"Content-Type": "application/json"}
    )
    body = problem(response, 400, "bad_request")
    assert body["detail"].startswith("The field a is given more than once, at /name/0/0/")
    assert client.get("/v1/orgs/acme/playbooks/pb-twice-deep").status_code == 404


def test_a_large_shallow_body_reads_as_ever(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    create_computation(client, playbook, "echo", ECHO_PROGRAM)
    rows = [{"n": number, "text": "x" * 20} for number in range(4_000)]
    body = json.dumps({"input": {"rows": rows}}).encode()
    assert len(body) > 65_536
    response = client.post(
        f"{playbook}/definitions/computation/echo/run", content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 200, response.text[:300]
    assert response.json()["output"] == {"rows": rows}


def test_an_mcp_body_of_a_mebibyte_is_read_like_a_route_body(client: httpx.Client) -> None:
    """The MCP endpoints read their bodies with the same reader, off the event loop when large: a member given
    twice below the kept depth is still their parse error, at its pointer."""
    depth = 200_000
    body = (
        '{"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {"x": '
        + "[" * depth
        + '{"a": 1, "a": 2}'
        + "]" * depth
        + "}}"
    )
    response = client.post(
        "/mcp",
        content=body.encode(),
        headers={
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": "2025-11-25",
        },
    )
    assert response.status_code == 400, response.text[:300]
    error = response.json()
    assert error["error"]["code"] == -32700
    assert error["error"]["message"].startswith("Parse error: the field a is given more than once, at /params/x/0/0/")
