"""Servers for the interaction conformance tests: one per ledger (SQLite and PostgreSQL), sweeping often, with a
low `INTERACTION_OPEN_REQUESTS` so a test reaches `requests_full`, and a clock the tests move (`TEST_CLOCK`,
`tests/e2e/moved_clock.py`) so an expiry of a minute is reached without waiting it out."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from tests.e2e.moved_clock import TEST_CLOCK_SETTINGS
from tests.e2e.server_process import ServerProcess, start_server
from tests.postgres_support import fresh_database, server_on

OPEN_REQUESTS = 3


def ledger_settings(stack: ExitStack, ledger_kind: str) -> dict[str, str]:
    settings = {
        "WORKFLOW_SWEEP_INTERVAL": "PT0.05S",
        "INTERACTION_OPEN_REQUESTS": str(OPEN_REQUESTS),
        **TEST_CLOCK_SETTINGS,
    }
    if ledger_kind == "postgres":
        settings.update(server_on(stack.enter_context(fresh_database("interaction_test"))))
    return settings


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def ledger_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def server(ledger_kind: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with ExitStack() as stack:
        process = start_server(
            Path(tmp_path_factory.mktemp(f"interactions-{ledger_kind}")), ledger_settings(stack, ledger_kind)
        )
        yield process
        assert process.stop() == 0, process.log()


@pytest.fixture(scope="module")
def client(server: ServerProcess) -> Iterator[httpx.Client]:
    """Closed at the end of the module: a client left to the garbage collector leaves its sockets unclosed."""
    with server.client() as client:
        yield client
