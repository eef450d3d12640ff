"""Content on object storage through the real server process, on both ledgers, against a local S3 emulator.

The operations that keep content today are workflow runs: `run_definition` of a workflow keeps its document
as playbook content before it records the run, and a run that takes an input (`send_run_event`) reads the
document back when the server does not hold it in memory (a server that started since). The server reaches
the emulator through a forwarder process that the test stops to take the bucket away.
"""

from __future__ import annotations

import asyncio
import base64
import secrets
import sqlite3
import textwrap
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from tests.e2e.server_process import ServerProcess, start_server
from tests.fakes.s3_emulator import S3Emulator, start_s3_emulator
from tests.postgres_support import fresh_database

PREFIX = "runtime/content"
POLL_LIMIT_S = 30.0


def workflow(name: str) -> str:
    """A workflow that waits for one `com.example.go` event, then ends with its data."""
    return textwrap.dedent(f"""\
        document: {{ dsl: '1.0.3', namespace: tests, name: {name}, version: '1.0.0' }}
        do:
          - hold:
              listen:
                to:
                  one: {{ with: {{ type: com.example.go }} }}
          - after: {{ set: '${{ {{"got": data}} }}' }}
        """)


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Emulator]:
    started = start_s3_emulator(tmp_path_factory.mktemp("s3"))
    yield started
    started.stop()


class Ledger:
    """The server's ledger, read by the test with a plain client of its database (never through our code)."""

    def __init__(self, settings: dict[str, str]) -> None:
        self.settings = settings

    def content_rows(self) -> dict[str, str]:
        """sha256 → location of every content row, and the count of chunks the database keeps."""
        query = "SELECT sha256, location FROM ledger_content"
        if "DATABASE_URL" in self.settings:
            return asyncio.run(self._postgres(query))
        with sqlite3.connect(f"file:{self.settings['LEDGER_FILE']}?mode=ro", uri=True) as conn:
            return {str(sha): str(location) for sha, location in conn.execute(query)}

    def chunks(self, sha256: str) -> int:
        query = "SELECT count(*) FROM ledger_content_chunks WHERE sha256 = $1"
        if "DATABASE_URL" in self.settings:
            return int(asyncio.run(self._postgres_value(query, sha256)))
        with sqlite3.connect(f"file:{self.settings['LEDGER_FILE']}?mode=ro", uri=True) as conn:
            return int(conn.execute(query.replace("$1", "?"), (sha256,)).fetchone()[0])

    async def _postgres(self, query: str) -> dict[str, str]:
        conn = await asyncpg.connect(self.settings["DATABASE_URL"], timeout=10)
        try:
            return {row["sha256"]: row["location"] for row in await conn.fetch(query)}
        finally:
            await conn.close()

    async def _postgres_value(self, query: str, value: str) -> Any:
        conn = await asyncpg.connect(self.settings["DATABASE_URL"], timeout=10)
        try:
            return await conn.fetchval(query, value)
        finally:
            await conn.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def ledger_settings(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str]]:
    with ExitStack() as stack:
        if request.param == "postgres":
            yield {
                "DATABASE_URL": stack.enter_context(fresh_database("content_test")),
                "SECRETS_KEY": base64.b64encode(secrets.token_bytes(32)).decode(),
            }
        else:
            yield {"LEDGER_FILE": str(tmp_path / "data" / "ledger.db")}


def start(server: ServerProcess, playbook: str, name: str, run_id: str) -> httpx.Response:
    with server.client() as client:
        return client.post(f"{playbook}/definitions/workflow/{name}/run", json={"input": {}, "run_id": run_id})


def send(server: ServerProcess, playbook: str, run_id: str, data: object) -> httpx.Response:
    with server.client() as client:
        return client.post(f"{playbook}/runs/{run_id}/events", json={"event": {"type": "com.example.go", "data": data}})


def run_of(server: ServerProcess, playbook: str, run_id: str) -> httpx.Response:
    with server.client() as client:
        return client.get(f"{playbook}/runs/{run_id}")


def finished(server: ServerProcess, playbook: str, run_id: str) -> dict[str, Any]:
    """The run once it succeeded, polled within `POLL_LIMIT_S` (a limit, not a timed assertion)."""
    limit = time.monotonic() + POLL_LIMIT_S
    while True:
        run: dict[str, Any] = run_of(server, playbook, run_id).json()
        if run["status"] == "succeeded":
            return run
        assert time.monotonic() < limit, run
        time.sleep(0.05)


