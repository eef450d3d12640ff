"""One OS process owned by one task or actor: spawned under a data-segment limit, talked to in lines on its pipes,
ended and reaped by its owner.

The memory limit is `RLIMIT_DATA` (design §4: "each owning an OS process with RLIMIT_DATA"): since Linux 4.7 it
bounds the data segment and every private writable mapping, so the heap, `mmap`ed arenas and the large blocks
`malloc` maps all count against it, while the address space a runtime only reserves (code, shared libraries,
untouched `PROT_NONE` ranges) does not. A tiny launcher calls `resource.setrlimit(RLIMIT_DATA, ...)` and then
`exec`s the command, so the limit holds before the command imports anything (the same process, the same pid),
and no `preexec_fn` runs in a forked copy of this multi-threaded process.

Concurrency rules: an `OwnedProcess` belongs to the one task or actor that spawned it, on the Trio thread; it does
not serialise concurrent `exchange`s itself (its owner sends one line at a time). `aclose` is shielded, so an
owner being cancelled still reaps its process and closes its pipes.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence

import trio
import trio.lowlevel

from auto_runtime.supervision.process_errors import (
    ProcessChildError,
    ProcessExitedError,
    ProcessNotReadyError,
    ProcessNotRunningError,
    ProcessTimeoutError,
)

log = logging.getLogger("auto_runtime.supervision.owned_process")

MAX_LINE_BYTES = 16 * 1024 * 1024

_RLIMIT_LAUNCHER = (
    "import os, resource, sys\n"
    "limit = int(sys.argv[1])\n"
    "resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)


def limited_command(argv: Sequence[str], memory_limit: int | None) -> list[str]:
    """`argv` behind the launcher that sets `RLIMIT_DATA` to `memory_limit` bytes first (None: `argv` as it is)."""
    if memory_limit is None:
        return list(argv)
    return [sys.executable, "-c", _RLIMIT_LAUNCHER, str(memory_limit), *argv]


class LineReader:
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


class OwnedProcess:
    """A spawned process with a line reader on its stdout and a writer on its stdin (see the module).

    `open` spawns it; `wait_ready` waits for its ready line; `spawn` does both and reaps the process when it is
    not ready. `stderr`: None inherits this process's stderr; pass `subprocess.DEVNULL` or a file descriptor
    otherwise (never `subprocess.PIPE`: nobody reads it, so the process would block on a full pipe).
    """

    __slots__ = ("_reader", "name", "process")

    def __init__(self, name: str, process: trio.Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.name = name
        self.process = process
        self._reader = LineReader(process.stdout)

    @classmethod
    async def open(
        cls,
        name: str,
        argv: Sequence[str],
        *,
        memory_limit: int | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stderr: int | None = None,
    ) -> OwnedProcess:
        """Spawn the process (an `OSError` when its command cannot run)."""
        if not argv:
            raise ValueError("a process needs a command")
        process = await trio.lowlevel.open_process(
            limited_command(argv, memory_limit),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=env,
            cwd=cwd,
        )
        return cls(name, process)

    @classmethod
    async def spawn(
        cls,
        name: str,
        argv: Sequence[str],
        *,
        ready_line: bytes | None = None,
        start_timeout: float = 30.0,
        memory_limit: int | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stderr: int | None = None,
    ) -> OwnedProcess:
        """`open`, then `wait_ready`; a process that is not ready (or a cancelled spawn) is ended and reaped."""
        owned = await cls.open(name, argv, memory_limit=memory_limit, env=env, cwd=cwd, stderr=stderr)
        try:
            await owned.wait_ready(ready_line, start_timeout)
        except BaseException:
            await owned.aclose()
            raise
        return owned

    @property
    def pid(self) -> int | None:
        """The pid while the process runs; None once it ended."""
        return self.process.pid if self.process.returncode is None else None

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    async def wait(self) -> int:
        """Wait until the process ends; its status (negative: the signal that ended it)."""
        return await self.process.wait()

    async def wait_ready(self, ready_line: bytes | None, timeout: float) -> None:
        """Wait for `ready_line` on stdout within `timeout` seconds (nothing to wait for when None)."""
        if ready_line is None:
            return
        with trio.move_on_after(timeout):
            try:
                line = await self._reader.read_line()
            except ProcessNotRunningError:
                returncode = await self.process.wait()
                raise ProcessExitedError(self.name, returncode) from None
            if line != ready_line:
                raise ProcessNotReadyError(f"process {self.name!r} printed {line!r} instead of its ready line")
            return
        raise ProcessNotReadyError(f"process {self.name!r} was not ready within {timeout}s")

    async def exchange(self, line: bytes, *, timeout: float) -> bytes:
        """Write one line and read one line back; kills the process when it takes longer than `timeout`
        (`ProcessTimeoutError`). A process that died before it took the line, or before it answered, is
        `ProcessNotRunningError`. A cancellation from outside is not a timeout: it leaves the process as it is."""
        with trio.move_on_after(timeout) as deadline:
            try:
                await self.write_line(line)
            except (trio.BrokenResourceError, trio.ClosedResourceError) as error:
                raise ProcessNotRunningError(f"process {self.name!r} ended before it took the line") from error
            return await self._reader.read_line()
        if deadline.cancelled_caught:
            log.warning("process %s: no reply within %gs; killing it", self.name, timeout)
            self.kill()
        raise ProcessTimeoutError(f"process {self.name!r} gave no reply within {timeout}s")

    async def write_line(self, line: bytes) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        await stdin.send_all(line + b"\n")

    async def read_line(self) -> bytes:
        return await self._reader.read_line()

    def kill(self) -> None:
        """SIGKILL the process when it still runs."""
        if self.process.returncode is None:
            self.process.kill()

    def terminate(self) -> None:
        """SIGTERM the process when it still runs."""
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)

    async def aclose(self) -> None:
        """End the process and reap it: stdin closed, SIGKILL when it still runs, its status awaited, stdout
        closed. Shielded: it completes even in a cancelled task."""
        with trio.CancelScope(shield=True):
            stdin, stdout = self.process.stdin, self.process.stdout
            if stdin is not None:
                await stdin.aclose()
            self.kill()
            await self.process.wait()
            if stdout is not None:
                await stdout.aclose()
