"""Schemathesis against the running server, from its own OpenAPI document: no operation answers 500."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.e2e.server_process import start_server


def test_no_generated_request_gets_a_server_error(tmp_path: Path) -> None:
    server = start_server(tmp_path / "server")
    try:
        result = subprocess.run(
            [
                str(Path(sys.executable).parent / "schemathesis"),
                "run",
                f"{server.base_url}/v1/openapi.json",
                "--checks",
                "not_a_server_error",
                "--max-examples",
                "10",
                "--seed",
                "1",
                "--request-timeout",
                "30",
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=600,
            check=False,
        )
    finally:
        code = server.stop()
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert code == 0
