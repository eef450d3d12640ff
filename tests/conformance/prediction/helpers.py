"""Datasets and documents the prediction tests share, and uploads over real HTTP."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from contextlib import closing
from typing import Any

import httpx
import trio

from auto_runtime.ledger import PlaybookScope, open_ledger
from auto_runtime.server import RUNTIME_PROJECTIONS
from tests.conformance.prediction.conftest import PredictionServer

WAIT_BOUND_SECONDS = 60.0

SALES = (
    "period,series,units,price\n"
    + "".join(
        f"2024-{month:02d},{region},{base + month * step},{price}\n"
        for month in range(1, 13)
        for region, base, step, price in (("north", 100, 3, 9.5), ("south", 200, 5, 12))
    )
    + "".join(
        f"2025-{month:02d},{region},{base + (12 + month) * step},{price}\n"
        for month in range(1, 13)
        for region, base, step, price in (("north", 100, 3, 9.5), ("south", 200, 5, 12))
    )
).encode()


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def upload(
    client: httpx.Client, playbook: str, data: bytes, *, name: str | None = None, content_type: str = "text/csv"
) -> httpx.Response:
    return client.put(
        f"{playbook}/datasets/{name or digest(data)}", content=data, headers={"Content-Type": content_type}
    )


def uploaded(client: httpx.Client, playbook: str, data: bytes = SALES) -> dict[str, Any]:
    response = upload(client, playbook, data)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def document(digest_of_dataset: str, **fields: Any) -> str:
    """A prediction document over the dataset `digest_of_dataset`; `fields` replace or add front matter lines
    (None drops one)."""
    values: dict[str, Any] = {
        "description": "Units sold per region, one and two months ahead",
        "dataset": digest_of_dataset,
        "period": "month",
        "target": "units",
        "features": "[price]",
        "lags": 3,
        "horizons": "[1, 2]",
        "season": 1,
        "coverage": 0.8,
        "backtest": 2,
        "trainer": "train-forecasts",
    }
    values.update(fields)
    lines = [f"{key}: {value}" for key, value in values.items() if value is not None]
    return "---\n" + "\n".join(lines) + "\n---\nUnits are whole boxes.\n"


def create(client: httpx.Client, playbook: str, name: str, source: str) -> httpx.Response:
    return client.post(f"{playbook}/definitions/prediction", json={"name": name, "source": source})


def models_events(server: PredictionServer, scope: PlaybookScope) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """The function `units`' models stream as the server recorded it: read through a second ledger client on
    PostgreSQL, and from the SQLite file opened read-only (the server holds it for writing alone)."""
    stream = scope.stream("models", "units")
    if server.database_url is None:
        path = server.server.folder / "ledger.db"
        query = "SELECT type, data, metadata FROM ledger_records WHERE stream = ? ORDER BY position"
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            rows = conn.execute(query, (stream,)).fetchall()
        return [(str(kind), json.loads(data), json.loads(metadata)) for kind, data, metadata in rows]
    url = server.database_url

    async def read() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
        async with open_ledger(None, url, RUNTIME_PROJECTIONS) as ledger:
            records = await ledger.read_stream(stream)
            return [(record.type, dict(record.data), dict(record.metadata)) for record in records]

    return trio.run(read)


def waited_for(
    server: PredictionServer, scope: PlaybookScope, kind: str, count: int = 1
) -> list[tuple[str, dict[str, Any]]]:
    """The models stream once it holds `count` records of `kind` (polled within a bound, not timed)."""
    deadline = time.monotonic() + WAIT_BOUND_SECONDS
    while time.monotonic() < deadline:
        events = models_events(server, scope)
        if sum(1 for event in events if event[0] == kind) >= count:
            return [(kind_, data) for kind_, data, _ in events]
        time.sleep(0.1)
    raise AssertionError(f"no {kind} within {WAIT_BOUND_SECONDS} s: {models_events(server, scope)}")
