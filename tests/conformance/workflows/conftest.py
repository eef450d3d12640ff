"""The workflow conformance tests' client of the shared local server (SQLite and PostgreSQL), one a module.

These tests run faster when the server sweeps often (`WORKFLOW_SWEEP_INTERVAL=PT0.05S`); they pass with the
default 1 s sweep too, since every wait they poll has an overall limit, never a timed assertion.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.conformance.helpers import new_playbook
from tests.e2e.server_process import ServerProcess


@pytest.fixture(scope="module")
def client(local_server: ServerProcess) -> Iterator[httpx.Client]:
    """Closed at the end of the module: a client left to the garbage collector leaves its sockets unclosed."""
    with local_server.client() as client:
        yield client


@pytest.fixture(scope="module")
def playbook(client: httpx.Client) -> str:
    return new_playbook(client)
