"""A dataset of several MiB uploaded through the real server process (prediction-format §4), on both ledgers,
kept in the ledger's chunk rows and, with `CONTENT_STORE_URL`, in the bucket of a local S3 emulator: the server
keeps it from its spool a chunk at a time (`put_spooled`; `tests/ledger/test_spooled_content.py` measures that
no whole copy is held). A body whose SHA-256 is not the path's is refused and keeps nothing.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import date, timedelta
from pathlib import Path

import httpx
import pytest

from tests.content.test_content_over_http import PREFIX, Ledger, emulator, ledger_settings
from tests.e2e.server_process import start_server
from tests.fakes.s3_emulator import S3Emulator

__all__ = ["emulator", "ledger_settings"]

CHUNK = 1024 * 1024
SERIES = 1000
DAYS = 200


def large_dataset() -> bytes:
    """About 4 MiB: `SERIES` series of `DAYS` days each, in order."""
    days = [(date(2025, 1, 1) + timedelta(days=day)).isoformat() for day in range(DAYS)]
    lines = ["period,series,units\n"]
    for series in range(SERIES):
        lines.extend(f"{day},s{series:04d},{(series * 7 + number) % 997}\n" for number, day in enumerate(days))
    return "".join(lines).encode()


@pytest.fixture(scope="module")
def dataset() -> bytes:
    return large_dataset()


def put(client: httpx.Client, playbook: str, data: bytes, name: str) -> httpx.Response:
    return client.put(f"{playbook}/datasets/{name}", content=data, headers={"Content-Type": "text/csv"}, timeout=120)


def new_playbook(client: httpx.Client) -> tuple[str, str]:
    name = f"pb-{uuid.uuid4().hex[:10]}"
    created = client.post("/v1/orgs/acme/playbooks", json={"playbook": name, "name": "Datasets"})
    assert created.status_code == 201, created.text
    return name, f"/v1/orgs/acme/playbooks/{name}"


@pytest.fixture(params=["ledger", "bucket"])
def where(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.slow
def test_a_dataset_of_several_mib_is_kept_and_a_mismatched_body_keeps_nothing(
    emulator: S3Emulator, ledger_settings: dict[str, str], tmp_path: Path, dataset: bytes, where: str
) -> None:
    bucket = emulator.new_bucket()
    settings = {**ledger_settings, **emulator.environment(), "PREDICTION_CACHE_DIR": str(tmp_path / "cache")}
    if where == "bucket":
        settings["CONTENT_STORE_URL"] = f"s3://{bucket}/{PREFIX}/"
    sha256 = hashlib.sha256(dataset).hexdigest()
    ledger = Ledger(ledger_settings)
    server = start_server(tmp_path / "server", settings)
    try:
        with server.client() as client:
            name, playbook = new_playbook(client)
            refused = put(client, playbook, dataset, "b" * 64)
            assert refused.status_code == 422, refused.text
            assert refused.json()["errors"][0]["pointer"] == "/body"
            assert ledger.content_rows() == {}
            assert emulator.objects(bucket) == {}

            answered = put(client, playbook, dataset, sha256)
            assert answered.status_code == 200, answered.text
            assert (answered.json()["dataset"], answered.json()["bytes"]) == (sha256, len(dataset))
            assert answered.json()["series"] == SERIES
    finally:
        assert server.stop() == 0, server.log()
    rows = ledger.content_rows()
    assert len(rows) == 2  # the dataset and its summary
    if where == "ledger":
        assert rows[sha256] == "ledger"
        assert ledger.chunks(sha256) == -(-len(dataset) // CHUNK) >= 4
        assert emulator.objects(bucket) == {}
    else:
        key = f"{PREFIX}/playbook/acme/{name}/{sha256}"
        assert rows[sha256] == f"s3://{bucket}/{key}"
        assert ledger.chunks(sha256) == 0
        assert emulator.objects(bucket)[key] == dataset
    assert "Traceback" not in server.log()
