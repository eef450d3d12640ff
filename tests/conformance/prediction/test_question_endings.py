"""prediction-format §12 and §13 through the real server: a question whose active version answers what cannot be
given ends `model_unfit`; one past the model's 10 s ends `unavailable` with `Retry-After: 1`; one whose model
process is killed mid-question ends `unworkable`, `failed_to_run`, and the pool's replacement answers the next.

The versions are built by full cycles, so these run on PostgreSQL (see `test_full_cycle`)."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.conformance.helpers import problem
from tests.conformance.prediction.conftest import PredictionServer
from tests.conformance.prediction.test_builds import _build, _function
from tests.conformance.prediction.test_candidates import _upload
from tests.conformance.prediction.test_full_cycle import _ended, _inbox
from tests.functions.prediction.onnx_models import allocating_past, endless_past, not_finite_past


def _active_version(server: PredictionServer, client: httpx.Client, playbook: str, model: bytes) -> str:
    function = _function(client, playbook)
    run_id = _build(client, function).json()["run_id"]
    digest = _upload(client, playbook, run_id, model).json()["candidate"]
    _inbox(client, playbook, run_id, {"candidates": [digest]})
    assert _ended(client, playbook, run_id)["output"]["state"] == "active"
    return function


def test_an_answer_that_is_not_finite_is_model_unfit(
    prediction_server: PredictionServer, client: httpx.Client, playbook: str
) -> None:
    function = _active_version(prediction_server, client, playbook, not_finite_past(2, [[-1], [2]], 0.5, 11.5))
    response = client.post(f"{function}/run", json={"input": {"series": "a"}})
    body = problem(response, 503, "unavailable", "model_unfit")
    assert body["because"] == "not_finite" and "Retry-After" not in response.headers
    assert client.post(f"{function}/run", json={"input": {"series": "c"}}).status_code == 200


def _model_processes(server_pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parent = next(line for line in status.splitlines() if line.startswith("PPid:")).split()[1]
        if int(parent) == server_pid and b"model_worker" in command:
            found.append(int(entry.name))
    return found


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "R"
    except OSError:
        return False


@pytest.mark.slow(seconds=11)
def test_a_model_past_its_time_and_a_process_killed_mid_question(
    prediction_server: PredictionServer, client: httpx.Client, playbook: str
) -> None:
    function = _active_version(prediction_server, client, playbook, endless_past(2, [[-1], [2]], 0.5, 11.5))
    slow = client.post(f"{function}/run", json={"input": {"series": "a"}})
    problem(slow, 503, "unavailable")
    assert slow.headers["Retry-After"] == "1"
    answers: list[httpx.Response] = []
    asking = threading.Thread(
        target=lambda: answers.append(client.post(f"{function}/run", json={"input": {"series": "a"}}))
    )
    asking.start()
    server_pid = prediction_server.server.process.pid
    killed: list[int] = []
    while not killed:
        for pid in _model_processes(server_pid):
            if _running(pid):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
        time.sleep(0.01)  # a poll of the process table, not a bound: the loop ends on the event
    asking.join()
    body = problem(answers[0], 409, "conflict", "unworkable")
    assert body["because"] == "failed_to_run"
    assert client.post(f"{function}/run", json={"input": {"series": "c"}}).status_code == 200
    assert killed[0] not in _model_processes(server_pid)


def test_a_process_past_its_memory_limit_ends_the_question_out_of_memory(
    prediction_server: PredictionServer, client: httpx.Client, playbook: str
) -> None:
    function = _active_version(prediction_server, client, playbook, allocating_past(2, [[-1], [2]], 0.5, 11.5))
    server_pid = prediction_server.server.process.pid
    assert client.post(f"{function}/run", json={"input": {"series": "c"}}).status_code == 200
    before = set(_model_processes(server_pid))
    body = problem(client.post(f"{function}/run", json={"input": {"series": "a"}}), 409, "conflict", "unworkable")
    assert body["because"] == "out_of_memory"
    assert client.post(f"{function}/run", json={"input": {"series": "c"}}).status_code == 200
    assert set(_model_processes(server_pid)) != before
