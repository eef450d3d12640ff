"""The recall conformance tests' client of the shared local server, and a fresh playbook, one of each a test
module."""

from __future__ import annotations

import httpx
import pytest

from tests.conformance.helpers import new_playbook
from tests.e2e.server_process import ServerProcess


@pytest.fixture(scope="module")
def client(local_server: ServerProcess) -> httpx.Client:
    return local_server.client()


@pytest.fixture(scope="module")
def playbook(client: httpx.Client) -> str:
    return new_playbook(client)
