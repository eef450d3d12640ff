"""`TEST_CLOCK` through a real server (`auto_runtime.server_clock`, `http/test_clock_route.py`): the control route
reads the clock and moves it forward only, the banner and the log name it, a workflow's timer follows it, a start
without the environment's consent is refused in one line, and a server without it has no such route.

On SQLite alone: the ledger is not the subject here; the expiries and schedules that follow the clock run on both
ledgers in tests/conformance/interactions and tests/conformance/prediction."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from auto_runtime.clock_text import iso_utc
from auto_runtime.server import run_server
from auto_runtime.server_clock import TEST_CLOCK_PATH
from auto_runtime.start_banner import TEST_CLOCK_LINE
from tests.conformance.helpers import new_playbook
from tests.conformance.workflows.flows import POLL_LIMIT_S, saved, workflow
from tests.e2e.moved_clock import advance, now, set_to, start_server_with_test_clock
from tests.e2e.server_process import ServerProcess

HOUR = timedelta(hours=1)
NAPPING = workflow("""
do:
  - nap: { wait: PT1H }
  - woke: { set: { woke: true } }
""")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder = Path(tmp_path_factory.mktemp("moved-clock"))
    process = start_server_with_test_clock(folder, {"WORKFLOW_SWEEP_INTERVAL": "PT0.05S"})
    yield process
    assert process.stop() == 0, process.log()


@pytest.fixture
def client(server: ServerProcess) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client


def refused(response: httpx.Response, status: int, reason: str) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    problem: dict[str, Any] = response.json()
    assert problem["reason"] == reason, problem
    return str(problem["detail"])


def test_the_route_reads_the_clock_and_moves_it_forward_by_a_duration_or_to_an_instant(client: httpx.Client) -> None:
    before = now(client)
    assert advance(client, "PT1H") >= before + HOUR
    target = before + timedelta(days=2)
    assert set_to(client, target) >= target
    assert now(client) >= target


def test_the_route_refuses_a_move_back_a_body_it_cannot_read_another_method_and_a_page(client: httpx.Client) -> None:
    reading = now(client)
    back = client.post(TEST_CLOCK_PATH, json={"set": iso_utc(reading - HOUR)})
    assert refused(back, 400, "bad_request").endswith("; the test clock only moves forward.")
    assert refused(client.post(TEST_CLOCK_PATH, json={"advance": "soon"}), 400, "bad_request") == (
        "advance: 'soon' is not an ISO 8601 duration"
    )
    assert refused(client.post(TEST_CLOCK_PATH, json={"set": "tomorrow"}), 400, "bad_request") == (
        "set: 'tomorrow' is not an ISO 8601 instant"
    )
    assert refused(client.post(TEST_CLOCK_PATH, json={"advance": 60}), 400, "bad_request") == (
        "advance: expects a string"
    )
    for body in ([], {"advance": "PT1M", "set": iso_utc(reading)}, {"forward": "PT1M"}):
        assert refused(client.post(TEST_CLOCK_PATH, json=body), 400, "bad_request").startswith('Send {"advance"')
    assert refused(client.post(TEST_CLOCK_PATH, content=b"x" * 2048), 400, "bad_request").startswith("Send")
    refused(client.put(TEST_CLOCK_PATH, json={"advance": "PT1M"}), 405, "method_not_allowed")
    page = client.post(TEST_CLOCK_PATH, json={"advance": "P1D"}, headers={"origin": "http://127.0.0.1:9"})
    assert refused(page, 403, "forbidden") == "The test clock is not moved from a page in a browser."
    assert reading <= now(client) < reading + HOUR


def test_the_banner_and_the_log_name_the_test_clock(server: ServerProcess) -> None:
    log = server.log()
    assert f"  {TEST_CLOCK_LINE} {server.base_url}{TEST_CLOCK_PATH}\n" in log
    warnings = [json.loads(line) for line in log.splitlines() if line.startswith("{") and "TEST_CLOCK" in line]
    assert [(entry["level"], entry["message"]) for entry in warnings] == [
        ("warn", f"TEST_CLOCK is on: any caller on this machine may move this server's clock ({TEST_CLOCK_PATH})")
    ]


def moment_of(event: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(str(event["metadata"]["at"]).replace("Z", "+00:00"))


def test_a_workflow_s_timer_fires_once_the_clock_passes_it(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    saved(client, playbook, "napping", NAPPING)
    run_id = str(uuid.uuid4())
    started = client.post(f"{playbook}/definitions/workflow/napping/run", json={"input": None, "run_id": run_id})
    assert started.status_code == 200, started.text
    deadline = time.monotonic() + POLL_LIMIT_S
    waiting: list[dict[str, Any]] = []
    while not waiting:
        assert time.monotonic() < deadline, "the run never waited"
        events = client.get(f"{playbook}/runs/{run_id}/history", params={"limit": 100}).json()["events"]
        waiting = [event for event in events if event["type"] == "step_waiting"]
        time.sleep(0.05)  # a poll of the history, not a bound: the loop ends once the timer is armed
    set_to(client, max(moment_of(waiting[0]) + HOUR, now(client)))
    while (run := client.get(f"{playbook}/runs/{run_id}").json())["status"] == "started":
        assert time.monotonic() < deadline, run
        time.sleep(0.05)  # a poll of the run, not a bound: the loop ends on the run's end
    assert (run["status"], run["output"]) == ("succeeded", {"woke": True}), run
    events = client.get(f"{playbook}/runs/{run_id}/history", params={"limit": 100}).json()["events"]
    finished = next(e for e in events if e["type"] == "step_finished" and e["data"]["name"] == "nap")
    assert moment_of(finished) >= moment_of(waiting[0]) + HOUR - timedelta(minutes=1)


def test_a_start_without_the_environment_s_consent_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`run_server`, which `auto-runtime serve` runs, in this process: it stops before anything is opened."""
    assert run_server({"HOME": str(tmp_path), "TEST_CLOCK": "true"}, tmp_path) == 1
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == (
        "",
        "TEST_CLOCK: a test's setting, refused unless AUTO_RUNTIME_TEST_CLOCK=1 is set beside it\n",
    )


@pytest.mark.parametrize("local_server", ["sqlite"], indirect=True)
def test_a_server_without_the_test_clock_has_no_such_route_and_the_document_names_none(
    local_server: ServerProcess,
) -> None:
    with local_server.client() as client:
        assert client.get(TEST_CLOCK_PATH).status_code == 404
        assert client.post(TEST_CLOCK_PATH, json={"advance": "PT1H"}).status_code in (404, 405)
        document = client.get("/v1/openapi.json").json()
    assert not [path for path in document["paths"] if "_test" in path or "clock" in path]
