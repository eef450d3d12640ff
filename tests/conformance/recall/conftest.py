"""The recall conformance tests' client of the shared local server, and a fresh playbook, one of each a test
module."""

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
