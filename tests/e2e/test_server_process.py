"""The server process: /health, a clean stop on SIGTERM, and the local-mode address rule (issue: foundation); and
the tests' own servers, which never outlive the test process that started them."""

from __future__ import annotations

import contextlib
import os
import select
import socket
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

from tests.e2e.server_process import free_port, ports_of_worker, run_command, start_server

ROOT = Path(__file__).resolve().parents[2]
STARTS_A_SERVER_AND_A_FAKE = """
import sys
from pathlib import Path
from tests.e2e.server_process import start_server
from tests.fakes.gateway_process import start_fake_gateway
print(start_server(Path(sys.argv[1])).process.pid, start_fake_gateway().process.pid, flush=True)
sys.stdin.read()
"""
"""A test process of its own: it starts a server (forked) and a fake as the tests do, says their process ids, and
waits."""


def test_health_answers_and_sigterm_stops_the_server_with_exit_0(tmp_path: Path) -> None:
    server = start_server(tmp_path)
    try:
        with server.client() as client:
            response = client.get("/health")
        assert response.status_code == 200
        assert response.json() == {"status": "ok"}
        assert response.headers["cache-control"] == "no-store"
        assert response.headers["link"] == f'<{server.base_url}/.well-known/api-catalog>; rel="api-catalog"'
    finally:
        code = server.stop()
    assert code == 0, server.log()


def test_a_non_loopback_address_without_public_url_or_api_keys_refuses_to_start(tmp_path: Path) -> None:
    result = run_command(tmp_path, "serve", settings={"HOST": "0.0.0.0", "PORT": str(free_port())})
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "PUBLIC_URL" in output and "API_KEYS" in output
    assert len(output.strip().splitlines()) == 1


def test_check_config_prints_the_start_up_lines_and_exits_0(tmp_path: Path) -> None:
    result = run_command(tmp_path, "check-config")
    assert result.returncode == 0, result.stderr


def test_check_config_exits_non_zero_on_a_bad_setting_without_showing_the_value(tmp_path: Path) -> None:
    result = run_command(tmp_path, "check-config", settings={"COMPUTATION_WORKERS": "99999"})
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "COMPUTATION_WORKERS" in output
    assert "99999" not in output


def test_help_is_offered_for_each_command(tmp_path: Path) -> None:
    for command in ("serve", "check-config", "key"):
        result = run_command(tmp_path, command, "--help")
        assert result.returncode == 0
        assert "usage: auto-runtime" in result.stdout


def test_each_worker_has_ports_of_its_own_below_the_ephemeral_range() -> None:
    blocks = [set(ports_of_worker(f"gw{number}")) for number in range(12)]
    assert all(not first & second for index, first in enumerate(blocks) for second in blocks[index + 1 :])
    ephemeral_start = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    assert max(max(block) for block in blocks) < ephemeral_start
    assert free_port() in ports_of_worker(os.environ.get("PYTEST_XDIST_WORKER", "gw0"))


def test_a_port_in_use_is_never_handed_out() -> None:
    block = ports_of_worker(os.environ.get("PYTEST_XDIST_WORKER", "gw0"))
    with ExitStack() as stack:
        taken = set()
        for port in block:
            listener = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            with contextlib.suppress(OSError):
                listener.bind(("127.0.0.1", port))
                taken.add(port)
            if len(taken) == len(block) // 2:
                break
        handed = {free_port() for _ in range(len(block) // 4)}
    assert handed and not handed & taken


def test_a_test_server_and_a_fake_stop_when_the_test_process_that_started_them_dies(tmp_path: Path) -> None:
    with subprocess.Popen(
        [sys.executable, "-c", STARTS_A_SERVER_AND_A_FAKE, str(tmp_path)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    ) as tests:
        assert tests.stdout is not None
        started = [int(pid) for pid in tests.stdout.readline().split()]
        ended = [os.pidfd_open(pid) for pid in started]
        try:
            tests.kill()
            tests.wait()
            for pidfd in ended:
                readable, _, _ = select.select([pidfd], [], [], 60)  # readable once the process has ended
                assert readable == [pidfd], (tmp_path / "server.log").read_text()
        finally:
            for pidfd in ended:
                os.close(pidfd)
    assert (tmp_path / "server.log").read_text().splitlines()[-1] == "Auto Runtime stopped."  # a clean stop
