"""The ledger's files are its owner's alone (issue 14): a ledger folder the server makes is 0700, and
`ledger.db`, its `-wal` and `-shm`, and `secrets.key` beside them are 0600, while a folder the user already had
keeps its mode."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.conformance.helpers import new_playbook
from tests.e2e.server_process import start_server

LEDGER_FILES = ("ledger.db", "ledger.db-wal", "ledger.db-shm", "secrets.key")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.slow(seconds=8)
def test_a_fresh_ledger_folder_is_0700_and_its_files_0600(tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    kept.mkdir(mode=0o755)
    os.chmod(kept, 0o755)
    folder = kept / "made" / "data"
    server = start_server(tmp_path, {"LEDGER_FILE": str(folder / "ledger.db")}, seed_sandbox=False)
    try:
        with server.client() as client:
            new_playbook(client)
        assert _mode(folder) == 0o700
        assert _mode(folder.parent) == 0o700
        assert _mode(kept) == 0o755, "a folder the user had is left as it was"
        for name in LEDGER_FILES:
            assert _mode(folder / name) == 0o600, name
    finally:
        assert server.stop() == 0, server.log()


def test_ledger_files_left_open_by_an_earlier_start_are_narrowed_to_0600(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    ledger_file = folder / "ledger.db"
    server = start_server(tmp_path, {"LEDGER_FILE": str(ledger_file)})
    assert server.stop() == 0, server.log()
    os.chmod(ledger_file, 0o644)
    server = start_server(tmp_path, {"LEDGER_FILE": str(ledger_file)})
    try:
        with server.client() as client:
            new_playbook(client)
        for name in LEDGER_FILES:
            assert _mode(folder / name) == 0o600, name
        assert _mode(folder) == 0o755, "a folder the user had is left as it was"
    finally:
        assert server.stop() == 0, server.log()
