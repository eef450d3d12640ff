"""A full disk is a passing fault (issue 14): with the SQLite ledger on a small tmpfs that a filler file fills,
appends answer `unavailable` with `Retry-After`, reads and `/health` keep answering, the workflow host's loops
wait instead of ending (no restart, no escalation that stops the process), and once the filler is gone the
server takes writes again by itself, with every write it acknowledged before still readable. A server started
on a full disk says so in one line and exits non-zero."""

from __future__ import annotations

import base64
import secrets
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.conformance.helpers import ECHO_PROGRAM, create_computation, new_playbook, problem
from tests.e2e.server_process import ServerProcess, free_port, run_forked, start_server
from tests.security.small_disk import fill, postgres_on, small_disk

DISK_SIZE = "24m"
BIG_TEXT = "x" * 250_000
"""A run of this input records it twice (input and output): more than the WAL can take in what it has left."""
ATTEMPTS = 60
"""A full disk may still take a few writes into space SQLite's files already hold; past these, none fits."""
LOG_WAIT_SECONDS = 60.0
LOOP_WAITS = "the workflow timer loop: the ledger cannot take writes"
LOOP_GOES_ON = "the workflow timer loop: the ledger takes writes again"


def _run(client: httpx.Client, run_url: str, value: object) -> tuple[str, httpx.Response]:
    run_id = str(uuid.uuid4())
    return run_id, client.post(run_url, json={"input": value, "run_id": run_id})


def _wait_for_log(server: ServerProcess, text: str) -> None:
    """Wait until the server logged `text` (the event), bounded generously as a liveness check."""
    deadline = time.monotonic() + LOG_WAIT_SECONDS
    while text not in server.log():
        assert server.process.poll() is None, f"the server exited:\n{server.log()}"
        assert time.monotonic() < deadline, f"the server never logged {text!r}:\n{server.log()}"
        time.sleep(0.05)


def _until_refused(
    attempt: Callable[[], tuple[str, httpx.Response]], acknowledged: dict[str, object]
) -> httpx.Response:
    """Make writes until one is refused; every write answered as taken is kept to read back later."""
    for _ in range(ATTEMPTS):
        run_id, response = attempt()
        if response.status_code != 200:
            return response
        acknowledged[run_id] = response.json()["output"]
    raise AssertionError(f"{ATTEMPTS} writes on a full disk were all taken")


def _playbooks_until_refused(client: httpx.Client) -> httpx.Response:
    """Create playbooks until one is refused: a small write may still fit in pages a table already holds (on
    PostgreSQL, pages a refused write's rolled-back transaction left behind)."""
    for _ in range(ATTEMPTS):
        created = client.post(
            "/v1/orgs/acme/playbooks", json={"playbook": f"pb-{uuid.uuid4().hex[:10]}", "name": "Full"}
        )
        if created.status_code != 201:
            return created
    raise AssertionError(f"{ATTEMPTS} playbooks were created on a full disk")


def _unavailable_with_retry_after(response: httpx.Response) -> None:
    body = problem(response, 503, "unavailable")
    assert body["type"] == "https://on.auto/problems/unavailable"
    assert "disk" in body["detail"]
    assert response.headers["retry-after"].isdigit(), response.headers


def _read_back(client: httpx.Client, playbook_url: str, acknowledged: dict[str, object]) -> None:
    for run_id, output in acknowledged.items():
        read = client.get(f"{playbook_url}/runs/{run_id}")
        assert read.status_code == 200, read.text
        assert read.json()["output"] == output


def _full_disk_scenario(server: ServerProcess, disk: Path, *, loop_meets_it: bool) -> None:
    """Writes before, while and after the disk is full (see the module). `loop_meets_it`: the store is one where
    the timer loop's own small writes (lease claims) surely fail too, so the test waits for the loop to wait."""
    with server.client() as client:
        playbook_url = new_playbook(client)
        create_computation(client, playbook_url, "echo", ECHO_PROGRAM)
        run_url = f"{playbook_url}/definitions/computation/echo/run"
        acknowledged: dict[str, object] = {}
        for n in range(5):
            run_id, ran = _run(client, run_url, {"n": n})
            assert ran.status_code == 200, ran.text
            acknowledged[run_id] = ran.json()["output"]

        filler = fill(disk)
        refused = _until_refused(lambda: _run(client, run_url, {"text": BIG_TEXT}), acknowledged)
        _unavailable_with_retry_after(refused)
        refused = _until_refused(lambda: _run(client, run_url, {"n": "small"}), acknowledged)
        _unavailable_with_retry_after(refused)
        _unavailable_with_retry_after(_playbooks_until_refused(client))

        if loop_meets_it:
            _wait_for_log(server, LOOP_WAITS)
        assert client.get("/health").status_code == 200
        _read_back(client, playbook_url, acknowledged)
        assert server.process.poll() is None, server.log()

        filler.unlink()
        run_id, ran = _run(client, run_url, {"text": BIG_TEXT})
        assert ran.status_code == 200, ran.text
        acknowledged[run_id] = ran.json()["output"]
        assert new_playbook(client)
        if loop_meets_it:
            _wait_for_log(server, LOOP_GOES_ON)
        _read_back(client, playbook_url, acknowledged)
    log = server.log()
    assert "restarting child" not in log, log
    assert "giving up" not in log, log


def test_a_full_disk_refuses_writes_as_unavailable_and_the_server_recovers_when_space_returns(tmp_path: Path) -> None:
    with small_disk(DISK_SIZE) as disk:
        server = start_server(
            tmp_path,
            {"LEDGER_FILE": str(disk / "data" / "ledger.db"), "WORKFLOW_SWEEP_INTERVAL": "PT0.05S"},
        )
        try:
            _full_disk_scenario(server, disk, loop_meets_it=True)
        finally:
            code = server.stop()
        assert code == 0, server.log()


def test_a_full_disk_under_postgresql_is_unavailable_too(tmp_path: Path) -> None:
    """The database's tables in a tablespace on the tmpfs: PostgreSQL answers `disk_full` (SQLSTATE 53100)."""
    with small_disk(DISK_SIZE) as disk, postgres_on(disk) as url:
        secrets_key = base64.b64encode(secrets.token_bytes(32)).decode("ascii")
        server = start_server(tmp_path, {"DATABASE_URL": url, "SECRETS_KEY": secrets_key})
        try:
            _full_disk_scenario(server, disk, loop_meets_it=False)
        finally:
            code = server.stop()
        assert code == 0, server.log()


def test_a_server_started_on_a_full_disk_says_so_in_one_line_and_exits_non_zero(tmp_path: Path) -> None:
    with small_disk("2m") as disk:
        fill(disk)
        ledger_file = disk / "data" / "ledger.db"
        settings = {"LEDGER_FILE": str(ledger_file), "PORT": str(free_port()), "LOG_LEVEL": "error"}
        result = run_forked(tmp_path, "serve", settings=settings)
    assert result.returncode == 1, result.stderr
    output = (result.stdout + result.stderr).strip()
    assert output == f"LEDGER_FILE: the disk of {ledger_file} is full; free some space and start again", output
