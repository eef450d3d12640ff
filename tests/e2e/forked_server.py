"""Test servers forked from a process that imported the server once, instead of a fresh interpreter each.

A fresh `python -m auto_runtime serve` spends about 2 s of CPU before it serves, nearly all of it importing
the server, and the suite starts well over a hundred servers. `launch` forks each one instead from the test
process's multiprocessing forkserver, which imported `auto_runtime.server` once and paid what each start
would otherwise pay again (`PRELOAD`, `server_warm_up`): the child takes
the server's folder as its working directory, the server's environment as its whole environment (in place,
so what it starts inherits it), its log file as standard output and error, and runs `auto_runtime.cli.main`
with the arguments, as `python -m auto_runtime` does.

What differs from a fresh interpreter, and why it does not matter to the server: its modules were imported
under the test process's environment (nothing in the server reads the environment at import), and its
parent is the forkserver, not the test: `ForkedServer` answers the few `subprocess.Popen` calls the tests
make (`pid`, `poll`, `wait`, `send_signal`, `kill`, `returncode`) from the forkserver's report of the exit.
The forkserver holds no threads, so a fork copies no lock held by another thread. The CLI's own tests keep
starting real interpreters (`run_command`), and the image's tests run the installed command.

A server does not outlive the test process that asked for it: it is asked to stop (SIGTERM, its clean stop)
when that process ends (`tests/fakes/lifeline.py`), so a test worker that dies leaves no server holding a port or
a database. (The forkserver cannot tell: every child it forks holds a copy of the pipe by which it would see its
parent end, so it lasts as long as they do.)
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from multiprocessing.process import BaseProcess
from pathlib import Path

from tests.fakes.lifeline import end_with

PRELOAD = ["auto_runtime.server", "auto_runtime.cli", "tests.e2e.server_warm_up", __name__]
"""What the forkserver imports once, before it forks any server (`server_warm_up` runs its warm-up as it is
imported)."""

_context = multiprocessing.get_context("forkserver")
_context.set_forkserver_preload(PRELOAD)


def _serve(
    arguments: Sequence[str], folder: str, environment: Mapping[str, str], log_path: str, error_path: str, tests: int
) -> None:
    """The child: become the server's process, then run its command line (which ends the process itself)."""
    end_with(tests, signal.SIGTERM)
    os.chdir(folder)
    os.environ.clear()
    os.environ.update(environment)
    for number, path in ((1, log_path), (2, error_path)):
        log = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.dup2(log, number)
        os.close(log)
    sys.argv = command_of(arguments)
    from auto_runtime.cli import main

    raise SystemExit(main(list(arguments)))


class ForkedServer:
    """The `subprocess.Popen` calls the tests make, for a server the forkserver forked."""

    def __init__(self, process: BaseProcess, command: Sequence[str]) -> None:
        self._process = process
        self.args = list(command)
        """The command line the server runs as (`python -m auto_runtime ...`), as `Popen.args`."""

    @property
    def pid(self) -> int:
        pid = self._process.pid
        assert pid is not None
        return pid

    @property
    def returncode(self) -> int | None:
        return self._process.exitcode

    def poll(self) -> int | None:
        self._process.join(0)
        return self._process.exitcode

    def wait(self, timeout: float | None = None) -> int:
        self._process.join(timeout)
        code = self._process.exitcode
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        return code

    def send_signal(self, number: int) -> None:
        if self._process.exitcode is None:
            os.kill(self.pid, number)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


def command_of(arguments: Sequence[str]) -> list[str]:
    """The command line a forked server stands for: `python -m auto_runtime <arguments>`."""
    return [sys.executable, "-m", "auto_runtime", *arguments]


def launch(
    arguments: Sequence[str],
    folder: Path,
    environment: Mapping[str, str],
    log_path: Path,
    error_path: Path | None = None,
) -> ForkedServer:
    """Fork a server running `auto_runtime <arguments>` in `folder` with exactly `environment`, its output
    appended to `log_path` (its standard error to `error_path` instead, when given)."""
    process = _context.Process(
        target=_serve,
        args=(
            tuple(arguments),
            str(folder),
            dict(environment),
            str(log_path),
            str(error_path or log_path),
            os.getpid(),
        ),
        name=f"auto-runtime {' '.join(arguments)}",
    )
    process.start()
    return ForkedServer(process, command_of(arguments))
