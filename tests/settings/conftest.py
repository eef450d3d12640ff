from pathlib import Path

import pytest

from tests.settings.start_folder import StartFolder


@pytest.fixture
def start(tmp_path: Path) -> StartFolder:
    folder = tmp_path / "start"
    folder.mkdir()
    return StartFolder(folder)
