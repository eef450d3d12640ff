"""A supervised OS process: stdio pipes, an address-space limit, health checks, a kill on timeout.

Concurrency rules
- One `ProcessChild` owns at most one live process at a time; each supervised life starts a new one.
- `exchange` (a line out, a line back) is serialised by a lock, so concurrent callers never interleave on
  the pipes; a caller that times out kills the process (its reply would arrive for the next caller
  otherwise), and the supervisor restarts it.
- The address-space limit is set by a tiny launcher that calls `resource.setrlimit(RLIMIT_AS, ...)` and
  then `exec`s the command, so the limit holds before the command imports anything, and no
  `preexec_fn` runs in a forked copy of this multi-threaded process.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence

import trio
import trio.lowlevel

from auto_runtime.supervision.child_spec import DEFAULT_SHUTDOWN_SECONDS, ChildContext, ChildSpec, Restart

log = logging.getLogger("auto_runtime.supervision.process_child")

MAX_LINE_BYTES = 16 * 1024 * 1024

_RLIMIT_LAUNCHER = (
    "import os, resource, sys\n"
    "limit = int(sys.argv[1])\n"
    "resource.setrlimit(resource.RLIMIT_AS, (limit, limit))\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)


class ProcessChildError(Exception):
    """Base of the errors a process child reports."""


class ProcessExitedError(ProcessChildError):
    """The process ended by itself with a non-zero status (or a signal)."""

    def __init__(self, name: str, returncode: int) -> None:
        super().__init__(f"process {name!r} exited with status {returncode}")
        self.returncode = returncode


class ProcessNotReadyError(ProcessChildError):
    """The process did not print its ready line within the start timeout, or printed something else."""


class ProcessUnhealthyError(ProcessChildError):
    """The health check failed or timed out; the process was killed."""


class ProcessNotRunningError(ProcessChildError):
    """No live process to talk to (not started yet, restarting, or its output ended)."""


class ProcessTimeoutError(ProcessChildError):
    """An exchange took longer than its timeout; the process was killed."""


HealthCheck = Callable[["ProcessChild"], Awaitable[None]]
"""Raises (or hangs past `health_timeout`) when the process is unhealthy."""


class _LineReader:
    """Splits a byte stream into lines, holding at most `MAX_LINE_BYTES` of a partial line."""

    __slots__ = ("_buffer", "_stream")

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self._stream = stream
        self._buffer = bytearray()

    async def read_line(self) -> bytes:
        start = 0
        while True:
            end = self._buffer.find(b"\n", start)
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                return line
            if len(self._buffer) > MAX_LINE_BYTES:
                raise ProcessChildError(f"a line longer than {MAX_LINE_BYTES} bytes")
            start = len(self._buffer)
            chunk = await self._stream.receive_some(65536)
            if not chunk:
                raise ProcessNotRunningError("the process closed its output")
            self._buffer += chunk


class ProcessChild:
    """An OS process run as a supervised child; talk to the live one with `exchange` or the line methods.

    - `memory_limit`: bytes of address space (`RLIMIT_AS`) for the process, or None for no limit.
    - `ready_line`: when set, the process counts as started only after printing exactly this line on
      stdout within `start_timeout` seconds; otherwise it counts as started once spawned.
    - `health_check`: awaited every `health_interval` seconds, limited to `health_timeout`.
    - `stderr`: None inherits this process's stderr; pass `subprocess.DEVNULL` or a file descriptor
      otherwise (never `subprocess.PIPE`: nobody reads it, so the process would block on a full pipe).
    - Stop: stdin is closed and SIGTERM sent; after the spec's shutdown timeout the supervisor cancels
      the child, which kills the process (SIGKILL).
    """

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        *,
        memory_limit: int | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        ready_line: bytes | None = None,
        start_timeout: float = 30.0,
        health_check: HealthCheck | None = None,
        health_interval: float = 10.0,
        health_timeout: float = 5.0,
        stderr: int | None = None,
    ) -> None:
        if not argv:
            raise ValueError("a process child needs a command")
        self.name = name
        self.argv = list(argv)
        self.memory_limit = memory_limit
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.ready_line = ready_line
        self.start_timeout = start_timeout
        self.health_check = health_check
        self.health_interval = health_interval
        self.health_timeout = health_timeout
        self.stderr = stderr
        self._process: trio.Process | None = None
        self._reader: _LineReader | None = None
        self._exchange_lock = trio.Lock()
        self._health_failure: Exception | None = None
        self._ready = trio.Event()
        self.starts = 0
        """How many processes this child has spawned so far (one per supervised life)."""

    def child_spec(
        self, *, restart: Restart = Restart.PERMANENT, shutdown: float = DEFAULT_SHUTDOWN_SECONDS
    ) -> ChildSpec:
        return ChildSpec(name=self.name, start=self.run, restart=restart, shutdown=shutdown)

    @property
    def pid(self) -> int | None:
        process = self._process
        return process.pid if process is not None and process.returncode is None else None

    @property
    def command(self) -> list[str]:
        """The command actually spawned (with the rlimit launcher in front when a limit is set)."""
        if self.memory_limit is None:
            return list(self.argv)
        return [sys.executable, "-c", _RLIMIT_LAUNCHER, str(self.memory_limit), *self.argv]

    async def run(self, ctx: ChildContext) -> None:
        """One life: spawn, wait until ready, watch health until the process ends or is stopped."""
        process = await trio.lowlevel.open_process(
            self.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=self.env,
            cwd=self.cwd,
        )
        assert process.stdout is not None
        self.starts += 1
        self._process = process
        self._reader = _LineReader(process.stdout)
        self._health_failure = None
        try:
            await self._wait_ready(process)
            self._ready.set()
            ctx.started()
            ctx.on_stop_requested(self._terminate)
            async with trio.open_nursery() as nursery:
                if self.health_check is not None:
                    nursery.start_soon(self._watch_health, process)
                returncode = await process.wait()
                nursery.cancel_scope.cancel()
            if self._health_failure is not None:
                raise ProcessUnhealthyError(
                    f"process {self.name!r} failed its health check: {self._health_failure!r}"
                ) from self._health_failure
            if returncode != 0 and not ctx.stop_requested:
                raise ProcessExitedError(self.name, returncode)
        finally:
            self._process = None
            self._reader = None
            if self._ready.is_set():
                self._ready = trio.Event()
            with trio.CancelScope(shield=True):
                if process.returncode is None:
                    process.kill()
                await process.wait()
                for stream in (process.stdin, process.stdout):
                    if stream is not None:
                        await stream.aclose()

    @property
    def ready(self) -> bool:
        """A live process has started (and printed its ready line, when one is configured)."""
        return self._ready.is_set()

    async def wait_ready(self) -> None:
        """Wait until a live process is ready (for example after a restart)."""
        await self._ready.wait()

    async def exchange(self, line: bytes, *, timeout: float) -> bytes:
        """Write one line and read one line back; kills the process when it takes longer than `timeout`. A
        process that died before it took the line is `ProcessNotRunningError`, as one that died before it
        answered."""
        async with self._exchange_lock:
            process, reader = self._require()
            assert process.stdin is not None
            with trio.move_on_after(timeout) as deadline:
                try:
                    await process.stdin.send_all(line + b"\n")
                except (trio.BrokenResourceError, trio.ClosedResourceError) as error:
                    raise ProcessNotRunningError(f"process {self.name!r} ended before it took the line") from error
                return await reader.read_line()
            if deadline.cancelled_caught:
                log.warning("process %s: no reply within %gs; killing it", self.name, timeout)
                self.kill()
            raise ProcessTimeoutError(f"process {self.name!r} gave no reply within {timeout}s")

    async def write_line(self, line: bytes) -> None:
        process, _ = self._require()
        assert process.stdin is not None
        await process.stdin.send_all(line + b"\n")

    async def read_line(self) -> bytes:
        _, reader = self._require()
        return await reader.read_line()

    def kill(self) -> None:
        """SIGKILL the live process; the supervisor sees it end and applies the restart type."""
        process = self._process
        if process is not None and process.returncode is None:
            process.kill()

    def _terminate(self) -> None:
        process = self._process
        if process is not None and process.returncode is None:
            process.send_signal(signal.SIGTERM)

    def _require(self) -> tuple[trio.Process, _LineReader]:
        process, reader = self._process, self._reader
        if process is None or reader is None or process.returncode is not None or not self.ready:
            raise ProcessNotRunningError(f"process {self.name!r} is not running")
        return process, reader

    async def _wait_ready(self, process: trio.Process) -> None:
        if self.ready_line is None:
            return
        assert self._reader is not None
        with trio.move_on_after(self.start_timeout) as deadline:
            try:
                line = await self._reader.read_line()
            except ProcessNotRunningError:
                returncode = await process.wait()
                raise ProcessExitedError(self.name, returncode) from None
            if line != self.ready_line:
                raise ProcessNotReadyError(f"process {self.name!r} printed {line!r} instead of its ready line")
            return
        if deadline.cancelled_caught:
            raise ProcessNotReadyError(f"process {self.name!r} was not ready within {self.start_timeout}s")

    async def _watch_health(self, process: trio.Process) -> None:
        assert self.health_check is not None
        while True:
            await trio.sleep(self.health_interval)
            try:
                with trio.fail_after(self.health_timeout):
                    await self.health_check(self)
            except Exception as error:
                log.warning("process %s: health check failed (%r); killing it", self.name, error)
                self._health_failure = error
                process.kill()
                return
