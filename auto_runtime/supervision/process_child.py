"""A supervised OS process: stdio pipes, a data-segment limit, health checks, a kill on timeout.

Concurrency rules
- One `ProcessChild` owns at most one live process at a time (an `OwnedProcess`); each supervised life starts a
  new one.
- `exchange` (a line out, a line back) is serialised by a lock, so concurrent callers never interleave on
  the pipes; a caller that times out kills the process (its reply would arrive for the next caller
  otherwise), and the supervisor restarts it.
- The memory limit is `RLIMIT_DATA`, the one every process the server owns runs under (the model processes
  too): `owned_process`'s launcher calls `resource.setrlimit(RLIMIT_DATA, ...)` and then `exec`s the command,
  so the limit holds before the command imports anything, and no `preexec_fn` runs in a forked copy of this
  multi-threaded process. It bounds the heap and every private writable mapping, not the address space a
  runtime only reserves.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence

import trio

from auto_runtime.supervision.child_spec import DEFAULT_SHUTDOWN_SECONDS, ChildContext, ChildSpec, Restart
from auto_runtime.supervision.owned_process import MAX_LINE_BYTES, OwnedProcess, limited_command
from auto_runtime.supervision.process_errors import (
    ProcessChildError,
    ProcessExitedError,
    ProcessNotReadyError,
    ProcessNotRunningError,
    ProcessTimeoutError,
    ProcessUnhealthyError,
)

__all__ = [
    "MAX_LINE_BYTES",
    "HealthCheck",
    "ProcessChild",
    "ProcessChildError",
    "ProcessExitedError",
    "ProcessNotReadyError",
    "ProcessNotRunningError",
    "ProcessTimeoutError",
    "ProcessUnhealthyError",
]

log = logging.getLogger("auto_runtime.supervision.process_child")


HealthCheck = Callable[["ProcessChild"], Awaitable[None]]
"""Raises (or hangs past `health_timeout`) when the process is unhealthy."""


class ProcessChild:
    """An OS process run as a supervised child; talk to the live one with `exchange` or the line methods.

    - `memory_limit`: bytes of data segment and private writable mappings (`RLIMIT_DATA`) for the process, or
      None for no limit.
    - `ready_line`: when set, the process counts as started only after printing exactly this line on
      stdout within `start_timeout` seconds; otherwise it counts as started once spawned.
    - `health_check`: awaited every `health_interval` seconds, limited to `health_timeout`.
    - `stderr`: None inherits this process's stderr; pass `subprocess.DEVNULL` or a file descriptor
      otherwise (never `subprocess.PIPE`: nobody reads it, so the process would block on a full pipe).
    - Stop: SIGTERM is sent; after the spec's shutdown timeout the supervisor cancels the child, which kills
      the process (SIGKILL). Whichever way a life ends, its process is reaped and its pipes closed.
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
        self._owned: OwnedProcess | None = None
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
        owned = self._owned
        return owned.pid if owned is not None else None

    @property
    def command(self) -> list[str]:
        """The command actually spawned (with the rlimit launcher in front when a limit is set)."""
        return limited_command(self.argv, self.memory_limit)

    async def run(self, ctx: ChildContext) -> None:
        """One life: spawn, wait until ready, watch health until the process ends or is stopped."""
        owned = await OwnedProcess.open(
            self.name, self.argv, memory_limit=self.memory_limit, env=self.env, cwd=self.cwd, stderr=self.stderr
        )
        self.starts += 1
        self._owned = owned
        self._health_failure = None
        try:
            await owned.wait_ready(self.ready_line, self.start_timeout)
            self._ready.set()
            ctx.started()
            ctx.on_stop_requested(owned.terminate)
            async with trio.open_nursery() as nursery:
                if self.health_check is not None:
                    nursery.start_soon(self._watch_health, owned)
                returncode = await owned.wait()
                nursery.cancel_scope.cancel()
            if self._health_failure is not None:
                raise ProcessUnhealthyError(
                    f"process {self.name!r} failed its health check: {self._health_failure!r}"
                ) from self._health_failure
            if returncode != 0 and not ctx.stop_requested:
                raise ProcessExitedError(self.name, returncode)
        finally:
            self._owned = None
            if self._ready.is_set():
                self._ready = trio.Event()
            await owned.aclose()

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
            return await self._require().exchange(line, timeout=timeout)

    async def write_line(self, line: bytes) -> None:
        await self._require().write_line(line)

    async def read_line(self) -> bytes:
        return await self._require().read_line()

    def kill(self) -> None:
        """SIGKILL the live process; the supervisor sees it end and applies the restart type."""
        owned = self._owned
        if owned is not None:
            owned.kill()

    def _require(self) -> OwnedProcess:
        owned = self._owned
        if owned is None or owned.returncode is not None or not self.ready:
            raise ProcessNotRunningError(f"process {self.name!r} is not running")
        return owned

    async def _watch_health(self, owned: OwnedProcess) -> None:
        assert self.health_check is not None
        while True:
            await trio.sleep(self.health_interval)
            try:
                with trio.fail_after(self.health_timeout):
                    await self.health_check(self)
            except Exception as error:
                log.warning("process %s: health check failed (%r); killing it", self.name, error)
                self._health_failure = error
                owned.kill()
                return
