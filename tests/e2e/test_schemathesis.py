"""Schemathesis against the running server, from its own OpenAPI document: no operation answers 500.

The tool operations answer `unavailable` (503) for a tool no server of the playbook offers, as the seeds say
("Models and tools a function may not use"), so 503 is an expected status of those routes alone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.server_process import start_server

TOOL_ROUTES_CONFIG = """
[[operations]]
include-path-regex = "/tool-servers/"
checks.not_a_server_error.expected-statuses = ["2xx", "3xx", "4xx", "503"]
"""


@pytest.mark.slow(seconds=60)
def test_no_generated_request_gets_a_server_error(tmp_path: Path) -> None:
    config = tmp_path / "schemathesis.toml"
    config.write_text(TOOL_ROUTES_CONFIG)
    server = start_server(tmp_path / "server")
    try:
        result = subprocess.run(
            [
                str(Path(sys.executable).parent / "schemathesis"),
                "--config-file",
                str(config),
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