def assert_unavailable(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert int(response.headers["retry-after"]) > 0
    body = response.json()
    assert body["type"] == "https://on.auto/problems/unavailable"
    assert (body["status"], body["reason"]) == (503, "unavailable")
    assert "object store" in body["detail"]


@pytest.mark.slow
def test_content_goes_to_the_bucket_is_read_where_it_is_and_the_bucket_down_is_unavailable(
    emulator: S3Emulator, ledger_settings: dict[str, str], tmp_path: Path
) -> None:
    bucket = emulator.new_bucket()
    ledger = Ledger(ledger_settings)
    folder = tmp_path / "server"
    plain = {**ledger_settings, **emulator.environment()}
    with_bucket = {**plain, "CONTENT_STORE_URL": f"s3://{bucket}/{PREFIX}/"}

    # Before the setting: the document of run `before` is kept in the ledger.
    server = start_server(folder, plain)
    try:
        with server.client() as client:
            org_playbook = f"pb-{uuid.uuid4().hex[:10]}"
            created = client.post("/v1/orgs/acme/playbooks", json={"playbook": org_playbook, "name": "Content"})
            assert created.status_code == 201, created.text
            playbook = f"/v1/orgs/acme/playbooks/{org_playbook}"
            for name in ("before", "listener", "second"):
                saved = client.post(f"{playbook}/definitions/workflow", json={"name": name, "source": workflow(name)})
                assert saved.status_code == 201, saved.text
        before = str(uuid.uuid4())
        assert start(server, playbook, "before", before).status_code == 200
    finally:
        assert server.stop() == 0, server.log()
    (kept_before,) = ledger.content_rows().items()
    assert kept_before[1] == "ledger"
    assert ledger.chunks(kept_before[0]) == 1

    # With the setting: new content lands in the bucket, content kept before is still read from the ledger.
    server = start_server(folder, with_bucket)
    try:
        listener = str(uuid.uuid4())
        assert start(server, playbook, "listener", listener).status_code == 200
        objects = emulator.objects(bucket)
        assert len(objects) == 1
        ((key, document),) = objects.items()
        sha256 = key.rpartition("/")[2]
        assert key == f"{PREFIX}/playbook/acme/{org_playbook}/{sha256}"
        assert b"com.example.go" in document
        assert ledger.content_rows() == {kept_before[0]: "ledger", sha256: f"s3://{bucket}/{key}"}
        assert ledger.chunks(sha256) == 0
        assert send(server, playbook, before, 1).status_code == 200
        assert finished(server, playbook, before)["output"] == {"got": [1]}

        # The bucket down: an operation that writes content is unavailable and records nothing; others go on.
        emulator.forwarder.stop()
        second = str(uuid.uuid4())
        assert_unavailable(start(server, playbook, "second", second))
        assert run_of(server, playbook, second).status_code == 404
        assert len(ledger.content_rows()) == 2
        assert run_of(server, playbook, listener).json()["status"] == "started"
        assert run_of(server, playbook, before).json()["status"] == "succeeded"
        with server.client() as client:
            assert client.get(f"{playbook}/definitions/workflow/listener").status_code == 200
    finally:
        assert server.stop() == 0, server.log()

    # A server that holds no document in memory: an operation that reads content is unavailable too.
    server = start_server(folder, with_bucket)
    try:
        assert_unavailable(send(server, playbook, listener, 2))
        assert run_of(server, playbook, listener).json()["status"] == "started"

        # The bucket back: both operations go through, and nothing was lost.
        emulator.forwarder.start()
        assert send(server, playbook, listener, 3).status_code == 200
        assert finished(server, playbook, listener)["output"] == {"got": [3]}
        assert start(server, playbook, "second", second).status_code == 200
        assert len(emulator.objects(bucket)) == 2
        assert len(ledger.content_rows()) == 3
        assert run_of(server, playbook, second).json()["status"] == "started"
    finally:
        assert server.stop() == 0, server.log()
    assert "the object store cannot serve content" in server.log()
    assert "the object store serves content again" in server.log()
    assert "Traceback" not in server.log()
