"""Issue 35, `auto-runtime bench`: run against a real server for 2 seconds a path, its table read back; the
playbook it made is retired after. Against a server that asks for a key, the key comes from `AUTO_RUNTIME_KEY`
(a key of another org than `--org` is refused by the server, and the command says so). `--compare` starts a
server of its own per value, prints their columns side by side and leaves nothing behind; its first server
starts from the compiled sandbox module the operator's own server keeps. A URL that is not loopback without
`--yes`, or a `--compare` that names no setting, is refused before any load is sent."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from auto_runtime.auth.api_keys import issue_api_key
from auto_runtime.auth.caller import Permission
from auto_runtime.bench.own_server import BenchFolder
from tests.e2e.server_process import ServerProcess, base_environment, start_server
from tests.sandbox_engine import seed_cache

pytestmark = pytest.mark.slow

NUMBERS = r"\s+".join([r"([\d.]+)"] * 5)
ROW = re.compile(r"^(?P<path>GET /health|computation run|3-step workflow run)\s+" + NUMBERS + "$")
PATHS = ["GET /health", "computation run", "3-step workflow run"]


def bench(folder: Path, *arguments: str, settings: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "auto_runtime", "bench", *arguments],
        cwd=folder,
        env=base_environment(folder) | dict(settings or {}),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def rows_of(table: str) -> dict[str, list[tuple[float, float, float, float, float]]]:
    """Each path's groups of figures (rate, p50, p95, p99, ratio), one group a server, read from the table."""
    rows: dict[str, list[tuple[float, float, float, float, float]]] = {}
    for line in table.splitlines():
        path = next((name for name in PATHS if line.startswith(name)), None)
        if path is None:
            continue
        groups = []
        for group in line.removeprefix(path).split("|"):
            rate, p50, p95, p99, ratio = (float(value) for value in group.split())
            groups.append((rate, p50, p95, p99, ratio))
        rows[path] = groups
    return rows


def check_figures(groups: list[tuple[float, float, float, float, float]]) -> None:
    for rate, p50, p95, p99, _ in groups:
        assert rate > 0
        assert 0 < p50 <= p95 <= p99


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


def test_bench_takes_its_key_from_the_environment(tmp_path: Path) -> None:
    key = issue_api_key("acme", [Permission.PLAYBOOK_WRITE, Permission.ORG_WRITE, Permission.ORG_READ])
    server = start_server(tmp_path / "server", {"API_KEYS": json.dumps([json.loads(key.entry_json())])})
    try:
        folder = tmp_path / "bench"
        folder.mkdir()
        environment = {"AUTO_RUNTIME_KEY": key.secret}
        arguments = ("--url", server.base_url, "--seconds", "1", "--processes", "1", "--connections", "2")
        finished = bench(folder, *arguments, "--org", "acme", settings=environment)
        assert finished.returncode == 0, finished.stderr
        rows = rows_of(finished.stdout)
        assert list(rows) == PATHS, finished.stdout
        for groups in rows.values():
            assert len(groups) == 1
            check_figures(groups)
        with server.client(Authorization=f"Bearer {key.secret}") as client:
            listed = client.get("/v1/orgs/acme/playbooks", params={"include_retired": "true"}).json()["playbooks"]
        made = [playbook for playbook in listed if playbook["id"].startswith("bench-")]
        assert len(made) == 1 and made[0]["status"] == "retired"

        other_org = bench(folder, *arguments, settings=environment)  # --org bench: not the key's org
        assert other_org.returncode == 1
        assert "POST /v1/orgs/bench/playbooks: 403" in other_org.stderr
        unkeyed = bench(folder, *arguments, "--org", "acme")
        assert unkeyed.returncode == 1
        assert "POST /v1/orgs/acme/playbooks: 401" in unkeyed.stderr
    finally:
        assert server.stop() == 0, server.log()


@pytest.mark.slow(seconds=15)
def test_bench_compare_prints_a_server_a_value_side_by_side(tmp_path: Path) -> None:
    """Its servers' folder goes under `TMPDIR` and is removed after. The operator's own cache (the home's here,
    without `LEDGER_FILE`) holds the compiled sandbox module, which the first server then loads."""
    seed_cache(tmp_path / ".auto-runtime" / "cache")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    finished = bench(
        tmp_path,
        "--compare",
        "COMPUTATION_WORKERS=1,2",
        "--seconds",
        "1",
        "--processes",
        "1",
        "--connections",
        "2",
        settings={"TMPDIR": str(temporary)},
    )
    assert finished.returncode == 0, finished.stderr
    lines = finished.stdout.splitlines()
    assert lines[0] == "1 load processes x 2 connections, 1 s a path"
    assert [label.strip() for label in lines[1].split("|")] == ["COMPUTATION_WORKERS=1", "COMPUTATION_WORKERS=2"]
    rows = rows_of(finished.stdout)
    assert list(rows) == PATHS, finished.stdout
    for groups in rows.values():
        assert len(groups) == 2
        check_figures(groups)
    assert [group[4] for group in rows["GET /health"]] == [1.0, 1.0]
    assert "COMPUTATION_WORKERS=2: 3-step workflow run" in finished.stderr  # the progress bar's last phase
    assert list(temporary.iterdir()) == []


def test_the_servers_folder_starts_with_the_operator_s_compiled_modules(tmp_path: Path) -> None:
    cache = tmp_path / "state" / "cache"
    cache.mkdir(parents=True)
    (cache / "micropython-abc-64M.cwasm").write_bytes(b"compiled")
    (cache / "tmp1234.partial").write_bytes(b"half")
    place = BenchFolder({"LEDGER_FILE": str(tmp_path / "state" / "ledger.db")})
    try:
        assert [entry.name for entry in (place.path / "cache").iterdir()] == ["micropython-abc-64M.cwasm"]
        assert (place.path / "cache" / "micropython-abc-64M.cwasm").read_bytes() == b"compiled"
    finally:
        place.remove()
    assert not place.path.exists()
    empty = BenchFolder({"LEDGER_FILE": str(tmp_path / "nowhere" / "ledger.db")})
    assert list(empty.path.iterdir()) == []
    empty.remove()
