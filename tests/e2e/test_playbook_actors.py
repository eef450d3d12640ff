"""Issue 15 points 2 and 4 through HTTP on a real server: a playbook's saves take turns in its actor, and a full
mailbox answers `unavailable` with `Retry-After` at once (never a queue that grows, never a hang)."""

from __future__ import annotations

import sqlite3
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path

import httpx

from auto_runtime.operations.dispatcher import OVERLOADED
from tests.conformance.helpers import new_playbook, problem
from tests.e2e.server_process import ServerProcess, start_server

ROUNDS = 50
SENT_AT_ONCE = 5
CAPACITY = 1


def reasoning(n: int) -> str:
    """A reasoning definition (checked on a thread, not on the two save-time checkers) that differs for each n."""
    return f"---\nmodel: anthropic/claude-x\n---\nReply to {{{{ input.ticket }}}} as draft {n}.\n"


def save(client: httpx.Client, playbook: str, n: int) -> httpx.Response:
    return client.put(f"{playbook}/definitions/reasoning/reply", json={"source": reasoning(n)})


def test_two_concurrent_updates_of_one_playbook_fifty_times_make_consecutive_versions(
    local_server: ServerProcess,
) -> None:
    with local_server.client() as client:
        playbook = new_playbook(client)
        created = client.post(f"{playbook}/definitions/reasoning", json={"name": "reply", "source": reasoning(0)})
        assert created.status_code == 201, created.text
    versions: list[int] = []
    with ThreadPoolExecutor(2) as pool, local_server.client() as first, local_server.client() as second:
        for round_ in range(ROUNDS):
            pair = [
                pool.submit(save, first, playbook, 2 * round_ + 1),
                pool.submit(save, second, playbook, 2 * round_ + 2),
            ]
            for future in pair:
                response = future.result()
                assert response.status_code == 200, response.text
                versions.append(response.json()["version"])
    assert sorted(versions) == list(range(2, 2 * ROUNDS + 2))
    with local_server.client() as client:
        latest = client.get(f"{playbook}/definitions/reasoning/reply").json()
    assert latest["version"] == 2 * ROUNDS + 1


def test_a_full_mailbox_answers_unavailable_with_retry_after_and_the_saves_it_took_still_land(tmp_path: Path) -> None:
    """The ledger's file is locked for writing by another connection (a real SQLite lock), so the save the
    playbook's actor is handling waits in its append and the next one waits in its mailbox of one: the other
    saves sent at the same time are refused at once. Once the lock goes, the two it took land. (The ledger's
    writer waits up to its busy timeout, 10 s, for the lock: the refusals come back in milliseconds.)"""
    ledger_file = tmp_path / "ledger.db"
    server = start_server(tmp_path, {"ACTOR_MAILBOX_CAPACITY": str(CAPACITY), "LEDGER_FILE": str(ledger_file)})
    try:
        with server.client() as client:
            playbook = new_playbook(client)
            created = client.post(f"{playbook}/definitions/reasoning", json={"name": "reply", "source": reasoning(0)})
            assert created.status_code == 201, created.text
        lock = sqlite3.connect(ledger_file, isolation_level=None, timeout=30)
        lock.execute("BEGIN IMMEDIATE")
        refused: list[httpx.Response] = []
        with ThreadPoolExecutor(SENT_AT_ONCE) as pool, server.client() as client:
            pending: set[Future[httpx.Response]] = {
                pool.submit(save, client, playbook, n) for n in range(1, SENT_AT_ONCE + 1)
            }
            try:
                while len(refused) < SENT_AT_ONCE - 1 - CAPACITY:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    refused.extend(future.result() for future in done)
            finally:
                lock.execute("ROLLBACK")
                lock.close()
            taken = [future.result() for future in pending]
        for response in refused:
            assert response.headers["Retry-After"].isdigit(), response.headers
            assert problem(response, 503, "unavailable")["detail"] == OVERLOADED
        assert sorted(response.status_code for response in taken) == [200, 200], [r.text for r in taken]
        assert sorted(response.json()["version"] for response in taken) == [2, 3]
    finally:
        assert server.stop() == 0, server.log()
