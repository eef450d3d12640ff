"""The prediction conformance tests' server: one per ledger; each test takes a playbook of its own, created
through the server with the interaction functions it names as trainers and approvers (`seeding`). Its clock is
a test's (`tests/e2e/moved_clock.py`): a test that reaches a limit of minutes moves it forward."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.conformance.prediction.seeding import seed
from tests.e2e.moved_clock import TEST_CLOCK_SETTINGS
from tests.e2e.server_process import ServerProcess, start_server
from tests.per_ledger import LEDGERS, PerLedger, ServerStack, per_ledger
from tests.postgres_support import fresh_database, server_on


@dataclass
class PredictionServer:
    server: ServerProcess
    database_url: str | None
    """The PostgreSQL ledger's URL, which a test may read beside the server; None for SQLite."""


@pytest.fixture(scope="session")
def prediction_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PerLedger[PredictionServer]]:
    """The servers, one for each ledger, started on first use and stopped at the session's end
    (`tests/per_ledger.py`)."""

    def start(ledger: str, stack: ServerStack) -> PredictionServer:
        folder = Path(tmp_path_factory.mktemp(f"prediction-server-{ledger}"))
        settings: dict[str, str] = {
            "PREDICTION_MAX_FUNCTIONS": "3",
            "PREDICTION_CACHE_DIR": str(folder / "cache"),
            **TEST_CLOCK_SETTINGS,
        }
        url: str | None = None
        if ledger == "postgres":
            url = stack.enter_context(fresh_database("prediction_test"))
            settings.update(server_on(url))
        else:
            settings["LEDGER_FILE"] = str(folder / "ledger.db")
        return PredictionServer(stack.stop_at_the_end(start_server(folder, settings)), url)

    with per_ledger(start) as servers:
        yield servers


@pytest.fixture(scope="module", params=LEDGERS)
def prediction_server(
    request: pytest.FixtureRequest, prediction_servers: PerLedger[PredictionServer]
) -> PredictionServer:
    return prediction_servers.get(request.param)


@pytest.fixture
def client(prediction_server: PredictionServer) -> Iterator[httpx.Client]:
    with prediction_server.server.client() as client:
        yield client


@pytest.fixture
def playbook(client: httpx.Client) -> str:
    """A new playbook with the interaction functions of `seeding`: its URL prefix."""
    return seed(client)
