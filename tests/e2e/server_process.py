"""Starting the real server as a process on a free loopback port, the way `make serve` does (forked from a
process that imported it once: `forked_server`)."""

from __future__ import annotations

import itertools
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from auto_runtime.server import cache_folder_of
from auto_runtime.settings import SettingsError, load_settings
from auto_runtime.settings.variables import Mode
from tests.client_tls import tls_context
from tests.e2e.forked_server import ForkedServer, launch
from tests.sandbox_engine import seed_cache

START_TIMEOUT_SECONDS = 60.0
STOP_TIMEOUT_SECONDS = 30.0
COMMAND_TIMEOUT_SECONDS = 120.0

STARTS_RECORD = "AUTO_RUNTIME_TEST_STARTS"
"""When set, the file every server start of the tests appends a line to: the test that started it (as pytest
names it in `PYTEST_CURRENT_TEST`) and the server's arguments, then, at its stop, its CPU seconds. For measuring
where the suite's starts go: `AUTO_RUNTIME_TEST_STARTS=/tmp/starts.tsv pytest ...`."""


PORTS_PER_WORKER = 1000
FIRST_PORT = 20000
"""Test servers listen below the kernel's ephemeral range (32768 and up here), each test worker in a block of
its own: `gw0` from 20000, `gw1` from 21000, and so on."""
_next_ports: Iterator[int] | None = None


def ports_of_worker(worker: str) -> range:
    """The block of ports of the test worker named `worker` (`gw0`, `gw1`, ...; twelve blocks in all)."""
    first = FIRST_PORT + PORTS_PER_WORKER * (int(worker.removeprefix("gw") or 0) % 12)
    return range(first, first + PORTS_PER_WORKER)


def free_port() -> int:
    """A loopback port for a server of this test worker: free now, and taken by nobody else before the server
    binds it.

    A port the kernel picks (`bind` to port 0) comes from its ephemeral range, which every outgoing connection
    of the machine draws from too, and another worker may be handed the same one before either server binds
    it: a test then talks to another test's server. Ports of the worker's own block avoid both; one in use (a
    server of this worker still running, or a port of something else on the machine) is skipped."""
    global _next_ports
    if _next_ports is None:
        _next_ports = itertools.cycle(ports_of_worker(os.environ.get("PYTEST_XDIST_WORKER", "gw0")))
    for port in itertools.islice(_next_ports, PORTS_PER_WORKER):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError(f"every port of this worker's block of {PORTS_PER_WORKER} is in use")


def base_environment(home: Path) -> dict[str, str]:
    """A clean environment: nothing of the developer's own settings leaks into a test server.

    `PYTHONPATH` is kept, so a server started from a worktree imports that worktree's code."""
    keep = ("PATH", "PYTHONPATH", "LANG", "LC_ALL", "SYSTEMROOT", "TMPDIR")
    environment = {name: os.environ[name] for name in keep if name in os.environ}
    environment["HOME"] = str(home)
    environment["LOG_LEVEL"] = "info"
    environment["LOG_FORMAT"] = "json"
    return environment


