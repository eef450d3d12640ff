"""A large dataset upload is read where the event loop never waits for it (issue 37, item 3), through the real
server, on both ledgers.

- A valid CSV of about 7 MB is read by a process of its own (`dataset_process`): a `/health` sent once the
  upload is sent is answered before the upload's answer (order, not time), and the upload still answers its
  summary, which a second upload of the same bytes answers again from the ledger.
- A large CSV with problems gets the refusal it always got from the process too: `invalid_input`, the
  problems at their pointers, and `because` from the first of them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import date, timedelta
from pathlib import Path

import pytest

from auto_runtime.functions.prediction.dataset_process import READ_IN_THREAD_BYTES
from tests.conformance.helpers import new_playbook, pointers, problem
from tests.e2e.server_process import ServerProcess, start_server
from tests.postgres_support import fresh_database, server_on
from tests.security.answer_order import OrderedAnswers, request_bytes

SERIES = 1_000
SEND_BOUND_SECONDS = 120.0


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def ledger_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder = Path(tmp_path_factory.mktemp(f"dataset-pace-{request.param}"))
    with ExitStack() as stack:
        if request.param == "postgres":
            settings = server_on(stack.enter_context(fresh_database("dataset_pace")))
        else:
            settings = {"LEDGER_FILE": str(folder / "ledger.db")}
        server = start_server(folder, settings)
        yield server
        assert server.stop() == 0, server.log()


def daily_dataset(days: int) -> bytes:
    """`SERIES` series over `days` days, each day's rows in turn: about 26 bytes a row."""
    lines = ["period,series,units\n"]
    for day in range(days):
        period = (date(2000, 1, 1) + timedelta(days=day)).isoformat()
        lines.extend(f"{period},s{series:04d},{(day * 7 + series) % 997}.5\n" for series in range(SERIES))
    return "".join(lines).encode()


def put_request(playbook: str, data: bytes) -> bytes:
    path = f"{playbook}/datasets/{hashlib.sha256(data).hexdigest()}"
    return request_bytes("PUT", path, data, "text/csv")


def test_health_is_answered_while_a_large_dataset_is_read(ledger_server: ServerProcess) -> None:
    data = daily_dataset(300)
    assert len(data) > 6_000_000
    with ledger_server.client() as client:
        playbook = new_playbook(client)
    answers = OrderedAnswers(ledger_server.base_url)
    upload, sent = answers.in_background("upload", put_request(playbook, data))
    assert sent.wait(SEND_BOUND_SECONDS)
    health = answers.exchange("health", request_bytes("GET", "/health"))
    upload.join()
    assert health.status == 200 and health.json() == {"status": "ok"}
    uploaded = answers.answers["upload"]
    assert uploaded.status == 200, uploaded.body[:500]
    summary = uploaded.json()
    assert summary == {
        "dataset": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
        "rows": 300 * SERIES,
        "series": SERIES,
        "columns": [
            {"name": "period", "kind": "period"},
            {"name": "series", "kind": "series"},
            {"name": "units", "kind": "number"},
        ],
        "period": "day",
        "first_period": "2000-01-01",
        "last_period": (date(2000, 1, 1) + timedelta(days=299)).isoformat(),
    }
    assert answers.arrived == ["health", "upload"]
    with ledger_server.client() as client:
        again = client.put(
            f"{playbook}/datasets/{summary['dataset']}", content=data, headers={"Content-Type": "text/csv"}, timeout=120
        )
    assert again.status_code == 200 and again.json() == summary


def test_a_large_dataset_with_problems_is_refused_at_their_pointers(ledger_server: ServerProcess) -> None:
    data = daily_dataset(60)
    lines = data.split(b"\n")
    lines[40_002] = lines[40_002].replace(b",s0001,", b",s0000,")  # day 40 again for s0000, none for s0001
    lines[50_003] = lines[50_003].replace(b".5", b"e999")
    data = b"\n".join(lines)
    assert len(data) > READ_IN_THREAD_BYTES
    with ledger_server.client() as client:
        playbook = new_playbook(client)
        response = client.put(
            f"{playbook}/datasets/{hashlib.sha256(data).hexdigest()}",
            content=data,
            headers={"Content-Type": "text/csv"},
            timeout=120,
        )
    body = problem(response, 422, "invalid_input")
    assert body["because"] == "not_in_order"
    assert pointers(body) == ["/body/40003/period", "/body/41003/period", "/body/50004/units"]
    assert body["errors"][0]["detail"].startswith("Line 40003: the series s0000 holds 2000-02-11 next")
