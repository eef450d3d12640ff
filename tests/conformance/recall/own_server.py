"""A server of the recall tests' own, on either ledger, that a test may stop, kill and start again on the same
ledger with other settings (the shared local server cannot be restarted)."""

from __future__ import annotations

import base64
import secrets
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.e2e.server_process import ServerProcess, start_server
from tests.postgres_support import fresh_database


@dataclass
class OwnServer:
    """The folder and ledger settings a server keeps across its lives; `start` begins a new life."""

    folder: Path
    ledger: dict[str, str]
    lives: list[ServerProcess] = field(default_factory=list)

    def start(self, **settings: str) -> ServerProcess:
        server = start_server(self.folder, {**self.ledger, **settings})
        self.lives.append(server)
        return server

    def kill(self, server: ServerProcess) -> None:
        """SIGKILL: nothing of the server's stop runs."""
        server.process.kill()
        server.process.wait()


@contextmanager
def own_server(folder: Path, ledger_kind: str) -> Iterator[OwnServer]:
    with ExitStack() as stack:
        ledger: dict[str, str] = {"LEDGER_FILE": str(folder / "ledger.db")}
        if ledger_kind == "postgres":
            ledger = {
                "DATABASE_URL": stack.enter_context(fresh_database("recall_test")),
                "SECRETS_KEY": base64.b64encode(secrets.token_bytes(32)).decode(),
            }
        own = OwnServer(folder, ledger)
        try:
            yield own
        finally:
            for server in own.lives:
                if server.process.poll() is None:
                    server.stop()
