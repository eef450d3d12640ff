"""Issue 32 point 4: one build at a time per function, for real. Twenty builds of one function asked at the same
moment over real HTTP start exactly one; the others are refused `build_in_progress` and record nothing. On one
server (each ledger) the playbook's actor takes the claims one at a time; on two servers sharing one PostgreSQL
database the claim recorded in the build's first append guards it (`playbooks.run_slots`)."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from auto_runtime.functions.prediction.decisions import build_slot
from auto_runtime.ledger import PlaybookScope, open_ledger
from auto_runtime.playbooks.run_slots import SLOT_CLAIMED
from auto_runtime.server import RUNTIME_PROJECTIONS
from tests.conformance.helpers import problem
from tests.conformance.prediction.conftest import PredictionServer
from tests.conformance.prediction.seeding import ORG, seed
from tests.conformance.prediction.test_builds import _function, _history
from tests.e2e.server_process import ServerProcess
from tests.e2e.test_workflow_crashes import kill
from tests.e2e.test_workflow_failover import start_both
from tests.postgres_support import fresh_database, server_on

AT_ONCE = 20
IN_PROGRESS = "A build of the prediction function units has not ended; wait for it or cancel it."


async def _started_at_once(servers: list[ServerProcess], function: str) -> list[httpx.Response]:
    """`AT_ONCE` builds of `function` asked together, spread over `servers` in turn."""
    responses: list[httpx.Response] = []
    clients = [httpx.AsyncClient(base_url=server.base_url, timeout=120) for server in servers]
    try:

        async def build(client: httpx.AsyncClient) -> None:
            responses.append(await client.post(f"{function}/run", json={"input": {"build": {}}}))

        async with trio.open_nursery() as nursery:
            for number in range(AT_ONCE):
                nursery.start_soon(build, clients[number % len(clients)])
    finally:
        for client in clients:
            await client.aclose()
    return responses


def _one_started(responses: list[httpx.Response]) -> str:
    """The run id of the one build started; every other answer is `build_in_progress`."""
    started = [response for response in responses if response.status_code == 200]
    assert len(started) == 1, [(response.status_code, response.text) for response in responses]
    for response in responses:
        if response is not started[0]:
            assert problem(response, 409, "conflict", "build_in_progress")["detail"] == IN_PROGRESS
    run: dict[str, Any] = started[0].json()
    assert run["status"] == "started"
    return str(run["run_id"])


def _slot_claims(server: ServerProcess, database_url: str | None, scope: PlaybookScope) -> list[dict[str, Any]]:
    """The claims recorded on the function's build slot, read beside the server (the SQLite file read-only)."""
    stream = build_slot("units").stream(scope)
    if database_url is None:
        query = "SELECT type, data FROM ledger_records WHERE stream = ? ORDER BY position"
        with closing(sqlite3.connect(f"file:{server.folder / 'ledger.db'}?mode=ro", uri=True)) as conn:
            rows = conn.execute(query, (stream,)).fetchall()
        assert all(kind == SLOT_CLAIMED for kind, _ in rows)
        return [json.loads(data) for _, data in rows]

    async def read() -> list[dict[str, Any]]:
        async with open_ledger(None, database_url, RUNTIME_PROJECTIONS) as ledger:
            records = await ledger.read_stream(stream)
            assert all(record.type == SLOT_CLAIMED for record in records)
            return [dict(record.data) for record in records]

    return trio.run(read)


def _scope(playbook: str) -> PlaybookScope:
    return PlaybookScope(ORG, playbook.rstrip("/").split("/")[-1])


def _only_the_started_build_recorded(client: httpx.Client, playbook: str, run_id: str) -> None:
    runs = client.get(f"{playbook}/runs").json()["runs"]
    assert [run["run_id"] for run in runs] == [run_id]
    kinds = [event["type"] for event in _history(client, playbook, run_id)]
    assert kinds == ["run_started", "dataset_assembled", "baseline_scored", "build_asked"]


def test_twenty_builds_of_one_function_at_once_start_one(
    prediction_server: PredictionServer, client: httpx.Client, playbook: str
) -> None:
    function = _function(client, playbook)
    run_id = _one_started(trio.run(_started_at_once, [prediction_server.server], function))
    _only_the_started_build_recorded(client, playbook, run_id)
    claims = _slot_claims(prediction_server.server, prediction_server.database_url, _scope(playbook))
    assert claims == [{"run_id": run_id}]


@pytest.mark.postgres
def test_twenty_builds_of_one_function_at_once_on_two_servers_start_one(tmp_path: Path) -> None:
    with fresh_database("builds_at_once") as url:
        servers = start_both(tmp_path, server_on(url))
        try:
            with servers[0].client() as client:
                playbook = seed(client)
                function = _function(client, playbook)
                run_id = _one_started(trio.run(_started_at_once, servers, function))
                _only_the_started_build_recorded(client, playbook, run_id)
            assert _slot_claims(servers[0], url, _scope(playbook)) == [{"run_id": run_id}]
            for server in servers:
                assert server.stop() == 0, server.log()
        finally:
            for server in servers:
                kill(server)
