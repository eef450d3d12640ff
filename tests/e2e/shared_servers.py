"""Several real servers on one fresh PostgreSQL database (issue 33): started at once, each in a folder of its own,
with the same `SECRETS_KEY` (every server of a deployment needs the same), killed, stopped and started again.

`SharedServers` only starts and stops processes and reads `GET /v1/status`; what the servers are asked to do is
the mixed load's (`tests/e2e/mixed_load.py`). Waits poll within `SETTLE_SECONDS` and assert on what the servers
answer, never on how long it took.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.server_process import ServerProcess, start_server
from tests.postgres_support import fresh_database, server_on

SWEEP = "PT0.2S"
"""The sweep of every server: short, so that a lapsed lease (max(3 sweeps, 3 s)) is taken soon."""
SETTLE_SECONDS = 120.0
"""The bound of every poll: generous, never a timing claim (a loaded 2-core machine only makes it slower)."""


@dataclass
class Status:
    """One server's `GET /v1/status`: its id, the partitions it holds, and each server alive with its count."""

    server: str
    partitions: list[int]
    servers: dict[str, int]


def status_of(server: ServerProcess) -> Status:
    with server.client() as client:
        response = client.get("/v1/status")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return Status(
        str(body["server"]),
        [int(number) for number in body["partitions"]],
        {str(alive["server"]): int(alive["partitions"]) for alive in body["servers"]},
    )


@dataclass
class Slot:
    """One server's place: its folder, kept across its lives, and the process of its current life (None while
    it is down)."""

    folder: Path
    process: ServerProcess | None = None
    lives: int = 0


@dataclass
class SharedServers:
    settings: dict[str, str]
    slots: list[Slot]
    lock: threading.Lock = field(default_factory=threading.Lock)

    def alive(self) -> list[ServerProcess]:
        with self.lock:
            return [slot.process for slot in self.slots if slot.process is not None]

    def any_alive(self) -> ServerProcess:
        """A server up now, picked at random (the load spreads its requests over every server)."""
        servers = self.alive()
        assert servers, "no server is up"
        return random.choice(servers)

    def start(self, index: int) -> ServerProcess:
        slot = self.slots[index]
        assert slot.process is None, f"server {index} is already up"
        process = start_server(slot.folder, self.settings)
        with self.lock:
            slot.process = process
            slot.lives += 1
        return process

    def start_all(self) -> None:
        """Every slot without a process started at once, as an operator's deployment starts them."""
        failures: list[BaseException] = []

        def one(index: int) -> None:
            try:
                self.start(index)
            except BaseException as error:
                failures.append(error)

        threads = [
            threading.Thread(target=one, args=(index,)) for index, slot in enumerate(self.slots) if slot.process is None
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if failures:
            raise failures[0]

    def kill(self, index: int) -> ServerProcess:
        """SIGKILL (a real `kill -9`): nothing of the server's stop runs. Answers the dead process."""
        slot = self.slots[index]
        with self.lock:
            process, slot.process = slot.process, None
        assert process is not None, f"server {index} is already down"
        process.process.kill()
        process.process.wait()
        return process

    def stop(self, index: int) -> ServerProcess:
        """SIGTERM, the clean stop; fails when the server exits with another code than 0."""
        slot = self.slots[index]
        with self.lock:
            process, slot.process = slot.process, None
        assert process is not None, f"server {index} is already down"
        assert process.stop() == 0, process.log()
        return process

    def close(self) -> None:
        for index, slot in enumerate(self.slots):
            if slot.process is not None:
                self.kill(index)

    def statuses(self) -> list[Status]:
        return [status_of(server) for server in self.alive()]

    def wait_balanced(self, partitions: int | None = None) -> list[Status]:
        """The statuses once every server up holds partitions, the servers up and only they are listed alive,
        no partition is held twice and, with `partitions`, every one is held."""
        deadline = time.monotonic() + SETTLE_SECONDS
        while True:
            statuses = self.statuses()
            if balanced(statuses, partitions):
                return statuses
            assert time.monotonic() < deadline, f"the servers did not settle: {statuses}"
            time.sleep(0.2)


def balanced(statuses: list[Status], partitions: int | None) -> bool:
    """Each server holds a share of the partitions (the shares differ by at most one), every server sees the
    same servers alive (those answering, no other), and the partitions held are distinct and, with
    `partitions`, all of them."""
    ids = {status.server for status in statuses}
    held = [number for status in statuses for number in status.partitions]
    counts = [len(status.partitions) for status in statuses]
    return (
        all(set(status.servers) == ids for status in statuses)
        and len(held) == len(set(held))
        and (partitions is None or len(held) == partitions)
        and min(counts) > 0
        and max(counts) - min(counts) <= 1
    )


@contextmanager
def shared_servers(folder: Path, count: int, **settings: str) -> Iterator[SharedServers]:
    """`count` servers on one fresh database, started at once and all up; each is killed at the end if still up
    (a test that wants a clean stop calls `stop`)."""
    with fresh_database("shared") as database_url:
        every = {**server_on(database_url), "WORKFLOW_SWEEP_INTERVAL": SWEEP, **settings}
        servers = SharedServers(every, [Slot(folder / f"server{index}") for index in range(count)])
        try:
            servers.start_all()
            yield servers
        finally:
            servers.close()
