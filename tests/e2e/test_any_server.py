"""Any server takes any request (issue 33, item 4): two servers on one PostgreSQL, each holding half of the
partitions; workflow starts and sent events for runs of the other server's partitions are answered where they
arrive, at once and never `unavailable`, as the holder would answer them (a run that ended in its first input
answers how it ended), and the holder, woken by `LISTEN/NOTIFY`, applies them: every run ends once. A start that
names no run id is given one in a partition of the server it reached and begun there: no server takes it for
another.

Every wait is for an event (a run's status or `GET /v1/status` polled until it says so, within a generous
bound); nothing is timed."""

from __future__ import annotations

import asyncio
import base64
import secrets
import uuid
from pathlib import Path

import asyncpg
import httpx
import pytest

from auto_runtime.ledger import partition_of
from tests.conformance.helpers import new_playbook
from tests.e2e.server_process import ServerProcess, start_server
from tests.e2e.test_partition_balance import settled
from tests.e2e.test_status import PARTITIONS, status_of
from tests.e2e.test_workflow_crashes import SWEEP, check_callees_once, check_once, history, save_workflows, wait_ended
from tests.postgres_support import fresh_database

pytestmark = pytest.mark.postgres
INSTANT = """document: { dsl: '1.0.3', namespace: anywhere, name: instant, version: '1.0.0' }
do:
  - only: { set: '${ {"n": data["n"] + 1} }' }
"""


def forwarded_keys(database_url: str) -> list[tuple[str, str]]:
    """The due entries the servers recorded for another server's partition (their key's kind, their state)."""

    async def read() -> list[tuple[str, str]]:
        conn = await asyncpg.connect(database_url)
        try:
            rows = await conn.fetch(
                "SELECT split_part(key, ':', 1) AS kind, state FROM ledger_due_work "
                "WHERE key LIKE 'workflow-start:%' OR key LIKE 'workflow-event:%' ORDER BY 1, 2"
            )
        finally:
            await conn.close()
        return [(row["kind"], row["state"]) for row in rows]

    return asyncio.run(read())


def run_in(partitions: set[int]) -> str:
    """A new run id whose partition is one of `partitions`."""
    while True:
        run_id = str(uuid.uuid4())
        if partition_of(run_id, PARTITIONS) in partitions:
            return run_id


def started_at(client: httpx.Client, playbook: str, name: str, run_id: str) -> dict[str, object]:
    """A start answered where it arrived: `200`, never `unavailable`."""
    response = client.post(f"{playbook}/definitions/workflow/{name}/run", json={"input": {"n": 1}, "run_id": run_id})
    assert response.status_code == 200, response.text
    body: dict[str, object] = response.json()
    assert body["run_id"] == run_id
    return body


@pytest.mark.slow(seconds=6)
def test_a_server_takes_starts_and_events_for_runs_of_the_other_servers_partitions(tmp_path: Path) -> None:
    with fresh_database("any_server") as database_url:
        settings = {
            "DATABASE_URL": database_url,
            "SECRETS_KEY": base64.b64encode(secrets.token_bytes(32)).decode(),
            "WORKFLOW_SWEEP_INTERVAL": SWEEP,
        }
        servers: list[ServerProcess] = []
        try:
            servers.append(start_server(tmp_path / "first", settings))
            servers.append(start_server(tmp_path / "second", settings))
            ids = sorted(status_of(server)["server"] for server in servers)
            settled(servers, {ids[0]: PARTITIONS // 2, ids[1]: PARTITIONS // 2})
            held = [set(status_of(server)["partitions"]) for server in servers]
            with servers[0].client() as client:
                playbook = new_playbook(client)
                save_workflows(client, playbook, ("short", "listens"))
                saved = client.post(f"{playbook}/definitions/workflow", json={"name": "instant", "source": INSTANT})
                assert saved.status_code == 201, saved.text

            runs: list[str] = []
            listening: list[tuple[ServerProcess, str]] = []
            stopped: list[str] = []
            for arriving, holder in ((0, 1), (1, 0)):
                with servers[arriving].client() as client:
                    instant = run_in(held[holder])
                    answer = started_at(client, playbook, "instant", instant)
                    assert (answer["status"], answer["output"]) == ("succeeded", {"n": 2})  # it ended in its start
                    short = run_in(held[holder])
                    assert started_at(client, playbook, "short", short)["status"] == "started"
                    listens = run_in(held[holder])
                    assert started_at(client, playbook, "listens", listens)["status"] == "started"
                    cancelled = run_in(held[holder])
                    assert started_at(client, playbook, "listens", cancelled)["status"] == "started"
                    cancel = client.post(f"{playbook}/runs/{cancelled}/cancel", json={"reason": "Not needed."})
                    assert cancel.status_code == 200, cancel.text
                    runs += [instant, short, listens]
                    listening.append((servers[arriving], listens))
                    stopped.append(cancelled)
                    for name, status in (("instant", "succeeded"), ("short", "started")):
                        placed = client.post(f"{playbook}/definitions/workflow/{name}/run", json={"input": {"n": 1}})
                        assert placed.status_code == 200, placed.text
                        assert placed.json()["status"] == status
                        run_id = placed.json()["run_id"]
                        assert partition_of(run_id, PARTITIONS) in held[arriving]  # its own: begun where it arrived
                        runs.append(run_id)

            for arriving, listens in listening:
                with arriving.client() as client:
                    event = {"event": {"type": "com.acme.go", "id": f"go-{listens}", "data": {"n": 7}}}
                    sent = client.post(f"{playbook}/runs/{listens}/events", json=event)
                    assert sent.status_code == 200, sent.text
                    assert sent.json()["run_id"] == listens and sent.json()["event"]["id"] == f"go-{listens}"

            with servers[0].client() as client:
                for run in wait_ended(client, playbook, stopped).values():
                    assert (run["status"], run["rejection"]["reason"]) == ("rejected", "cancelled"), run
                ended = wait_ended(client, playbook, runs)
                assert {run["status"] for run in ended.values()} == {"succeeded"}, ended
                for _, listens in listening:
                    assert ended[listens]["output"] == {"heard": 7}
                for run_id in runs:
                    events = history(client, playbook, run_id)
                    check_once(events)
                    check_callees_once(client, playbook, events)
            # Each start naming a run id of the other server's partition and each event went through the due work of
            # the run's partition, applied by its holder; the starts naming none did not.
            assert forwarded_keys(database_url) == [("workflow-event", "fired")] * 2 + [("workflow-start", "fired")] * 8
        finally:
            for server in servers:
                assert server.stop() == 0, server.log()
