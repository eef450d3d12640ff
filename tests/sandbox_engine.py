"""The `engine` fixture of the test folders that run programs in the sandbox: one `SandboxEngine` a folder
for the session, its compiled module cached in a temporary folder. A folder's conftest imports it."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from auto_runtime.sandbox.engine import SandboxEngine


@pytest.fixture(scope="session")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxEngine]:
    sandbox = SandboxEngine(Path(tmp_path_factory.mktemp("cwasm")))
    yield sandbox
    sandbox.close()
    gc.collect()
