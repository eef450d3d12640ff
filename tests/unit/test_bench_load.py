"""The load generator's fresh UUIDs (`auto_runtime.bench.load`, `Route.fresh_uuids`): each request sent carries a
new UUID where its body holds `FRESH_UUID`, and its `Content-Length` still holds. Driven against a loopback HTTP
server that answers each request's body."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from auto_runtime.bench.load import FRESH_UUID, Route, load_answers


class Echo(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def echo_port() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("fresh", [True, False])
def test_each_request_carries_a_new_uuid_only_when_asked(echo_port: int, fresh: bool) -> None:
    body = b'{"run_id": "' + FRESH_UUID + b'"}'
    route = Route("echo", "POST", "/", body, 200, fresh_uuids=fresh)
    answers = load_answers(echo_port, route, processes=1, connections=2, seconds=60, requests=6, keep=True)
    echoed = [kept for answer in answers for _, kept in answer.kept]
    assert len(echoed) == 6
    ids = {uuid.UUID(text[len(b'{"run_id": "') : -2].decode()) for text in echoed}
    if fresh:
        assert len(ids) == 6 and all(found.version == 4 for found in ids)
    else:
        assert ids == {uuid.UUID(FRESH_UUID.decode())}
