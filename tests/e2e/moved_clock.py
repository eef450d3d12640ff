"""A real server whose clock the test moves (`TEST_CLOCK`, `auto_runtime.server_clock`), and the moves.

A test that would wait out a limit of the contract (an interaction's expiry of a minute, a delivery's retry
schedule, a reply cadence) starts its server with `TEST_CLOCK_SETTINGS` beside its own, and moves the clock past
the limit instead: `advance(client, "PT1M")` or `set_to(client, moment)`. The server's timers, expiries,
deliveries, reply reads and sweeps follow the clock at once (a move wakes the timer loop), and so do a tool
server's limits (a call's 30 s, a connect's 10 s, its stderr's rate and reports); the sandbox's deadline and
leases do not. The clock only moves forward, and runs at the wall clock's speed between
moves, so a server shared by the tests of a module may have its clock moved by any of them: a test reads times
from the server (`now`) rather than from its own clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path

import httpx

from auto_runtime.clock_text import iso_utc
from auto_runtime.server_clock import TEST_CLOCK_PATH
from auto_runtime.settings import parse_duration
from tests.e2e.server_process import ServerProcess, start_server

TEST_CLOCK_SETTINGS: Mapping[str, str] = {"TEST_CLOCK": "true", "AUTO_RUNTIME_TEST_CLOCK": "1"}
"""What a server needs to take its clock from the test: the setting, and the environment's consent."""


def start_server_with_test_clock(folder: Path, settings: Mapping[str, str] | None = None) -> ServerProcess:
    """`start_server` with `TEST_CLOCK_SETTINGS` beside `settings`."""
    return start_server(folder, {**(settings or {}), **TEST_CLOCK_SETTINGS})


def _moment(answer: httpx.Response) -> datetime:
    assert answer.status_code == 200, answer.text
    return datetime.fromisoformat(str(answer.json()["now"]).replace("Z", "+00:00"))


def now(client: httpx.Client) -> datetime:
    """The server's clock now."""
    return _moment(client.get(TEST_CLOCK_PATH))


def advance(client: httpx.Client, by: str | timedelta) -> datetime:
    """Move the server's clock forward by `by` (`"PT1M"` or a timedelta); its new time."""
    duration = parse_duration(by) if isinstance(by, str) else by
    return _moment(client.post(TEST_CLOCK_PATH, json={"advance": f"PT{duration.total_seconds():f}S"}))


def set_to(client: httpx.Client, moment: datetime) -> datetime:
    """Move the server's clock forward to `moment`; its new time (a moment in its past is refused)."""
    return _moment(client.post(TEST_CLOCK_PATH, json={"set": iso_utc(moment)}))


def past(client: httpx.Client, instant: str, margin: timedelta = timedelta(seconds=1)) -> datetime:
    """Move the server's clock just past `instant` (an ISO 8601 time the server showed, such as an
    `expires_at`), unless it reads later already; its new time."""
    target = datetime.fromisoformat(instant.replace("Z", "+00:00")) + margin
    current = now(client)
    return set_to(client, target) if target > current else current
