"""What a real server's log says of requests (issue 37, item 11), read from its log file at `LOG_LEVEL=debug` in
JSON: a connection link's token never appears in a request line, and a client that goes away while a large
answer streams is one line, without a traceback."""

from __future__ import annotations

import json
import socket
import struct
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.server_process import ServerProcess, start_server

PLAYBOOK = "/v1/orgs/local/playbooks/log-lines"
BIG_OUTPUT = "---\nlanguage: python\n---\ndef main(input):\n    return 'x' * 900000\n"
LOG_WAIT_SECONDS = 60.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder = Path(tmp_path_factory.mktemp("request-logs"))
    process = start_server(folder, {"LOG_LEVEL": "debug", "LOG_FORMAT": "json"})
    with process.client() as client:
        created = client.post("/v1/orgs/local/playbooks", json={"playbook": "log-lines", "name": "Log lines"})
        assert created.status_code == 201, created.text
    yield process
    assert process.stop() == 0, process.log()


def log_entries(server: ServerProcess) -> list[dict[str, Any]]:
    entries = []
    for line in server.log().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            entries.append({"message": line})
            continue
        entries.append(entry if isinstance(entry, dict) else {"message": line})
    return entries


def wait_for_entries(server: ServerProcess, path: str, count: int = 1, **fields: Any) -> list[dict[str, Any]]:
    """The log entries of `path` with `fields`, once there are `count` (polled within a generous bound)."""
    deadline = time.monotonic() + LOG_WAIT_SECONDS
    while True:
        found = [e for e in log_entries(server) if e.get("path") == path and fields.items() <= e.items()]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def test_a_connection_links_token_is_scrubbed_from_the_request_lines(server: ServerProcess) -> None:
    with server.client() as client:
        added = client.post(
            "/v1/orgs/local/connections",
            json={
                "name": "notes",
                "kind": "mcp",
                "entry": {"url": "https://tools.example/mcp"},
                "credential": {"kind": "none"},
            },
        )
        assert added.status_code == 201, added.text
        connection = added.json()["id"]
        token = urllib.parse.parse_qs(urllib.parse.urlsplit(added.json()["connect"]["url"]).query)["token"][0]
        read = client.get(f"/v1/orgs/local/connections/{connection}/link/{token}")
        assert read.status_code == 200, read.text
        wrong = client.get(f"/v1/orgs/local/connections/{connection}/link/{token[::-1]}")
        assert wrong.status_code == 404
    scrubbed = f"/v1/orgs/local/connections/{connection}/link/[redacted]"
    lines = wait_for_entries(server, scrubbed, 2, level="debug")
    assert [(line["status"], line["message"]) for line in lines] == [
        (200, f"GET {scrubbed} 200"),
        (404, f"GET {scrubbed} 404"),
    ]
    log = server.log()
    assert token not in log and token[::-1] not in log


def test_a_client_that_goes_away_while_a_large_answer_streams_is_one_line_a_request(server: ServerProcess) -> None:
    """The client reads a few bytes of a 900 KB answer through a tiny receive window, with more requests
    pipelined behind it so that the server cannot hand it all to the socket, then resets the connection."""
    with server.client() as client:
        saved = client.post(f"{PLAYBOOK}/definitions/computation", json={"name": "big", "source": BIG_OUTPUT})
        assert saved.status_code == 201, saved.text
        ran = client.post(f"{PLAYBOOK}/definitions/computation/big/run", json={"input": None})
        assert ran.status_code == 200, ran.text
    path = f"{PLAYBOOK}/runs/{ran.json()['run_id']}"
    host, port = urllib.parse.urlsplit(server.base_url).netloc.split(":")
    reader = socket.socket()
    reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
    reader.connect((host, int(port)))
    reader.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode() * 8)
    assert reader.recv(64).startswith(b"HTTP/1.1 200")
    assert not [e for e in log_entries(server) if e.get("path") == path], "the answer is still streaming"
    reader.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    reader.close()

    gone = wait_for_entries(server, path, level="info")
    # One line for each request whose answer was cut: the first, and any pipelined one the server began before it
    # saw the reset (how many depends on when it sees it), never a traceback or a warning.
    assert 1 <= len(gone) <= 8
    assert {line["message"] for line in gone} == {f"GET {path}: the client went away before the answer was sent whole"}
    assert all(line["client_gone"] is True for line in gone)
    entries = log_entries(server)
    assert not [e for e in entries if "exception" in e or "Traceback" in str(e.get("message"))]
    assert not [e for e in entries if e.get("level") in ("warn", "error")]


def test_an_mcp_answer_is_not_written_whole_to_the_log(server: ServerProcess) -> None:
    """At debug, the SSE library would log every chunk of an MCP answer whole; it is kept at info."""
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with server.client() as client:
        response = client.post("/mcp", headers=headers, json=call)
    assert response.status_code == 200 and "list_playbooks" in response.text
    assert wait_for_entries(server, "/mcp", level="debug"), "the request's own line is written"
    entries = log_entries(server)
    assert not [e for e in entries if str(e.get("logger", "")).startswith("sse_starlette")]
    assert not [e for e in entries if "list_playbooks" in str(e.get("message"))]
