"""The test clock's control route (`TEST_CLOCK` only): outside the seeds, the OpenAPI document and the MCP tools.

`GET /_test/clock` answers `{"now": ...}`; `POST /_test/clock` with `{"advance": "PT1M"}` (an ISO 8601 duration)
or `{"set": "2026-12-07T16:00:00.000Z"}` (an instant with its offset) moves the clock forward and answers its new
time the same way. Only a caller on this machine is served: a peer that is not a loopback address, a `Host`
that is not a loopback name, or a request with an `Origin` (a page in a browser) gets `403` `forbidden`. A body
that is not such an object, or a move back in time, gets `400` `bad_request`. Every other path goes to the
wrapped app unchanged; a server without `TEST_CLOCK` has no such wrapper, so the path is its app's `404`.
"""

from __future__ import annotations

import ipaddress
import json
from datetime import datetime
from typing import Any

from starlette.types import Receive, Scope, Send

from auto_runtime.asgi_messages import AsgiApp, header_value, json_bytes, send_problem, send_whole
from auto_runtime.auth.access import is_loopback_host
from auto_runtime.clock_text import iso_utc
from auto_runtime.problems import Rejection, bad_request, forbidden
from auto_runtime.server_clock import TEST_CLOCK_PATH, ClockMovedBack, MovableClock
from auto_runtime.settings import parse_duration

BODY_LIMIT = 1024
MOVES = ("advance", "set")


def is_loopback_peer(scope: Scope) -> bool:
    client = scope.get("client")
    if not client:
        return False
    try:
        address = ipaddress.ip_address(str(client[0]))
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def refusal_of_caller(scope: Scope) -> Rejection | None:
    """Why this caller may not reach the clock, or None."""
    host = header_value(scope, "host")
    if not is_loopback_peer(scope) or host is None or not is_loopback_host(host):
        return forbidden("The test clock is moved only from this machine.")
    if header_value(scope, "origin") is not None:
        return forbidden("The test clock is not moved from a page in a browser.")
    return None


async def read_body(receive: Receive) -> bytes | None:
    """The request's body, or None past `BODY_LIMIT` bytes."""
    body = b""
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return body
        body += bytes(message.get("body", b""))
        if len(body) > BODY_LIMIT:
            return None
        if not message.get("more_body", False):
            return body


def move(clock: MovableClock, body: bytes | None) -> datetime:
    """Move `clock` as `body` asks; `Rejection` (bad_request) for anything else."""
    try:
        asked: Any = json.loads(body) if body is not None else None
    except ValueError:
        asked = None
    if not isinstance(asked, dict) or len(asked) != 1 or next(iter(asked)) not in MOVES:
        raise bad_request('Send {"advance": "<ISO 8601 duration>"} or {"set": "<instant with its offset>"}.')
    ((how, value),) = asked.items()
    if not isinstance(value, str):
        raise bad_request(f"{how}: expects a string")
    try:
        if how == "advance":
            return clock.advance(parse_duration(value))
        return clock.set_to(datetime.fromisoformat(value.replace("Z", "+00:00")))
    except ClockMovedBack as error:
        raise bad_request(f"{error}; the test clock only moves forward.") from None
    except ValueError:
        raise bad_request(
            f"{how}: {value!r} is not an ISO 8601 {'duration' if how == 'advance' else 'instant'}"
        ) from None


class TestClockRoute:
    """Serves `TEST_CLOCK_PATH` from `clock`; passes every other request to `app`."""

    __test__ = False  # not a pytest class, whatever its name

    def __init__(self, app: AsgiApp, clock: MovableClock) -> None:
        self.app = app
        self.clock = clock

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != TEST_CLOCK_PATH:
            await self.app(scope, receive, send)
            return
        refusal = refusal_of_caller(scope)
        if refusal is not None:
            await send_problem(send, refusal)
            return
        try:
            if scope["method"] == "GET":
                now = self.clock.now()
            elif scope["method"] == "POST":
                now = move(self.clock, await read_body(receive))
            else:
                raise Rejection("method_not_allowed", "The test clock takes GET and POST.")
        except Rejection as rejection:
            await send_problem(send, rejection)
            return
        headers = [("content-type", "application/json"), ("cache-control", "no-store")]
        await send_whole(send, 200, json_bytes({"now": iso_utc(now)}), headers)
