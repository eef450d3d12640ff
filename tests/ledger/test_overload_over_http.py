"""Back-pressure through HTTP: an operation whose append meets the ledger writer's full mailbox answers
`503 unavailable` with `Retry-After` and the overload's own detail, and nothing of it is recorded.
A real SQLite ledger and the real app (Quart's test client); nothing timed."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import trio
from pydantic import BaseModel, ConfigDict

from auto_runtime.auth.access import AccessGate
from auto_runtime.auth.api_keys import KeyRing
from auto_runtime.http.app import PublishedDocuments, create_app
from auto_runtime.ledger import NewRecord, PlaybookScope, StreamWrite, open_ledger
from auto_runtime.ledger.errors import OVERLOADED_DETAIL
from auto_runtime.ledger.sqlite.store import SqliteLedger
from auto_runtime.operations.catalog import Catalog
from auto_runtime.operations.dispatcher import Dispatcher
from auto_runtime.operations.operation import Hints, Operation, OperationContext
from tests.supervision.polling import wait_until

ACME = PlaybookScope("acme", "finance")


class Note(BaseModel):
    model_config = ConfigDict(extra="forbid")
    stream: str


def recording_operation(ledger: SqliteLedger) -> Operation:
    async def record(context: OperationContext, data: Note) -> dict[str, Any]:
        await ledger.append([StreamWrite(ACME.stream("notes", data.stream), 0, [NewRecord("noted", {})])])
        return {}

    return Operation(
        name="record",
        title="record",
        description="record",
        scope="org",
        permissions=frozenset(),
        method="POST",
        route="/record",
        input_model=Note,
        output_model=None,
        handler=record,
        hints=Hints(read_only=False, destructive=False, idempotent=False, open_world=False),
        tag="test",
    )


async def test_a_full_writer_mailbox_answers_unavailable_with_retry_after(tmp_path: Path) -> None:
    async with open_ledger(ledger_file=tmp_path / "ledger.db") as ledger:
        assert isinstance(ledger, SqliteLedger)
        app = create_app(
            catalog=Catalog([recording_operation(ledger)]),
            dispatcher=Dispatcher(services=None, playbooks=None),
            gate=AccessGate.build(local_mode=True, keys=KeyRing([]), allowed_origins=()),
            documents=PublishedDocuments(openapi=b"{}", guides={}),
            public_url=None,
        )
        client = app.test_client()
        ledger.writer_ref.capacity = 1
        gate, entered = threading.Event(), threading.Event()

        def hold(conn: sqlite3.Connection) -> None:
            entered.set()
            gate.wait(30)

        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(ledger.write, hold)
                await trio.to_thread.run_sync(entered.wait)
                response = await client.post("/v1/orgs/acme/record", json={"stream": "refused"})
                gate.set()
                await wait_until(lambda: ledger.writer_ref.pending == 0)
        assert response.status_code == 503
        assert response.headers["Retry-After"].isdigit()
        problem = await response.get_json()
        assert problem["reason"] == "unavailable"
        assert problem["detail"] == OVERLOADED_DETAIL
        assert await ledger.stream_version(ACME.stream("notes", "refused")) == 0
        accepted = await client.post("/v1/orgs/acme/record", json={"stream": "accepted"})
        assert accepted.status_code < 300
        assert await ledger.stream_version(ACME.stream("notes", "accepted")) == 1
