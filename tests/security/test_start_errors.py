"""A ledger that cannot be opened at start (issue 14): one line that names the setting and the cause, never a
password, and a non-zero exit, as a setting the server cannot use already is."""

from __future__ import annotations

import base64
import os
import secrets
from pathlib import Path

from tests.e2e.server_process import free_port, run_forked, start_server
from tests.postgres_support import ADMIN_URL, with_database

PASSWORD = "hunter2-secret"


def _settings(**more: str) -> dict[str, str]:
    """The settings of a server started from the command line as a user would, at its own log level."""
    return {"PORT": str(free_port()), "LOG_LEVEL": "error", **more}


def _postgres(url: str) -> dict[str, str]:
    return _settings(DATABASE_URL=url, SECRETS_KEY=base64.b64encode(secrets.token_bytes(32)).decode("ascii"))


def _one_line(folder: Path, settings: dict[str, str]) -> str:
    result = run_forked(folder, "serve", settings=settings)
    assert result.returncode == 1, result.stdout + result.stderr
    output = (result.stdout + result.stderr).strip()
    assert "Traceback" not in output, output
    assert PASSWORD not in output, output
    lines = output.splitlines()
    assert len(lines) == 1, output
    return lines[0]


def test_a_database_url_where_nothing_listens_is_one_line_without_the_password(tmp_path: Path) -> None:
    port = free_port()
    line = _one_line(tmp_path, _postgres(f"postgresql://ledger:{PASSWORD}@127.0.0.1:{port}/ledger"))
    assert line == f"DATABASE_URL: cannot connect to 127.0.0.1:{port} (nothing listens there)"


def test_a_database_that_does_not_exist_on_the_local_postgresql_is_one_line(tmp_path: Path) -> None:
    name = f"missing_{secrets.token_hex(6)}"
    line = _one_line(tmp_path, _postgres(with_database(ADMIN_URL, name)))
    server = ADMIN_URL.split("://", 1)[1].rpartition("@")[2].split("/", 1)[0]
    assert line == f"DATABASE_URL: the database {name} does not exist on {server}"


def test_a_ledger_file_whose_folder_cannot_be_made_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the ledger's folder would be\n")
    ledger_file = blocker / "data" / "ledger.db"
    line = _one_line(tmp_path, _settings(LEDGER_FILE=str(ledger_file)))
    assert line == f"LEDGER_FILE: cannot make the folder {blocker / 'data'} (Not a directory)"


def test_a_ledger_file_in_a_folder_the_server_may_not_write_is_one_line(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        folder = Path("/proc/auto-runtime-ledger")  # not even root may make a folder there
    else:
        folder = tmp_path / "locked"
        folder.mkdir(mode=0o500)
    line = _one_line(tmp_path, _settings(LEDGER_FILE=str(folder / "ledger.db")))
    assert line.startswith(f"LEDGER_FILE: cannot make the folder {folder} ("), line


def test_a_second_server_on_a_ledger_file_in_use_is_one_line_and_the_first_serves_on(tmp_path: Path) -> None:
    ledger_file = tmp_path / "ledger.db"
    first = start_server(tmp_path / "first", {"LEDGER_FILE": str(ledger_file)})
    try:
        (tmp_path / "second").mkdir()
        line = _one_line(tmp_path / "second", _settings(LEDGER_FILE=str(ledger_file)))
        assert line == f"LEDGER_FILE: {ledger_file} is in use by another process (one server per ledger file)"
        with first.client() as client:
            assert client.get("/health").status_code == 200
    finally:
        first.stop()
    again = start_server(tmp_path / "again", {"LEDGER_FILE": str(ledger_file)})  # the file is free once it stopped
    again.stop()
