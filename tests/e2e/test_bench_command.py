"""Issue 35, `auto-runtime bench`: run against a real server for 2 seconds a path, its table read back; the
playbook it made is retired after; a URL that is not loopback, or a `--compare` that names no setting, is
refused before any load is sent."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.server_process import ServerProcess, base_environment

pytestmark = pytest.mark.slow

NUMBERS = r"\s+".join([r"([\d.]+)"] * 5)
ROW = re.compile(r"^(?P<path>GET /health|computation run|3-step workflow run)\s+" + NUMBERS + "$")
PATHS = ["GET /health", "computation run", "3-step workflow run"]


def bench(folder: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "auto_runtime", "bench", *arguments],
        cwd=folder,
        env=base_environment(folder),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_bench_prints_each_path_s_rate_latencies_and_ratio_to_health(
    local_server: ServerProcess, tmp_path: Path
) -> None:
    finished = bench(tmp_path, "--url", local_server.base_url, "--seconds", "2", "--processes", "1")
    assert finished.returncode == 0, finished.stderr
    rows = {}
    for line in finished.stdout.splitlines():
        matched = ROW.match(line)
        if matched:
            rate, p50, p95, p99, ratio = (float(value) for value in matched.groups()[1:])
            rows[matched["path"]] = (rate, p50, p95, p99, ratio)
    assert list(rows) == PATHS, finished.stdout
    for rate, p50, p95, p99, _ in rows.values():
        assert rate > 0
        assert 0 < p50 <= p95 <= p99
    assert rows["GET /health"][4] == 1.0
    assert "[" in finished.stderr and "100%" in finished.stderr  # the progress bar
    with local_server.client() as client:
        listed = client.get("/v1/orgs/bench/playbooks", params={"include_retired": "true"}).json()["playbooks"]
    made = [playbook for playbook in listed if playbook["id"].startswith("bench-")]
    assert made and all(playbook["status"] == "retired" for playbook in made)


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (["--url", "http://192.0.2.1:5555"], "192.0.2.1 is not a loopback address"),
        (["--url", "https://127.0.0.1:5555"], "expects an http URL"),
        (["--url", "http://127.0.0.1:5555/v1"], "without a path"),
        (["--compare", "NOT_A_SETTING=1,2"], "NOT_A_SETTING is not a setting of the server"),
        (["--compare", "COMPUTATION_WORKERS"], "expects KEY=V1,V2"),
        (["--url", "http://127.0.0.1:5555", "--compare", "COMPUTATION_WORKERS=1,2"], "--url measures the server"),
    ],
)
def test_bench_refuses_before_sending_load(tmp_path: Path, arguments: list[str], says: str) -> None:
    finished = bench(tmp_path, *arguments, "--seconds", "1")
    assert finished.returncode == 2
    assert says in finished.stderr
    assert finished.stdout == ""
