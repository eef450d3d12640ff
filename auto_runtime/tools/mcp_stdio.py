"""The `stdio` kind: an MCP server the runtime runs as an OS process, under the supervision tree.

- The process is a `ProcessChild` (its `command` and `args`, its `env` as its whole environment, an optional
  `RLIMIT_DATA` limit) under a supervisor of its own (restarts with back-off, within a restart intensity), which
  the set starts, as a temporary child of the set's supervisor, when a run or a listing first needs the server.
  A supervisor that gives up is removed; the next need starts a new one.
- The MCP session speaks newline-delimited JSON-RPC over the process's stdin and stdout, bound to one life of
  the process: when that process ends, the session ends, its calls in flight fail (`server_failure`), and the
  next request waits for the restarted process (within the connect limit) and opens a new session.
- The process's stderr goes to the server's log line by line, scrubbed of the shared secrets, within a rate and a
  line length (`stderr_log`), with a count of the lines dropped.
- A process that fails to start is told apart from a server that cannot be reached (`stdio_lives`): a listing
  that fails says that the process exited with its status before it answered, with its last stderr line; that
  its command could not be run (at once, without waiting for the connect limit); or that it started but did not
  answer within the connect limit.
- A message past 4 MiB answers its request `too_large`; one past the process child's line cap ends the process.

Concurrency rules: all on the Trio thread; one reader and one writer task per session; the process child
serialises nothing else, since the session alone talks to the pipes.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import struct
import termios
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types
import trio
import trio.lowlevel
from mcp.client._transport import TransportStreams
from mcp.shared.message import SessionMessage

from auto_runtime.server_clock import WALL_CLOCK, ServerClock
from auto_runtime.settings import ToolServer
from auto_runtime.supervision import (
    Backoff,
    ProcessChild,
    ProcessChildError,
    Restart,
    RestartIntensity,
    Supervisor,
    SupervisorNotRunningError,
)
from auto_runtime.tools.kinds import STDIO_RESULT_CAP, Limits, ListedTool
from auto_runtime.tools.mcp_connection import McpConnection
from auto_runtime.tools.mcp_tools import TOO_LARGE_CODE, McpTools
from auto_runtime.tools.scrubbing import SecretSet
from auto_runtime.tools.servers import ToolCallResult, ToolServerFailed
from auto_runtime.tools.stderr_log import REPORT_SECONDS, StderrLog
from auto_runtime.tools.stdio_lives import WatchedChild, could_not_start, did_not_answer, ended_before_answering
from auto_runtime.tools.tracking import RequestTracker

log = logging.getLogger("auto_runtime.tools")

STOP_SECONDS = 5.0
SETTLE_POLL_SECONDS = 0.005
STDERR_SETTLE_SECONDS = 2.0
"""The longest a failure's words wait for the stderr pipe to be read to its end (a process that exited wrote
everything already; this bounds a live one that keeps writing)."""


def _too_large(line: bytes) -> SessionMessage | Exception:
    """An error answer, in place of a message past the stdio cap, to the request it answered."""
    try:
        identifier = json.loads(line).get("id")
    except (ValueError, AttributeError):
        identifier = None
    if not isinstance(identifier, str | int):
        return ValueError(f"a message of {len(line):,} bytes, past the stdio cap, answering no request")
    error = mcp_types.JSONRPCError(
        jsonrpc="2.0",
        id=identifier,
        error=mcp_types.ErrorData(
            code=TOO_LARGE_CODE, message=f"The result took {len(line):,} bytes; one call may return 4 MiB."
        ),
    )
    return SessionMessage(error)


def _parsed(line: bytes) -> SessionMessage | Exception:
    if len(line) > STDIO_RESULT_CAP:
        return _too_large(line)
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as error:
        return error


class StdioProcess:
    """The supervised process of one `stdio` entry, and its stderr pipe into the log."""

    def __init__(
        self,
        name: str,
        entry: ToolServer,
        secrets: SecretSet,
        *,
        memory_limit: int | None,
        backoff: Backoff,
        intensity: RestartIntensity,
        cwd: str | None,
        clock: ServerClock = WALL_CLOCK,
    ) -> None:
        assert entry.command is not None
        self.name = name
        self.clock = clock
        self.secrets = secrets
        self.backoff = backoff
        self.intensity = intensity
        self._stderr_read, self._stderr_write = os.pipe()
        self.stderr = StderrLog(name, secrets, clock.seconds)
        self.child = WatchedChild(
            f"stdio:{name}",
            [entry.command, *(entry.args or ())],
            memory_limit=memory_limit,
            env=dict(entry.env or {}),
            cwd=cwd,
            stderr=self._stderr_write,
        )
        self._parent: Supervisor | None = None
        self._supervisor: Supervisor | None = None
        self._lives = 0
        self._start_lock = trio.Lock()
        self.ended_life = 0
        self._reading = False
        """The newest life of the process whose session saw its pipes end: never connected to again."""

    def attach(self, nursery: trio.Nursery, parent: Supervisor) -> None:
        self._parent = parent
        if not self._reading:
            self._reading = True
            nursery.start_soon(self._log_stderr)

    async def ready_life(self, connect_seconds: float) -> int:
        """The number of the live, ready process (starting a supervisor first when none runs).

        `ProcessChild` offers no event for the end of a life (its ready event of an ended life stays set until
        its task has cleaned up), nor does a supervisor for giving up; so while neither has settled, this looks
        again every `SETTLE_POLL_SECONDS`, within the connect limit.
        """
        with self.clock.move_on_after(connect_seconds):
            while True:
                await self._ensure_supervised()
                child = self.child
                if child.spawn_failure is not None:
                    raise ToolServerFailed("unreachable", could_not_start(self.name, child.spawn_failure), 5)
                if child.ready and child.pid is not None and child.starts > self.ended_life:
                    return child.starts
                if child.ready:
                    await trio.sleep(SETTLE_POLL_SECONDS)
                else:
                    with trio.move_on_after(SETTLE_POLL_SECONDS * 20):
                        await child.wait_ready()
        raise ToolServerFailed("unreachable", f"The tool server {self.name} did not start in time.", 5)

    async def _ensure_supervised(self) -> None:
        async with self._start_lock:
            if self._supervisor is not None and self._supervisor.running:
                return
            parent = self._parent
            if parent is None:
                raise ToolServerFailed(
                    "unreachable",
                    f"The tool server {self.name} runs as a process, and the tool servers are not running.",
                    5,
                )
            self._lives += 1
            supervisor = Supervisor(
                f"stdio:{self.name}#{self._lives}",
                [self.child.child_spec(restart=Restart.PERMANENT, shutdown=STOP_SECONDS)],
                intensity=self.intensity,
                backoff=self.backoff,
            )
            try:
                await parent.start_child(supervisor.child_spec(restart=Restart.TEMPORARY, shutdown=STOP_SECONDS * 2))
            except SupervisorNotRunningError:
                raise ToolServerFailed("unreachable", f"The tool server {self.name} is stopping.", 5) from None
            self._supervisor = supervisor

    async def _log_stderr(self) -> None:
        """Read the pipe into the bounded log; a quiet pipe still reports the lines dropped before it."""
        stream = trio.lowlevel.FdStream(self._stderr_read)
        try:
            while True:
                with self.clock.move_on_after(REPORT_SECONDS) as quiet:
                    chunk = await stream.receive_some(65536)
                if quiet.cancelled_caught:
                    self.stderr.report_if_due()
                    continue
                if not chunk:
                    return
                self.stderr.feed(chunk)
        finally:
            self.stderr.report()
            with trio.CancelScope(shield=True):
                await stream.aclose()

    async def stderr_read(self) -> None:
        """Wait, within `STDERR_SETTLE_SECONDS`, until the pipe holds nothing unread, so `stderr.last_line` is
        the newest line a process that ended wrote (the reader task feeds each chunk as soon as it reads it)."""
        with trio.move_on_after(STDERR_SETTLE_SECONDS):
            while True:
                if not self._reading or self._unread() == 0:
                    return
                await trio.sleep(SETTLE_POLL_SECONDS)

    async def life_ended(self, life: int) -> None:
        """Wait, within `STDERR_SETTLE_SECONDS`, until the supervisor has seen `life` end (its status known).

        `ProcessChild` offers no event for it, so this looks again every `SETTLE_POLL_SECONDS`."""
        with trio.move_on_after(STDERR_SETTLE_SECONDS):
            while True:
                end = self.child.last_end
                if (end is not None and end.life >= life) or self.child.starts > life:
                    return
                await trio.sleep(SETTLE_POLL_SECONDS)

    def _unread(self) -> int:
        try:
            answer = fcntl.ioctl(self._stderr_read, termios.FIONREAD, b"\0\0\0\0")
        except OSError:
            return 0
        return int(struct.unpack("i", answer)[0])

    def close_pipe(self) -> None:
        """Close the write end kept for the next lives; the read end closes with its reader task, or here when
        none ever ran."""
        ends = [self._stderr_write] if self._reading else [self._stderr_write, self._stderr_read]
        for end in ends:
            try:
                os.close(end)
            except OSError:
                continue


@asynccontextmanager
async def process_transport(
    child: ProcessChild, life: int, tracker: RequestTracker, on_end: Callable[[], None]
) -> AsyncIterator[TransportStreams]:
    """Newline-delimited JSON-RPC over one life of `child`; ends when that process does."""
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)

    async def read() -> None:
        async with read_send:
            while child.starts == life:
                try:
                    line = await child.read_line()
                except ProcessChildError:
                    if child.starts == life:
                        child.kill()  # past its line cap, or its output ended: this life is over
                    break
                try:
                    await read_send.send(_parsed(line))
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    break
        on_end()

    async def write() -> None:
        async with write_receive:
            async for message in write_receive:
                outgoing = message.message
                if isinstance(outgoing, mcp_types.JSONRPCRequest):
                    tracker.sent({"method": outgoing.method, "id": outgoing.id, "params": outgoing.params})
                if child.starts != life:
                    break
                try:
                    await child.write_line(outgoing.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8"))
                except (ProcessChildError, trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    break
        on_end()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read)
        nursery.start_soon(write)
        try:
            yield read_receive, write_send
        finally:
            nursery.cancel_scope.cancel()
            await read_receive.aclose()
            await write_send.aclose()


class StdioServer:
    """One `stdio` entry's client: its supervised process and a kept session to the live one."""

    def __init__(
        self,
        name: str,
        entry: ToolServer,
        secrets: SecretSet,
        limits: Limits,
        backoff: Backoff,
        intensity: RestartIntensity,
        *,
        memory_limit: int | None = None,
        cwd: str | None = None,
        clock: ServerClock = WALL_CLOCK,
    ) -> None:
        self.name = name
        self.entry = entry
        self.limits = limits
        self.tracker = RequestTracker()
        self.process = StdioProcess(
            name, entry, secrets, memory_limit=memory_limit, backoff=backoff, intensity=intensity, cwd=cwd, clock=clock
        )
        self._life = 0
        self._answered = 0
        """The newest life of the process that answered a listing or a call."""
        self.connection = McpConnection(
            name, self._open_transport, connect_seconds=limits.connect, backoff=backoff, clock=clock
        )
        self.tools = McpTools(
            name, entry, self.connection, self.tracker, secrets, limits, STDIO_RESULT_CAP, before_request=self._ready
        )

    async def _ready(self) -> None:
        self._life = await self.process.ready_life(self.limits.connect)

    def _open_transport(self) -> Any:
        life = self._life

        def ended() -> None:
            """One session per life: a session that ends for any reason ends its process too (the supervisor
            starts a fresh one), since what the process would write next on the old pipes is unknown."""
            self.process.ended_life = max(self.process.ended_life, life)
            if self.process.child.starts == life:
                self.process.child.kill()
            self.connection.drop()

        return process_transport(self.process.child, life, self.tracker, ended)

    def attach(self, nursery: trio.Nursery, parent: Supervisor) -> None:
        self.process.attach(nursery, parent)
        self.tools.attach(nursery)

    async def list_tools(self) -> list[ListedTool]:
        connects = self.tools.connection.connects
        try:
            listed = await self.tools.list_tools()
        except ToolServerFailed as failed:
            if failed.because != "unreachable":
                raise
            raise await self._explained(failed, connects) from None
        self._answered = max(self._answered, self._life)
        return listed

    async def _explained(self, failed: ToolServerFailed, connects: int) -> ToolServerFailed:
        """An unreachable server told apart, when its process is why: its command could not be run; its newest
        life ended before any life since answered; or a live process opened no session (it hangs)."""
        if self._life and self.process.ended_life >= self._life:
            await self.process.life_ended(self._life)  # its pipes ended: the process is being reaped
        await self.process.stderr_read()
        child = self.process.child
        last_line = self.process.secrets(self.process.stderr.last_line)  # scrubbed before it is cut
        if child.spawn_failure is not None:
            words = could_not_start(self.name, child.spawn_failure)
        elif child.last_end is not None and child.last_end.life > self._answered:
            words = ended_before_answering(self.name, child.last_end.status, last_line)
        elif child.pid is not None and child.starts > self._answered and self.tools.connection.connects == connects:
            words = did_not_answer(self.name, self.limits.connect, last_line)
        else:
            return failed
        return ToolServerFailed("unreachable", words, failed.retry_after)

    async def call(
        self, tool: str, arguments: Mapping[str, Any], run_id: str, *, delivery_id: str | None = None
    ) -> ToolCallResult:
        result = await self.tools.call(tool, arguments, run_id, delivery_id=delivery_id)
        self._answered = max(self._answered, self._life)
        return result

    async def aclose(self) -> None:
        await self.tools.aclose()
        self.process.close_pipe()
