"""Balance (issue 33): two servers on one PostgreSQL split the partitions between them (each its share, none held
twice, each seeing the other), and the one left takes them all when the other stops cleanly.

Every wait is for an event (`GET /v1/status` polled until it says so, within a generous bound); nothing is
timed."""

from __future__ import annotations

import base64
import secrets
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.server_process import ServerProcess, start_server
from tests.e2e.test_status import PARTITIONS, status_of
from tests.postgres_support import fresh_database

pytestmark = pytest.mark.postgres
SETTLE_SECONDS = 60
"""The bound of every wait for the servers to settle (a guard against a hang, never an assertion of speed)."""


def settled(servers: list[ServerProcess], want: dict[str, int]) -> list[dict[str, Any]]:
    """The servers' statuses once each holds `want[server id]` partitions, none held twice, and each sees the
    same servers alive with those counts (polled until then, within `SETTLE_SECONDS`)."""
    deadline = time.monotonic() + SETTLE_SECONDS
    statuses: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        statuses = [status_of(server) for server in servers]
        held = [set(status["partitions"]) for status in statuses]
        expected = sorted(({"server": s, "partitions": n} for s, n in want.items()), key=lambda e: str(e["server"]))
        if (
            all(len(h) == want[s["server"]] for h, s in zip(held, statuses, strict=True))
            and sum(len(h) for h in held) == len(set().union(*held))
            and all(status["servers"] == expected for status in statuses)
        ):
            return statuses
        time.sleep(0.2)
    told = [[line for line in server.log().splitlines() if "partitions held" in line] for server in servers]
    raise AssertionError(f"the servers did not settle on {want}: {statuses}; they told: {told}")


def test_two_servers_split_the_partitions_and_the_one_left_takes_them_all(tmp_path: Path) -> None:
    with fresh_database("status_split") as database_url:
        settings = {
            "DATABASE_URL": database_url,
            "SECRETS_KEY": base64.b64encode(secrets.token_bytes(32)).decode(),
            "WORKFLOW_SWEEP_INTERVAL": "PT0.2S",
        }
        first = start_server(tmp_path / "first", settings)
        second: ServerProcess | None = None
        try:
            alone = status_of(first)["server"]
            settled([first], {alone: PARTITIONS})
            second = start_server(tmp_path / "second", settings)
            other = status_of(second)["server"]
            ids = sorted([alone, other])
            shares = {ids[0]: PARTITIONS // 2, ids[1]: PARTITIONS // 2}
            statuses = settled([first, second], shares)
            assert set(statuses[0]["partitions"]) | set(statuses[1]["partitions"]) == set(range(PARTITIONS))
            assert "partitions held: " in second.log() and f"(32 of {PARTITIONS})" in second.log()
            assert second.stop() == 0, second.log()
            settled([first], {alone: PARTITIONS})
        finally:
            if second is not None:
                second.stop()
            assert first.stop() == 0, first.log()
