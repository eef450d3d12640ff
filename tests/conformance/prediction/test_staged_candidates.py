"""prediction-format §13: a build's candidates are staged until it ends. Once it ends (cancelled, or scored into a
version) its staged candidates are discarded; the winner stays as playbook content, as the version's model file.

The test reads the server's content rows with a plain client of its database (never through our code)."""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
import time

import asyncpg
import httpx
import pytest

from auto_runtime.ledger import PlaybookScope
from tests.conformance.prediction.conftest import PredictionServer
from tests.conformance.prediction.test_builds import _build, _function, cancelled
from tests.conformance.prediction.test_candidates import NAIVE, _upload
from tests.conformance.prediction.test_full_cycle import LINEAR, _ended, _inbox

DISCARD_BOUND_SECONDS = 30.0


def _content_rows(prediction_server: PredictionServer, scope_key: str) -> list[str]:
    """The SHA-256 of every content row kept under `scope_key`."""
    query = "SELECT sha256 FROM ledger_content WHERE scope_key = $1 ORDER BY sha256"
    url = prediction_server.database_url
    if url is not None:

        async def fetch() -> list[str]:
            conn = await asyncpg.connect(url, timeout=10)
            try:
                return [str(row["sha256"]) for row in await conn.fetch(query, scope_key)]
            finally:
                await conn.close()

        return asyncio.run(fetch())
    path = prediction_server.server.folder / "ledger.db"
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return [str(row[0]) for row in conn.execute(query.replace("$1", "?"), (scope_key,))]


def _discarded(prediction_server: PredictionServer, scope_key: str) -> list[str]:
    """The rows under `scope_key` once they are gone, or what is left after `DISCARD_BOUND_SECONDS`: the lease
    holder discards a scored build's candidates right after the append that ends the build, so a reader that
    saw the ending may still find them for a moment (a cancelled build's as well: the holder ends it too)."""
    deadline = time.monotonic() + DISCARD_BOUND_SECONDS
    while (rows := _content_rows(prediction_server, scope_key)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return rows


def _staged_key(playbook: str, run_id: str) -> str:
    return f"playbook/acme/{playbook.rsplit('/', 1)[1]}/builds/{run_id}/candidates"


def test_a_cancelled_build_discards_its_staged_candidates(
    prediction_server: PredictionServer, client: httpx.Client, playbook: str
) -> None:
    run_id = _build(client, _function(client, playbook)).json()["run_id"]
    assert _upload(client, playbook, run_id, NAIVE).status_code == 200
    staged = _staged_key(playbook, run_id)
    assert _content_rows(prediction_server, staged) == [hashlib.sha256(NAIVE).hexdigest()]
    assert cancelled(client, playbook, run_id)["status"] == "rejected"
    assert _discarded(prediction_server, staged) == []


@pytest.mark.slow(seconds=15)
def test_a_scored_build_discards_its_staged_candidates_and_keeps_the_winner(
    prediction_server: PredictionServer, client: httpx.Client, playbook: str
) -> None:
    run_id = _build(client, _function(client, playbook)).json()["run_id"]
    digests = [_upload(client, playbook, run_id, model).json()["candidate"] for model in (NAIVE, LINEAR)]
    staged = _staged_key(playbook, run_id)
    assert _content_rows(prediction_server, staged) == sorted(digests)
    scope = PlaybookScope("acme", playbook.rsplit("/", 1)[1])
    _inbox(client, playbook, run_id, {"candidates": digests})
    run = _ended(client, playbook, run_id)
    assert run["status"] == "succeeded", run
    assert _discarded(prediction_server, staged) == []
    assert digests[1] in _content_rows(prediction_server, scope.key)
    assert digests[0] not in _content_rows(prediction_server, scope.key)
