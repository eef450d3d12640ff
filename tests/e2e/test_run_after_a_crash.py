"""Seeds, "Retrying under a run id": a run that is `started` without waiting after an interruption, or that
ended `conflict`, has no final result, so a request with its id and input runs it again as a new attempt."""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from pathlib import Path

import httpx

from tests.conformance.helpers import new_playbook, problem
from tests.e2e.server_process import start_server

LOOPING_PROGRAM = """---
language: python
---
def main(input):
    while True:
        pass
"""


def test_a_run_interrupted_by_a_crash_runs_again_under_its_id(tmp_path: Path) -> None:
    folder = tmp_path / "server"
    run_id = str(uuid.uuid4())
    server = start_server(folder)
    with server.client() as client:
        playbook = new_playbook(client)
        response = client.post(f"{playbook}/definitions/computation", json={"name": "spin", "source": LOOPING_PROGRAM})
        assert response.status_code == 201
    body = {"input": {}, "run_id": run_id}
    started = threading.Event()

    def run_until_killed() -> None:
        with httpx.Client(base_url=server.base_url, timeout=60) as client:
            started.set()
            with contextlib.suppress(httpx.TransportError):
                client.post(f"{playbook}/definitions/computation/spin/run", json=body)

    runner = threading.Thread(target=run_until_killed)
    runner.start()
    started.wait()
    with server.client() as client:
        for _ in range(200):
            if client.get(f"{playbook}/runs/{run_id}").status_code == 200:
                break
            time.sleep(0.05)
        assert client.get(f"{playbook}/runs/{run_id}").json()["status"] == "started"
    server.process.kill()
    server.process.wait()
    runner.join()

    again = start_server(folder, port=None)
    try:
        with again.client() as client:
            assert client.get(f"{playbook}/runs/{run_id}").json()["status"] == "started"
            retried = client.post(f"{playbook}/definitions/computation/spin/run", json=body)
            problem(retried, 409, "conflict", kind="unworkable")
            history = client.get(f"{playbook}/runs/{run_id}/history", params={"limit": 100}).json()["events"]
            assert [event["type"] for event in history] == ["run_started", "run_started", "run_rejected"]
            retried_again = client.post(f"{playbook}/definitions/computation/spin/run", json=body)
            problem(retried_again, 409, "conflict", kind="unworkable")
            history = client.get(f"{playbook}/runs/{run_id}/history", params={"limit": 100}).json()["events"]
            assert [event["type"] for event in history].count("run_started") == 3
    finally:
        assert again.stop() == 0
