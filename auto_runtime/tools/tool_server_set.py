"""`ToolServerSet`: every `tool_servers` entry behind the one `ToolServers` interface a reasoning run uses.

One long-lived client per entry, by type (`mcp`, `stdio`, `openapi`), and one `SecretSet` for all of them (or
the one given, shared with the connections' sets), so a token minted for one run is scrubbed everywhere.
`offered` checks the names against the entries first (no server contacted), then asks each named server for its
list (reasoning-format §7.1); `call` makes one call, whose result and failure words come back scrubbed.

Lifecycle (what the server wires):

- `run(task_status=...)` reads every `openapi` document (a refusal raises `SettingsError`, naming the entry,
  before `started`), starts the set's supervisor (the stdio processes live under it, each started when first
  needed), lets the clients keep their sessions, and runs until `aclose` (or cancellation). `child_spec()` is the
  same as a child of the server's supervision tree.
- Without `run`, the set still works for `mcp` and `openapi` entries: each list and call opens its own session
  and closes it after, and a document is read when first needed; a `stdio` entry answers `unreachable`.
- `aclose` stops the processes cleanly (stdin closed, SIGTERM, SIGKILL after the shutdown budget), closes the
  kept sessions and the HTTP pools.

Concurrency rules: everything runs on the Trio thread; lists and calls of different servers, and of one server,
run concurrently over the kept sessions.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import trio

from auto_runtime.server_clock import WALL_CLOCK, ServerClock
from auto_runtime.settings import ToolServer
from auto_runtime.settings.errors import SettingsError
from auto_runtime.settings.loader import LoadedSettings
from auto_runtime.supervision import Backoff, ChildContext, ChildSpec, Restart, RestartIntensity, Supervisor
from auto_runtime.telemetry import tool_call_span
from auto_runtime.tools.hosts import HostPolicy, host_refusal
from auto_runtime.tools.kinds import Limits, ListedTool
from auto_runtime.tools.mcp_remote import McpHttpServer
from auto_runtime.tools.mcp_stdio import StdioServer
from auto_runtime.tools.openapi_server import OpenApiServer
from auto_runtime.tools.scrubbing import SCRUBBED_LEAST, SecretSet
from auto_runtime.tools.servers import (
    NamedServer,
    OfferedTool,
    ToolCallFailed,
    ToolCallResult,
    ToolNotOffered,
    ToolServerFailed,
    WantedTool,
)

log = logging.getLogger("auto_runtime.tools")

STDIO_INTENSITY = RestartIntensity(max_restarts=3, period=30.0)
STDIO_BACKOFF = Backoff(initial=0.2, factor=2.0, maximum=10.0, reset_after=10.0)
RECONNECT_BACKOFF = Backoff(initial=0.2, factor=2.0, maximum=5.0)
STOP_SECONDS = 10.0

Client = McpHttpServer | StdioServer | OpenApiServer


def serves(entry: ToolServer, org: str, playbook: str) -> bool:
    """Whether the entry serves the playbook of the org (its `org` and `playbooks`)."""
    orgs = entry.orgs
    if orgs is not None and org not in orgs:
        return False
    return entry.playbooks is None or playbook in entry.playbooks


def written_secrets(entries: Mapping[str, ToolServer]) -> set[str]:
    """Every value of a field that may hold a reference: what counts as a secret when the settings' own list
    of secrets is not given (it also counts values written out, so it scrubs more, never less)."""
    found: set[str] = set()
    for entry in entries.values():
        for values in (entry.headers, entry.query_params, entry.security, entry.env):
            found.update((values or {}).values())
        if entry.auth is not None:
            found.update(value for value in (entry.auth.client_secret, entry.auth.private_key) if value)
    return found


class ToolServerSet:
    """The tool servers of the configuration, reached through one long-lived client each."""

    def __init__(
        self,
        entries: Mapping[str, ToolServer],
        *,
        secrets: Iterable[str] | None = None,
        directory: Path | None = None,
        hosts: HostPolicy | None = None,
        limits: Limits | None = None,
        reconnect_backoff: Backoff = RECONNECT_BACKOFF,
        stdio_backoff: Backoff = STDIO_BACKOFF,
        stdio_intensity: RestartIntensity = STDIO_INTENSITY,
        stdio_memory_limit: int | None = None,
        secret_set: SecretSet | None = None,
        clock: ServerClock = WALL_CLOCK,
    ) -> None:
        self.entries = dict(entries)
        found = written_secrets(self.entries) if secrets is None else secrets
        self.secret_set = SecretSet(found) if secret_set is None else secret_set
        if secret_set is not None:
            for secret in found:
                secret_set.add(secret)
        self.limits = limits if limits is not None else Limits()
        self.refused_host: str | None = None
        """The first host a request of the set went to that the policy refuses (a connection's set only: the
        operator's own entries reach every host). The connection is not ready from then on."""
        policy = (hosts if hosts is not None else HostPolicy.everywhere()).telling(self._note_refused_host)
        folder = directory if directory is not None else Path.cwd()
        self.clients: dict[str, Client] = {}
        for name, entry in self.entries.items():
            if entry.type == "mcp":
                self.clients[name] = McpHttpServer(
                    name, entry, self.secret_set, policy, self.limits, reconnect_backoff, clock
                )
            elif entry.type == "stdio":
                self.clients[name] = StdioServer(
                    name,
                    entry,
                    self.secret_set,
                    self.limits,
                    stdio_backoff,
                    stdio_intensity,
                    memory_limit=stdio_memory_limit,
                    cwd=str(folder),
                    clock=clock,
                )
            else:
                self.clients[name] = OpenApiServer(name, entry, self.secret_set, policy, self.limits, folder)
        self._stop: trio.Event | None = None
        self._ended: trio.Event | None = None
        self.supervisor: Supervisor | None = None

    def _note_refused_host(self, host: str) -> None:
        if self.refused_host is None:
            self.refused_host = host

    def not_allowed(self) -> ToolNotOffered | None:
        """`connection_not_allowed` once a request went to a host the rules do not allow, else None."""
        if self.refused_host is None:
            return None
        return ToolNotOffered("connection_not_allowed", host_refusal(self.refused_host))

    @classmethod
    def from_settings(cls, loaded: LoadedSettings, working_directory: Path, **options: Any) -> ToolServerSet:
        """The set of the server's settings: their secrets, and document paths read beside the configuration
        file (or from `working_directory` when TOOL_SERVERS gives the entries)."""
        settings = loaded.settings
        directory = settings.config_file.parent if settings.config_file is not None else working_directory
        return cls(settings.tool_servers, secrets=loaded.secret_values, directory=directory, **options)

    # --- the ToolServers interface --------------------------------------------------------------------

    def secrets(self) -> frozenset[str]:
        """Every secret now, minted tokens included (those shorter than 8 characters are never scrubbed)."""
        return frozenset(value for value in self.secret_set.values() if len(value) >= SCRUBBED_LEAST)

    def scrub(self, text: str) -> str:
        """`text` scrubbed of every secret in every encoding: the one call records and logs may apply."""
        return self.secret_set(text)

    async def named(self, org: str, playbook: str, wanted: Sequence[WantedTool]) -> list[NamedServer]:
        """Check the names alone, contacting no server: `ToolNotOffered` when one is not offered."""
        entries = self._entries(org, playbook, wanted)
        return [NamedServer(name, entry.record_content) for name, entry in entries.items()]

    def _entries(self, org: str, playbook: str, wanted: Sequence[WantedTool]) -> dict[str, ToolServer]:
        entries: dict[str, ToolServer] = {}
        for item in wanted:
            entry = self._entry(org, playbook, item.server)
            if entry is None:
                raise ToolNotOffered(
                    "tool_server_not_configured", f"No tool server named {item.server} serves this playbook."
                )
            if item.tool != "*" and entry.allowed is not None and item.tool not in entry.allowed:
                raise ToolNotOffered(
                    "tool_not_allowed", f"The tool server {item.server} does not allow the tool {item.tool}."
                )
            entries[item.server] = entry
        return entries

    async def offered(self, org: str, playbook: str, wanted: Sequence[WantedTool]) -> list[OfferedTool]:
        entries = self._entries(org, playbook, wanted)
        listed = {name: await self.list_tools(name) for name in entries}
        offered: list[OfferedTool] = []
        chosen: set[tuple[str, str]] = set()
        for item in wanted:
            entry = entries[item.server]
            tools = listed[item.server]
            if item.tool == "*":
                picked = [tool for tool in tools if entry.allowed is None or tool.name in entry.allowed]
            else:
                picked = [tool for tool in tools if tool.name == item.tool]
                if not picked:
                    raise ToolNotOffered(
                        "tool_not_listed", f"The tool server {item.server} does not list the tool {item.tool}."
                    )
            for tool in picked:
                if (item.server, tool.name) in chosen:
                    continue
                chosen.add((item.server, tool.name))
                offered.append(self._offered(item.server, entry, tool))
        return offered

    async def call(
        self,
        org: str,
        playbook: str,
        tool: OfferedTool,
        arguments: Mapping[str, Any],
        run_id: str,
        *,
        delivery_id: str | None = None,
    ) -> ToolCallResult:
        entry = self._entry(org, playbook, tool.server)
        if entry is None:
            raise ToolCallFailed("server_failure", f"The tool server {tool.server} no longer serves this playbook.")
        try:
            with tool_call_span(tool.server, tool.tool, run_id, arguments, record_content=tool.record_content) as span:
                return span.output(
                    await self.clients[tool.server].call(tool.tool, arguments, run_id, delivery_id=delivery_id)
                )
        except ToolCallFailed as failed:
            refusal = self.not_allowed()
            if refusal is not None:
                failed.because, failed.detail = "server_failure", refusal.detail
            failed.detail = self.secret_set(failed.detail)
            log.warning(
                "tool server %s: the call of %s failed (%s): %s", tool.server, tool.tool, failed.because, failed.detail
            )
            raise

    # --- what the five operations will use --------------------------------------------------------------

    async def list_tools(self, name: str) -> list[ListedTool]:
        """Every tool the server lists, as it lists them, scrubbed (not narrowed by `allowed`)."""
        client = self.clients[name]
        try:
            if isinstance(client, OpenApiServer):
                await client.prepare()
            tools = await client.list_tools()
        except SettingsError as refused:
            raise ToolServerFailed("failing", f"The tool server {name} could not be read: {refused}", 5) from None
        except ToolServerFailed as failed:
            refusal = self.not_allowed()
            if refusal is not None:
                raise refusal from None
            failed.detail = self.secret_set(failed.detail)
            log.warning("tool server %s: listing failed (%s): %s", name, failed.because, failed.detail)
            raise
        scrubber = self.secret_set.scrubber
        return [
            ListedTool(tool.name, scrubber(tool.description), scrubber.value(tool.input_schema), tool.annotations)
            for tool in tools
        ]

    def _entry(self, org: str, playbook: str, server: str) -> ToolServer | None:
        entry = self.entries.get(server)
        if entry is None or not serves(entry, org, playbook):
            return None
        return entry

    def _offered(self, server: str, entry: ToolServer, tool: ListedTool) -> OfferedTool:
        return OfferedTool(
            server=server,
            tool=tool.name,
            description=tool.description,
            input_schema=dict(tool.input_schema),
            read_only=tool.read_only,
            record_content=entry.record_content,
        )

    # --- lifecycle --------------------------------------------------------------------------------------

    async def prepare(self) -> None:
        """Read every `openapi` document; raises `SettingsError`, naming the entry, at the first refusal."""
        for client in self.clients.values():
            if isinstance(client, OpenApiServer):
                await client.prepare()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Prepare, keep sessions and supervise the stdio processes until `aclose` or cancellation."""
        await self.prepare()
        self._stop = trio.Event()
        self._ended = trio.Event()
        supervisor = Supervisor("tool-servers", [])
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(supervisor.run)
                self.supervisor = supervisor
                for client in self.clients.values():
                    if isinstance(client, StdioServer):
                        client.attach(nursery, supervisor)
                    else:
                        client.attach(nursery)
                task_status.started()
                try:
                    await self._stop.wait()
                finally:
                    with trio.CancelScope(shield=True):
                        with trio.move_on_after(STOP_SECONDS):
                            await supervisor.stop()
                        await self._close_clients()
                    nursery.cancel_scope.cancel()
        finally:
            self.supervisor = None
            self._ended.set()

    def child_spec(self, *, name: str = "tool-servers") -> ChildSpec:
        """The set as a child of the server's supervision tree (permanent; stops within its own budget)."""
        return ChildSpec(name=name, start=self._run_as_child, restart=Restart.PERMANENT, shutdown=math.inf)

    async def _run_as_child(self, ctx: ChildContext) -> None:
        ctx.on_stop_requested(self.request_stop)
        async with trio.open_nursery() as nursery:
            await nursery.start(self.run)
            ctx.started()

    def request_stop(self) -> None:
        if self._stop is not None:
            self._stop.set()

    async def aclose(self) -> None:
        """Stop the processes, close the sessions and the HTTP pools; waits for `run` to end."""
        if self._ended is not None and not self._ended.is_set():
            self.request_stop()
            await self._ended.wait()
            return
        await self._close_clients()

    async def _close_clients(self) -> None:
        for client in self.clients.values():
            await client.aclose()
