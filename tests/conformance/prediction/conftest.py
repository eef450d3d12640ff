"""The prediction conformance tests' server: one per ledger, started on a ledger seeded with playbooks that
hold interaction functions to name as trainers (`seeding`); each test takes a playbook of its own."""

from __future__ import annotations

import base64
import secrets
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from tests.conformance.prediction.seeding import ORG, seed
from tests.e2e.server_process import ServerProcess, start_server
from tests.postgres_support import fresh_database

SEEDED_PLAYBOOKS = 60


@pytest.fixture(scope="session", params=["sqlite", "postgres"])
def prediction_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ServerProcess, list[str]]]:
    folder = Path(tmp_path_factory.mktemp(f"prediction-server-{request.param}"))
    playbooks = [f"forecasts-{index:03d}" for index in range(SEEDED_PLAYBOOKS)]
    with ExitStack() as stack:
        settings: dict[str, str] = {"PREDICTION_MAX_FUNCTIONS": "3"}
        if request.param == "postgres":
            url = stack.enter_context(fresh_database("prediction_test"))
            settings["DATABASE_URL"] = url
            settings["SECRETS_KEY"] = base64.b64encode(secrets.token_bytes(32)).decode()
            seed(None, url, playbooks)
        else:
            settings["LEDGER_FILE"] = str(folder / "ledger.db")
            seed(folder / "ledger.db", None, playbooks)
        server = start_server(folder, settings)
        yield server, playbooks
        assert server.stop() == 0, server.log()


@pytest.fixture
def client(prediction_server: tuple[ServerProcess, list[str]]) -> Iterator[httpx.Client]:
    with prediction_server[0].client() as client:
        yield client


@pytest.fixture
def playbook(prediction_server: tuple[ServerProcess, list[str]]) -> str:
    """A seeded playbook no other test of this session used: its URL prefix."""
    playbooks = prediction_server[1]
    if not playbooks:
        raise AssertionError(f"every one of the {SEEDED_PLAYBOOKS} seeded playbooks is used; seed more")
    return f"/v1/orgs/{ORG}/playbooks/{playbooks.pop()}"


PlaybookMaker = Callable[[], str]