@dataclass
class ServerProcess:
    process: ForkedServer
    base_url: str
    folder: Path
    log_path: Path
    asked_to_stop: bool = False

    def client(self, **headers: str) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=30.0, verify=tls_context())

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> int:
        """SIGTERM, then the exit code (SIGKILL and a failure when it does not stop in time)."""
        self.ask_to_stop()
        return self.stopped()

    def ask_to_stop(self) -> None:
        """SIGTERM, once and when it still runs, without waiting: `stopped` waits. Several servers asked first
        and waited for after stop side by side. (A second SIGTERM is not sent: a server may take it as "now".)"""
        if not self.asked_to_stop and self.process.poll() is None:
            self.asked_to_stop = True
            record_start("stop", f"{cpu_seconds_of(self.process.pid):.2f}")
            self.process.send_signal(signal.SIGTERM)

    def stopped(self) -> int:
        """The exit code once it ended, within `STOP_TIMEOUT_SECONDS` (SIGKILL and a failure past them)."""
        try:
            return self.process.wait(STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError("the server did not stop within its bound after SIGTERM") from None


def record_start(*fields: str) -> None:
    """One line of `STARTS_RECORD`'s file, when the variable names one: the current test, then `fields`."""
    if (record := os.environ.get(STARTS_RECORD)) is None:
        return
    test = os.environ.get("PYTEST_CURRENT_TEST", "-").rsplit(" (", 1)[0]
    with open(record, "a", encoding="utf-8") as lines:
        lines.write("\t".join((test, *fields)) + "\n")


def cpu_seconds_of(pid: int) -> float:
    """The CPU seconds (user and system) a running process of this machine has used so far, from `/proc`."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sandbox_cache_of(environment: Mapping[str, str], folder: Path, mode: Mode = "command_line") -> Path | None:
    """The folder a server with this environment, started in `folder`, keeps its compiled sandbox module in,
    found the way the server finds it (`load_settings`, `cache_folder_of`); None when its settings are wrong
    (it will not get as far as the sandbox).

    Without a SQLite ledger the server's folder is under its home, and `cache_folder_of` reads the home of
    the process that calls it: here it is taken from the server's `HOME` instead, the same path."""
    try:
        settings = load_settings(environment, folder, mode).settings
    except SettingsError:
        return None
    if settings.ledger_file is None:
        return Path(environment["HOME"]) / ".auto-runtime" / "cache"
    return cache_folder_of(settings)


def start_server(
    folder: Path,
    settings: Mapping[str, str] | None = None,
    *,
    port: int | None = None,
    seed_sandbox: bool = True,
    arguments: Sequence[str] = ("serve",),
    mode: Mode = "command_line",
) -> ServerProcess:
    """Starts `auto_runtime serve` (or `arguments` instead of `serve`) in `folder`, forked (`forked_server`), and
    waits for `/health`.

    `mode` is the defaults the arguments pick (`"image"` with `--image`), for finding the sandbox's cache folder.

    With `seed_sandbox` (the default) the session's compiled sandbox module is first copied where the server
    looks for it (`tests/sandbox_engine.py`), so its start loads the module instead of compiling it; a test of
    how the server makes its own folders passes False, so that nothing is made before the server."""
    folder.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    environment = base_environment(folder)
    environment["PORT"] = str(port)
    environment.update(settings or {})
    if seed_sandbox and (cache_folder := sandbox_cache_of(environment, folder, mode)) is not None:
        seed_cache(cache_folder)
    log_path = folder / "server.log"
    record_start("start", " ".join(arguments))
    process = launch(arguments, folder, environment, log_path)
    host = environment.get("HOST", "127.0.0.1")
    base_url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '127.0.0.1') else host}:{port}"
    server = ServerProcess(process, base_url, folder, log_path)
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    with httpx.Client(timeout=1.0, verify=tls_context()) as poll:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise AssertionError(f"the server exited with {process.returncode}:\n{server.log()}")
            try:
                if poll.get(f"{base_url}/health").status_code == 200:
                    return server
            except httpx.TransportError:
                pass
            time.sleep(0.1)
    server.stop()
    raise AssertionError(f"the server did not answer /health within {START_TIMEOUT_SECONDS} s:\n{server.log()}")


def run_forked(
    folder: Path, *arguments: str, settings: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`run_command`, forked (`forked_server`) instead of a fresh interpreter, for a start the test expects to
    be refused: about 2 s of CPU less each. Its output is read from two files of `folder` once it ended.

    A `serve` gets the session's compiled sandbox module first, as from `start_server`: the server makes its
    sandbox engine before some of its checks refuse the start, and without the module it compiles one (some
    seconds of CPU on every core) only to stop."""
    folder.mkdir(parents=True, exist_ok=True)
    environment = base_environment(folder)
    environment.update(settings or {})
    mode: Mode = "image" if "--image" in arguments else "command_line"
    if arguments[:1] == ("serve",) and (cache_folder := sandbox_cache_of(environment, folder, mode)) is not None:
        seed_cache(cache_folder)
    output, errors = folder / "command.out", folder / "command.err"
    for path in (output, errors):
        path.unlink(missing_ok=True)
    process = launch(arguments, folder, environment, output, errors)
    try:
        code = process.wait(COMMAND_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise
    return subprocess.CompletedProcess(
        process.args, code, output.read_text(errors="replace"), errors.read_text(errors="replace")
    )


def run_command(
    folder: Path, *arguments: str, settings: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m auto_runtime <arguments>` in a fresh interpreter, as a person runs it: for the tests of the
    command line itself."""
    environment = base_environment(folder)
    environment.update(settings or {})
    return subprocess.run(
        [sys.executable, "-m", "auto_runtime", *arguments],
        cwd=folder,
        env=environment,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_SECONDS,
        check=False,
    )
