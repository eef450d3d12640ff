from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.server_process import ServerProcess, start_server


@pytest.fixture(scope="session")
def local_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One server in local mode with the SQLite ledger, shared by the tests that only read or add."""
    server = start_server(Path(tmp_path_factory.mktemp("local-server")))
    yield server
    assert server.stop() == 0, server.log()
