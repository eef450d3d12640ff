"""The outermost ASGI callable: requests no route can serve are refused here, before any app reads them.

- A request with both `Content-Length` and `Transfer-Encoding` (or `Content-Length` more than once) frames
  its body in two ways; a server and a proxy in front of it could read different requests from the same bytes.
  It is refused with `400` `bad_request` before any app reads it, and the connection closes after the answer.
  The body the server framed (chunked) is drained first, up to 1 MiB: a refusal sent while the client still
  sends would race Hypercorn's own reading of the bytes that follow, which could lose the answer.
- A WebSocket handshake, on any path: the server serves no WebSocket. It is refused with `400` `bad_request`
  as a problem document (ASGI's `websocket.http.response`), the same on every path, so it tells nothing of the
  routes; a server without that extension refuses the handshake with a bare `403`.

Everything else goes to the wrapped app unchanged.
"""

from __future__ import annotations

from starlette.types import Receive, Scope, Send

from auto_runtime.asgi_messages import AsgiApp, encoded, header_values, json_bytes, send_problem
from auto_runtime.problems import bad_request
from auto_runtime.telemetry import current_request_id

CONFLICTING_FRAMING = (
    "The request frames its body both by Content-Length and by Transfer-Encoding (or gives Content-Length more "
    "than once); send exactly one of them."
)
DRAIN_LIMIT = 1_048_576
NO_WEBSOCKET = "This server serves no WebSocket; send each request as a plain HTTP request."


def conflicting_framing(scope: Scope) -> bool:
    lengths = header_values(scope, "content-length")
    return len(lengths) > 1 or (bool(lengths) and bool(header_values(scope, "transfer-encoding")))


async def refuse_websocket(scope: Scope, receive: Receive, send: Send) -> None:
    """Answers a WebSocket handshake with a `400` problem document, or closes it where that cannot be sent."""
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    if "websocket.http.response" not in scope.get("extensions", {}):
        await send({"type": "websocket.close", "code": 1008})
        return
    rejection = bad_request(NO_WEBSOCKET)
    body = json_bytes(rejection.problem())
    headers = [
        ("content-type", "application/problem+json"),
        ("cache-control", "no-store"),
        ("x-request-id", current_request_id()),
        ("content-length", str(len(body))),
    ]
    await send({"type": "websocket.http.response.start", "status": rejection.status, "headers": encoded(headers)})
    await send({"type": "websocket.http.response.body", "body": body, "more_body": False})


async def drain_body(receive: Receive, limit: int = DRAIN_LIMIT) -> None:
    """Reads and drops the request's body until it ends, the client leaves, or `limit` bytes were read."""
    size = 0
    while size <= limit:
        message = await receive()
        if message["type"] != "http.request":
            return
        size += len(message.get("body", b""))
        if not message.get("more_body", False):
            return


class RequestFraming:
    """Refuses conflicting body framing and WebSocket handshakes; passes everything else to `app`."""

    def __init__(self, app: AsgiApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await refuse_websocket(scope, receive, send)
            return
        if scope["type"] == "http" and conflicting_framing(scope):
            await drain_body(receive)
            extra = [("x-request-id", current_request_id()), ("connection", "close")]
            await send_problem(send, bad_request(CONFLICTING_FRAMING), extra)
            return
        await self.app(scope, receive, send)
