"""The security suite's server: one real server process on SQLite per test module, in local mode, so an
attack in one module cannot leave state that another module's checks depend on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.server_process import ServerProcess, start_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder = Path(tmp_path_factory.mktemp("security-server"))
    process = start_server(folder, {"LEDGER_FILE": str(folder / "data" / "ledger.db")})
    yield process
    assert process.stop() == 0, process.log()


@pytest.fixture(scope="module")
def client(server: ServerProcess) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client
