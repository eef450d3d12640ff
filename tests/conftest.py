from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.server_process import ServerProcess, start_server
from tests.per_ledger import LEDGERS, PerLedger, ServerStack, per_ledger
from tests.postgres_support import fresh_database, server_on
from tests.real_waits import ENABLE as REAL_WAITS
from tests.real_waits import RealWaits
from tests.sandbox_engine import keep_session_cache_under
from tests.scheduling import heaviest_modules_first
from tests.trap_handlers import handlers_of_wasmtime, put_back


@pytest.fixture(scope="session", autouse=True)
def session_sandbox_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The session's compiled sandbox module is kept in pytest's temporary folder (`tests/sandbox_engine.py`);
    it is compiled on first use, by the first engine or server that needs it."""
    keep_session_cache_under(tmp_path_factory.getbasetemp())


@pytest.fixture(autouse=True)
def sandbox_trap_handlers_kept() -> Iterator[None]:
    """A test must leave the sandbox's trap handlers installed: one that removes them (a nested pytest session
    with its faulthandler plugin, `faulthandler.disable()`) fails here, and they are put back, rather than the
    worker dying at the next guest's trap in another module (`tests/trap_handlers.py`)."""
    before = handlers_of_wasmtime()
    yield
    replaced = put_back(before)
    if replaced:
        pytest.fail(f"this test removed the sandbox's trap handlers: {'; '.join(replaced)}", pytrace=False)


@pytest.fixture(scope="session")
def local_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PerLedger[ServerProcess]]:
    """The servers in local mode, one for each ledger, started when a test first asks for its ledger and
    stopped at the end of the session (`tests/per_ledger.py`)."""

    def start(ledger: str, stack: ServerStack) -> ServerProcess:
        folder = Path(tmp_path_factory.mktemp(f"local-server-{ledger}"))
        settings: dict[str, str] = {}
        if ledger == "postgres":
            settings.update(server_on(stack.enter_context(fresh_database("server_test"))))
        return stack.stop_at_the_end(start_server(folder, settings))

    with per_ledger(start) as servers:
        yield servers


@pytest.fixture(scope="module", params=LEDGERS)
def local_server(request: pytest.FixtureRequest, local_servers: PerLedger[ServerProcess]) -> ServerProcess:
    """One server in local mode for each ledger, shared by the tests that only read or add: every test that
    uses it runs against the SQLite ledger and against the real PostgreSQL."""
    return local_servers.get(request.param)


def pytest_configure(config: pytest.Config) -> None:
    """With `AUTO_RUNTIME_TEST_WAITS=1`, the report of the tests' longest real waits (`tests/real_waits.py`)."""
    if os.environ.get(REAL_WAITS) == "1":
        config.pluginmanager.register(RealWaits(), "real_waits")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a worker of `pytest-xdist`, the heaviest modules first (`tests/scheduling.py`), after pytest
    has ordered them by their fixtures' parameters; in one process the order stays pytest's."""
    if hasattr(config, "workerinput"):
        items[:] = heaviest_modules_first(items)


_exit_status: list[int] = []


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _exit_status.append(int(exitstatus))


def pytest_unconfigure(config: pytest.Config) -> None:
    """Ends the test process the way the server ends (`auto_runtime.cli.exit_without_finalizing`), once pytest
    has reported everything: after sandbox runs, Wasmtime's runtime threads can abort an interpreter that
    finalizes, which would turn a passing run into a crash."""
    if _exit_status:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_exit_status[-1])
