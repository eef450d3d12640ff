"""The prediction conformance tests' server: one per ledger, started on a ledger seeded with playbooks that
hold interaction functions to name as trainers (`seeding`); each test takes a playbook of its own."""

from __future__ import annotations

import base64
import secrets
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.conformance.prediction.seeding import ORG, seed
from tests.e2e.server_process import ServerProcess, start_server
from tests.postgres_support import fresh_database

SEEDED_PLAYBOOKS = 100


@dataclass
class PredictionServer:
    server: ServerProcess
    playbooks: list[str]
    database_url: str | None
    """The PostgreSQL ledger's URL, which another process may write to beside the server; None for SQLite."""


@pytest.fixture(scope="session", params=["sqlite", "postgres"])
def prediction_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PredictionServer]:
    folder = Path(tmp_path_factory.mktemp(f"prediction-server-{request.param}"))
    playbooks = [f"forecasts-{index:03d}" for index in range(SEEDED_PLAYBOOKS)]
    with ExitStack() as stack:
        settings: dict[str, str] = {"PREDICTION_MAX_FUNCTIONS": "3", "PREDICTION_CACHE_DIR": str(folder / "cache")}
        url: str | None = None
        if request.param == "postgres":
            url = stack.enter_context(fresh_database("prediction_test"))
            settings["DATABASE_URL"] = url
            settings["SECRETS_KEY"] = base64.b64encode(secrets.token_bytes(32)).decode()
            seed(None, url, playbooks)
        else:
            settings["LEDGER_FILE"] = str(folder / "ledger.db")
            seed(folder / "ledger.db", None, playbooks)
        server = start_server(folder, settings)
        yield PredictionServer(server, playbooks, url)
        assert server.stop() == 0, server.log()


@pytest.fixture
def client(prediction_server: PredictionServer) -> Iterator[httpx.Client]:
    with prediction_server.server.client() as client:
        yield client


@pytest.fixture
def playbook(prediction_server: PredictionServer) -> str:
    """A seeded playbook no other test of this session used: its URL prefix."""
    playbooks = prediction_server.playbooks
    if not playbooks:
        raise AssertionError(f"every one of the {SEEDED_PLAYBOOKS} seeded playbooks is used; seed more")
    return f"/v1/orgs/{ORG}/playbooks/{playbooks.pop()}"
