"""The test clock's control route refuses a caller that is not on this machine (`http/test_clock_route.py`).

A real socket on this machine always has a loopback peer, so the peers from elsewhere are given as the ASGI scope
Hypercorn would build; the routes seen through a real server are in tests/e2e/test_moved_clock.py."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from starlette.types import Message, Receive, Scope, Send

from auto_runtime.http.test_clock_route import TestClockRoute, is_loopback_peer
from auto_runtime.server_clock import TEST_CLOCK_PATH, MovableClock


async def never_reached(scope: Scope, receive: Receive, send: Send) -> None:
    raise AssertionError("the clock's path went to the app")


def scope_of(peer: str, host: str = "127.0.0.1:5555", method: str = "POST") -> dict[str, Any]:
    return {
        "type": "http",
        "method": method,
        "path": TEST_CLOCK_PATH,
        "client": (peer, 40000),
        "headers": [(b"host", host.encode()), (b"content-type", b"application/json")],
    }


async def answer_of(route: TestClockRoute, scope: dict[str, Any], body: bytes) -> tuple[int, dict[str, Any]]:
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await route(scope, receive, send)
    return int(sent[0]["status"]), json.loads(sent[1]["body"])


@pytest.mark.parametrize(
    ("peer", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),
        ("10.0.0.7", False),
        ("::ffff:10.0.0.7", False),
        ("2001:db8::1", False),
        ("not-an-address", False),
    ],
)
def test_only_a_loopback_peer_is_on_this_machine(peer: str, loopback: bool) -> None:
    assert is_loopback_peer(scope_of(peer)) is loopback


async def test_a_caller_from_elsewhere_or_through_another_name_is_forbidden_and_moves_nothing() -> None:
    clock = MovableClock()
    route = TestClockRoute(never_reached, clock)
    before = clock.now()
    for scope in (scope_of("10.0.0.7"), scope_of("127.0.0.1", host="clock.example.com")):
        status, problem = await answer_of(route, scope, b'{"advance": "PT1H"}')
        assert (status, problem["reason"]) == (403, "forbidden")
        assert problem["detail"] == "The test clock is moved only from this machine."
    assert clock.now() - before < timedelta(minutes=30)
    status, moved = await answer_of(route, scope_of("::1", host="[::1]:5555"), b'{"advance": "PT1H"}')
    assert status == 200 and clock.now() - before >= timedelta(hours=1), moved
