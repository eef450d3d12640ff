"""A server the benchmark starts itself: `auto-runtime serve --quiet` in a fresh folder on a free loopback port,
with the operator's environment and settings file (`--settings`: a YAML configuration file is `CONFIG_FILE`,
any other file is taken as the folder's `.env`), and one setting changed for `--compare`.

Its ledger is a SQLite file of its own (`LEDGER_FILE`; `DATABASE_URL` is dropped), so a benchmark never writes
to the operator's own ledger. The servers of one benchmark share a folder (`BenchFolder`), so the sandbox's
compiled module, cached beside the ledger, is compiled by the first server only; the folder is removed at the
end. That first compile (a minute or more on a busy machine) is skipped when the operator's own server already
compiled the module: the folder's cache starts with a copy of the `.cwasm` files of the cache an `auto-runtime
serve` with the same environment reads (beside `LEDGER_FILE`, else `~/.auto-runtime/cache`). The engine checks
each file it loads and compiles again when one does not fit, so a copy that does not fit only costs the
compile."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

import httpx

from auto_runtime.bench.load import free_port
from auto_runtime.bench.target import Target

START_BOUND_SECONDS = 300.0
"""How long a server may take to answer `/health`: the first compiles the sandbox's module (a minute or more on a
busy machine)."""
STOP_BOUND_SECONDS = 30.0
DROPPED = ("PORT", "HOST", "LEDGER_FILE", "DATABASE_URL", "CONFIG_FILE", "PUBLIC_URL")
YAML_SUFFIXES = (".yaml", ".yml")
COMPILED_SUFFIX = ".cwasm"


class ServerFailed(RuntimeError):
    """The benchmark's own server did not start (its log says why)."""


class BenchFolder:
    """The folder of one benchmark's servers, each in a folder of its own inside, their ledgers side by side."""

    def __init__(self, environ: Mapping[str, str] = os.environ) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="auto-runtime-bench-"))
        self.servers = 0
        self._seed_cache(operator_cache(environ))

    def _seed_cache(self, source: Path) -> None:
        """Copy the compiled modules of `source` into the servers' cache (beside their ledgers); whatever cannot
        be read or copied is left for the first server to compile."""
        cache = self.path / "cache"
        try:
            compiled = [entry for entry in source.iterdir() if entry.name.endswith(COMPILED_SUFFIX)]
            if compiled:
                cache.mkdir(mode=0o700, exist_ok=True)
            for entry in compiled:
                shutil.copyfile(entry, cache / entry.name)
        except OSError:
            return

    def next_server(self) -> tuple[Path, Path]:
        """A new server's working folder and ledger file."""
        self.servers += 1
        folder = self.path / f"server-{self.servers}"
        folder.mkdir()
        return folder, self.path / f"ledger-{self.servers}.db"

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def operator_cache(environ: Mapping[str, str]) -> Path:
    """The sandbox cache of a server started with `environ`: beside its `LEDGER_FILE`, else in the home's."""
    ledger_file = environ.get("LEDGER_FILE")
    base = Path(ledger_file).expanduser().parent if ledger_file else Path.home() / ".auto-runtime"
    return base / "cache"


class OwnServer:
    def __init__(self, place: BenchFolder, settings_file: Path | None, changed: Mapping[str, str]) -> None:
        self.folder, ledger_file = place.next_server()
        self.port = free_port()
        environment = {name: value for name, value in os.environ.items() if name not in DROPPED}
        environment |= {"PORT": str(self.port), "HOST": "127.0.0.1", "LEDGER_FILE": str(ledger_file)}
        if settings_file is not None:
            if settings_file.suffix in YAML_SUFFIXES:
                environment["CONFIG_FILE"] = str(settings_file.resolve())
            else:
                shutil.copyfile(settings_file, self.folder / ".env")
        environment |= changed
        self.log_path = self.folder / "server.log"
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "auto_runtime", "serve", "--quiet"],
                cwd=self.folder,
                env=environment,
                stdout=log,
                stderr=log,
            )

    @property
    def target(self) -> Target:
        return Target("127.0.0.1", self.port)

    def wait_until_healthy(self) -> None:
        deadline = time.monotonic() + START_BOUND_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ServerFailed(f"the server exited at start:\n{self.log_path.read_text(errors='replace')[-2000:]}")
            try:
                if httpx.get(f"{self.target.base_url}/health", timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.1)
        raise ServerFailed(f"the server did not answer /health within {START_BOUND_SECONDS:g} s")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_BOUND_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
