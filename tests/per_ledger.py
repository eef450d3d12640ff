"""Servers shared by a whole test session, one for each ledger, that live side by side.

A session-scoped fixture parametrized by ledger keeps one of its values at a time: pytest stops the SQLite
server when a test asks for the PostgreSQL one, and starts it again when the next test asks for SQLite. In one
process pytest orders the tests so that each server starts once; under `pytest-xdist` with `--dist loadfile`
each worker runs whole modules, each module's SQLite tests then its PostgreSQL tests, so every module that
uses the fixture started both servers again: two starts a module instead of two a worker.

`PerLedger` holds the servers instead: each is started the first time a test asks for its ledger, and all are
stopped side by side when the session ends (`ServerStack`). The fixture the tests name stays parametrized by
ledger (module-scoped, so the test ids keep their `[sqlite]` and `[postgres]`), and only picks the server out
of the holder.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from types import TracebackType
from typing import Generic, TypeVar

from tests.e2e.server_process import ServerProcess

LEDGERS = ("sqlite", "postgres")
"""The ledgers a shared server is started on, as the tests' ids name them."""

Served = TypeVar("Served")


class ServerStack(ExitStack):
    """An `ExitStack` that also stops servers: `stop_at_the_end` registers one; when the stack closes, every
    server it holds is asked to stop first (SIGTERM to each), then each is waited for in its turn, so the
    servers stop side by side instead of one after the other, and a database entered before a server is
    dropped only once that server ended."""

    def __init__(self) -> None:
        super().__init__()
        self._servers: list[ServerProcess] = []

    def stop_at_the_end(self, server: ServerProcess) -> ServerProcess:
        """`server`, to be stopped when the stack closes; its stop must end it with 0 (its log otherwise)."""

        def stopped() -> None:
            assert server.stopped() == 0, server.log()

        self._servers.append(server)
        self.callback(stopped)
        return server

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> bool | None:
        """(`close` comes here too.)"""
        for server in self._servers:
            server.ask_to_stop()
        return super().__exit__(kind, error, trace)


class PerLedger(Generic[Served]):
    """One value of `start(ledger, stack)` for each ledger asked for, made on first use. `start` enters what
    must be undone at the end (the server's stop, the database's drop) into `stack`, which is closed when the
    session ends, in the reverse order of the starts."""

    def __init__(self, start: Callable[[str, ServerStack], Served], stack: ServerStack) -> None:
        self._start = start
        self._stack = stack
        self._served: dict[str, Served] = {}

    def get(self, ledger: str) -> Served:
        if ledger not in LEDGERS:
            raise ValueError(f"no ledger named {ledger!r}")
        if ledger not in self._served:
            self._served[ledger] = self._start(ledger, self._stack)
        return self._served[ledger]


@contextmanager
def per_ledger(start: Callable[[str, ServerStack], Served]) -> Iterator[PerLedger[Served]]:
    """A `PerLedger` of `start` for the life of the `with` block: what was started is stopped at its end."""
    with ServerStack() as stack:
        yield PerLedger(start, stack)
