"""`PlaybookServers`: the `ToolServers` a reasoning run reaches, the entries of `tool_servers` and the connections
of its org together (reasoning-format "Tools"): a function names either by the name it writes before the slash.

`offered` sorts the names first (an entry that serves the playbook, else a connection of the org that serves it,
else `tool_server_not_configured`; a connection that is not ready answers its own `because`), contacting no
server, then asks each set for its tools; a connection's tools carry its id (`connection_id` of the tool-call
facts). `call` goes to the set the tool came from. Every set shares one `SecretSet`, so `secrets` holds the
credentials read for connections too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from auto_runtime.tools.connection_servers import ConnectionServer, ConnectionServers
from auto_runtime.tools.scrubbing import SCRUBBED_LEAST, SecretSet
from auto_runtime.tools.servers import (
    NamedServer,
    OfferedTool,
    ToolCallFailed,
    ToolCallResult,
    ToolNotOffered,
    WantedTool,
)
from auto_runtime.tools.tool_server_set import ToolServerSet, serves


class PlaybookServers:
    """The configuration's set (None without `tool_servers`) and the org's connections as one `ToolServers`."""

    def __init__(self, configured: ToolServerSet | None, connections: ConnectionServers, secret_set: SecretSet):
        self.configured = configured
        self.connections = connections
        self.secret_set = secret_set

    def secrets(self) -> frozenset[str]:
        return frozenset(value for value in self.secret_set.values() if len(value) >= SCRUBBED_LEAST)

    def _configured_serves(self, org: str, playbook: str, server: str) -> bool:
        entry = self.configured.entries.get(server) if self.configured is not None else None
        return entry is not None and serves(entry, org, playbook)

    async def _connection(self, org: str, playbook: str, server: str) -> ConnectionServer | None:
        for found in await self.connections.of_org(org):
            if found.name == server and found.serves(playbook):
                return found
        return None

    async def named(self, org: str, playbook: str, wanted: Sequence[WantedTool]) -> list[NamedServer]:
        """Check the names alone (a connection's readiness included), contacting no server."""
        found: list[NamedServer] = []
        for servers, connection_id, items in (await self._groups(org, playbook, wanted)).values():
            named = await servers.named(org, playbook, items)
            found += [replace(server, connection_id=connection_id) for server in named]
        return found

    async def offered(self, org: str, playbook: str, wanted: Sequence[WantedTool]) -> list[OfferedTool]:
        offered: list[OfferedTool] = []
        for servers, connection_id, items in (await self._groups(org, playbook, wanted)).values():
            tools = await servers.offered(org, playbook, items)
            offered += [replace(tool, connection_id=connection_id) for tool in tools]
        return offered

    async def _groups(
        self, org: str, playbook: str, wanted: Sequence[WantedTool]
    ) -> dict[str, tuple[ToolServerSet, str | None, list[WantedTool]]]:
        groups: dict[str, tuple[ToolServerSet, str | None, list[WantedTool]]] = {}
        for item in wanted:
            if item.server in groups:
                groups[item.server][2].append(item)
                continue
            if self._configured_serves(org, playbook, item.server):
                assert self.configured is not None
                groups[item.server] = (self.configured, None, [item])
                continue
            connection = await self._connection(org, playbook, item.server)
            if connection is None:
                raise ToolNotOffered(
                    "tool_server_not_configured", f"No tool server named {item.server} serves this playbook."
                )
            if connection.not_ready is not None:
                raise connection.not_ready
            assert connection.servers is not None
            groups[item.server] = (connection.servers, connection.connection.id, [item])
        return groups

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
        if tool.connection_id is None:
            if self.configured is None:
                raise ToolCallFailed("server_failure", f"The tool server {tool.server} no longer serves this playbook.")
            return await self.configured.call(org, playbook, tool, arguments, run_id, delivery_id=delivery_id)
        connection = await self._connection(org, playbook, tool.server)
        if connection is None or connection.servers is None or connection.connection.id != tool.connection_id:
            raise ToolCallFailed("server_failure", f"The connection {tool.server} no longer serves this playbook.")
        return await connection.servers.call(org, playbook, tool, arguments, run_id, delivery_id=delivery_id)
