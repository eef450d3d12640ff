"""The seeds' request rules over real HTTP ("Requests and access", "Responses and errors")."""

from __future__ import annotations

import gzip
import json
import socket
from collections.abc import Iterator

import httpx

from tests.e2e.server_process import ServerProcess

PLAYBOOKS = "/v1/orgs/acme/playbooks"


def _problem(response: httpx.Response, status: int, reason: str) -> dict[str, object]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem: dict[str, object] = response.json()
    assert problem["status"] == status
    assert problem["reason"] == reason
    assert problem["type"] == f"https://on.auto/problems/{reason}"
    assert isinstance(problem["title"], str) and problem["title"]
    assert isinstance(problem["detail"], str) and problem["detail"]
    assert response.headers["x-request-id"]
    return problem


def test_a_success_is_json_with_no_store(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        response = client.post(PLAYBOOKS, json={"playbook": "rules-ok", "name": "Rules"})
    assert response.status_code == 201
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["content-type"].startswith("application/json")


def test_a_body_that_is_not_a_json_object_is_400(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        for body in (b"[1, 2]", b'"text"', b"{not json"):
            response = client.post(PLAYBOOKS, content=body, headers={"Content-Type": "application/json"})
            _problem(response, 400, "bad_request")


def test_a_body_that_is_not_json_media_type_is_415(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        response = client.post(
            PLAYBOOKS, content=b'{"playbook": "x15", "name": "n"}', headers={"Content-Type": "text/plain"}
        )
        _problem(response, 415, "unsupported_media_type")
        response = client.post(
            PLAYBOOKS,
            content=b'{"playbook": "x15", "name": "n"}',
            headers={"Content-Type": "application/json; charset=latin-1"},
        )
        _problem(response, 415, "unsupported_media_type")


def test_a_compressed_body_is_415(local_server: ServerProcess) -> None:
    body = gzip.compress(json.dumps({"playbook": "gzipped", "name": "n"}).encode())
    with local_server.client() as client:
        response = client.post(
            PLAYBOOKS, content=body, headers={"Content-Type": "application/json", "Content-Encoding": "gzip"}
        )
    _problem(response, 415, "unsupported_media_type")


def raw_exchange(server: ServerProcess, head: bytes) -> tuple[int, bytes]:
    """Sends a request head alone over a socket and reads the status and body of the answer."""
    host, port = server.base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as connection:
        connection.sendall(head)
        received = b""
        while b"\r\n\r\n" not in received:
            received += connection.recv(65536)
        header_block, _, body = received.partition(b"\r\n\r\n")
        length = int(
            next(
                line.split(b":", 1)[1]
                for line in header_block.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            )
        )
        while len(body) < length:
            body += connection.recv(65536)
    return int(header_block.split(b" ")[1]), body


def test_a_declared_length_over_1_mib_is_413_before_the_body_is_read(local_server: ServerProcess) -> None:
    head = (
        b"POST /v1/orgs/acme/playbooks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: 1048577\r\n\r\n"
    )
    status, body = raw_exchange(local_server, head)
    assert status == 413
    problem = json.loads(body)
    assert problem["reason"] == "content_too_large"
    assert problem["type"] == "https://on.auto/problems/content_too_large"


def test_a_streamed_body_over_1_mib_is_413(local_server: ServerProcess) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"playbook": "big", "name": "'
        for _ in range(1100):
            yield b"x" * 1024
        yield b'"}'

    with local_server.client() as client:
        response = client.post(PLAYBOOKS, content=chunks(), headers={"Content-Type": "application/json"})
    _problem(response, 413, "content_too_large")


def test_a_body_of_exactly_1_mib_is_read(local_server: ServerProcess) -> None:
    prefix = b'{"playbook": "exact-size", "name": "Exact", "description": "'
    suffix = b'"}'
    body = prefix + b" " * (1_048_576 - len(prefix) - len(suffix)) + suffix
    with local_server.client() as client:
        response = client.post(PLAYBOOKS, content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 201, response.text


def test_a_query_beside_a_post_body_is_400(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        response = client.post(PLAYBOOKS + "?include_retired=true", json={"playbook": "q-post", "name": "n"})
    _problem(response, 400, "bad_request")


def test_a_field_given_in_two_places_is_400(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        client.post(PLAYBOOKS, json={"playbook": "twice", "name": "n"})
        response = client.put(PLAYBOOKS + "/twice", json={"playbook": "twice", "name": "n", "description": ""})
        _problem(response, 400, "bad_request")
        response = client.get(PLAYBOOKS + "?include_retired=true&include_retired=false")
        _problem(response, 400, "bad_request")


def test_a_get_with_a_body_is_400(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        response = client.request("GET", PLAYBOOKS, content=b"{}", headers={"Content-Type": "application/json"})
    _problem(response, 400, "bad_request")


def test_an_unsupported_method_is_405_with_allow(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        response = client.delete(PLAYBOOKS)
    _problem(response, 405, "method_not_allowed")
    allowed = {m.strip() for m in response.headers["allow"].split(",")}
    assert {"GET", "POST"} <= allowed


def test_an_unknown_field_is_invalid_input_at_its_pointer(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        response = client.post(PLAYBOOKS, json={"playbook": "unknown-field", "name": "n", "colour": "red"})
    problem = _problem(response, 422, "invalid_input")
    assert problem["errors"] == [{"detail": "colour: unexpected field.", "pointer": "/colour"}]


def test_an_unknown_path_in_local_mode_is_404(local_server: ServerProcess) -> None:
    with local_server.client() as client:
        response = client.get("/v1/nothing-here")
    _problem(response, 404, "not_found")


def test_a_field_name_with_a_lone_surrogate_is_refused_not_a_server_error(local_server: ServerProcess) -> None:
    body = b'{"playbook": "surrogate", "name": "n", "\\ud800x": 1}'
    with local_server.client() as client:
        response = client.post(PLAYBOOKS, content=body, headers={"Content-Type": "application/json"})
    problem = _problem(response, 422, "invalid_input")
    assert problem["errors"][0]["pointer"] == "/\ud800x"
