"""The connections of an org served as tool servers: each connected one through a `ToolServerSet` of its own,
each other one as the refusal the seeds give it (section "A connection that is not ready").

A connection is checked, and its credential read from the secret store, when it is first used after the runtime
starts: the rules, the entry, the name (the configuration may now set up a server of that name), the variable a
reference names. A credential that cannot be read records the connection `broken`. What a check finds is kept
for the rest of the runtime's life (the rules and variables are read at start); a removed connection's set is
closed and forgotten.

The sets share the runtime's one `SecretSet`, so a credential read here is scrubbed everywhere; they reach only
the hosts `connections.allowed_hosts` allows, checked before every request is sent.

Concurrency: everything runs on the Trio thread; the first uses of one connection take turns (a lock per
connection), so its credential is read and its document converted once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import trio
from pydantic import ValidationError

from auto_runtime.ledger import Folded, NewRecord, OrgScope, decide_and_append
from auto_runtime.server_clock import WALL_CLOCK, ServerClock
from auto_runtime.settings import ToolServer
from auto_runtime.settings.errors import SettingsError
from auto_runtime.tools.connection_records import BROKEN, Connection, connections_stream
from auto_runtime.tools.connection_rules import (
    NO_CONNECTION,
    credential_issues,
    entry_issues,
    rule_refusal,
    sent_in_a_header,
    server_issues,
    text_problem,
    tool_server_of,
)
from auto_runtime.tools.connections import Connections
from auto_runtime.tools.hosts import HostPolicy, host_refusal
from auto_runtime.tools.kinds import Limits
from auto_runtime.tools.openapi_server import OpenApiServer
from auto_runtime.tools.secret_store import SecretUnreadable
from auto_runtime.tools.servers import ToolNotOffered
from auto_runtime.tools.tool_server_set import ToolServerSet


@dataclass(frozen=True)
class ConnectionServer:
    """A connection of the org as a tool server: `servers` when it is ready, else `not_ready`."""

    connection: Connection
    servers: ToolServerSet | None
    not_ready: ToolNotOffered | None

    @property
    def name(self) -> str:
        return self.connection.name

    @property
    def entry(self) -> Mapping[str, Any]:
        return self.connection.entry

    def serves(self, playbook: str | None) -> bool:
        playbooks = self.connection.entry.get("playbooks")
        return playbook is None or playbooks is None or playbook in playbooks


class ConnectionServers:
    """Every org's connections as tool servers, each set built at its first use after start."""

    def __init__(
        self,
        connections: Connections,
        *,
        reference_values: Mapping[str, str],
        limits: Limits | None = None,
        clock: ServerClock = WALL_CLOCK,
    ) -> None:
        self.connections = connections
        self.reference_values = dict(reference_values)
        self.limits = limits
        self.clock = clock
        self.hosts = HostPolicy.of(connections.policy.allowed_hosts)
        self._ready: dict[str, ToolServerSet] = {}
        self._refused: dict[str, ToolNotOffered] = {}
        self._checking: dict[str, trio.Lock] = {}
        """One check at a time per connection: a document that takes its conversion's whole bound costs it once."""
        for value in self.reference_values.values():
            connections.secret_set.add(value)

    @property
    def secret_set(self) -> Any:
        return self.connections.secret_set

    async def of_org(self, org: str) -> list[ConnectionServer]:
        """The org's connections that are not removed, by name."""
        found, _ = await self.connections.of_org(org)
        served = [await self._served(c) for c in found.values() if c.status != "removed"]
        return sorted(served, key=lambda server: server.name)

    async def _served(self, connection: Connection) -> ConnectionServer:
        """The connection as a server; its first use checks it (reading its document) once, whoever waits."""
        async with self._checking.setdefault(connection.id, trio.Lock()):
            return await self._served_now(connection)

    async def _served_now(self, connection: Connection) -> ConnectionServer:
        kept = self._ready.get(connection.id)
        if kept is not None:
            not_allowed = kept.not_allowed()
            if not_allowed is None:
                return ConnectionServer(connection, kept, None)
            del self._ready[connection.id]
            await kept.aclose()
            return ConnectionServer(connection, None, self._keep(connection, not_allowed))
        refused = self._refused.get(connection.id) or await self._check(connection)
        if refused is not None:
            return ConnectionServer(connection, None, refused)
        return ConnectionServer(connection, self._ready[connection.id], None)

    async def _check(self, connection: Connection) -> ToolNotOffered | None:
        """Build the connection's set, or the refusal it answers (kept when it will not change while we run)."""
        name = connection.name
        policy = self.connections.policy
        if not policy.people_may_add:
            return self._keep(connection, ToolNotOffered("connection_not_allowed", NO_CONNECTION))
        if name in self.connections.configured_names:
            words = (
                f"The configuration now sets up a tool server named {name}, so the connection of that name is unused."
            )
            return self._keep(connection, ToolNotOffered("connection_not_allowed", words))
        if connection.status == "pending":
            return ToolNotOffered(
                "connection_pending",
                f"Nobody has approved the connection {name} yet: the person who added it opens its link, "
                "or removes it and adds it again.",
            )
        if connection.status == "broken":
            return self._keep(connection, _broken(name, connection.broken or "its credential cannot be read"))
        refusal = rule_refusal(policy, connection.entry, connection.credential)
        if refusal is not None:
            return self._keep(connection, ToolNotOffered("connection_not_allowed", refusal))
        issues = [
            *entry_issues(connection.kind, connection.entry),
            *credential_issues(connection.kind, connection.credential),
        ] or server_issues(
            connection.org,
            name,
            connection.kind,
            connection.entry,
            connection.credential,
            self.connections.providers,
        )
        if issues:
            words = f"The runtime no longer takes the entry of the connection {name}: " + " ".join(
                issue.detail for issue in issues
            )
            return self._keep(connection, ToolNotOffered("connection_not_allowed", words))
        value = await self._credential(connection)
        if isinstance(value, ToolNotOffered):
            return value
        try:
            server = tool_server_of(
                connection.org, connection.kind, connection.entry, connection.credential, value, connection.algorithm
            )
        except ValidationError:
            words = f"The runtime no longer takes the entry of the connection {name}."
            return self._keep(connection, ToolNotOffered("connection_not_allowed", words))
        try:
            servers = self._set_of(name, server, value)
        except (UnicodeError, ValueError):  # what the HTTP client cannot send: this connection alone is refused
            words = f"The runtime no longer takes the entry of the connection {name}."
            return self._keep(connection, ToolNotOffered("connection_not_allowed", words))
        document_refusal = await self._document_server_refusal(connection, servers)
        if document_refusal is not None:
            await servers.aclose()
            return self._keep(connection, document_refusal)
        self._ready[connection.id] = servers
        return None

    async def _document_server_refusal(self, connection: Connection, servers: ToolServerSet) -> ToolNotOffered | None:
        """For an `openapi` connection without `base_url`: the server its document names, checked once the
        document is read (a document that cannot be read is left to the listing, which says why)."""
        if connection.kind != "openapi" or "base_url" in connection.entry:
            return None
        try:
            await servers.prepare()
        except SettingsError:
            return None
        client = servers.clients[connection.name]
        document = client.document if isinstance(client, OpenApiServer) else None
        if document is None or self.hosts.allows_url(document.base_url):
            return None
        host = urlsplit(document.base_url).hostname or document.base_url
        return ToolNotOffered("connection_not_allowed", host_refusal(host))

    async def _credential(self, connection: Connection) -> str | ToolNotOffered | None:
        kind = connection.credential_kind
        if kind == "none":
            return None
        if kind == "reference":
            variable = str(connection.credential["variable"])
            value = self.reference_values.get(variable)
            if value is None:
                words = f"The variable {variable} the credential of the connection {connection.name} names is not set."
                return self._keep(connection, ToolNotOffered("connection_not_allowed", words))
            problem = text_problem(value, header=sent_in_a_header(connection.credential))
            if problem is not None:
                words = (
                    f"The variable {variable} the credential of the connection {connection.name} names holds a value "
                    f"that cannot be sent: {problem}."
                )
                return self._keep(connection, ToolNotOffered("connection_not_allowed", words))
            return value
        try:
            value = await self.connections.store.read(OrgScope(connection.org), connection.id)
        except SecretUnreadable as unreadable:
            return await self._record_broken(connection, f"its credential cannot be read: {unreadable}")
        if value is None:
            return await self._record_broken(connection, "its credential is not in the secret store")
        self.connections.secret_set.add(value)
        problem = text_problem(value, header=sent_in_a_header(connection.credential)) if kind == "secret" else None
        if problem is not None:  # kept before the rule was checked when it was given
            return await self._record_broken(connection, f"its credential cannot be sent: {problem}")
        return value

    async def _record_broken(self, connection: Connection, why: str) -> ToolNotOffered:
        """Record the connection `broken` (appended at the stream's version, whatever the stream holds) and keep the
        refusal; when other writers keep moving the org's stream the record is given up, and the refusal stands
        for this runtime's life all the same."""
        ledger = self.connections.ledger
        stream = connections_stream(connection.org)

        async def load() -> Folded[None]:
            return Folded(None, await ledger.stream_version(stream))

        def decide(_: None) -> list[NewRecord]:
            return [NewRecord(BROKEN, {"id": connection.id, "broken": why}, {"by": "runtime"})]

        with contextlib.suppress(_BrokenNotRecorded):
            await decide_and_append(ledger, stream, load, decide, clashed=_BrokenNotRecorded)
        return self._keep(connection, _broken(connection.name, why))

    def _set_of(self, name: str, server: ToolServer, value: str | None) -> ToolServerSet:
        return ToolServerSet(
            {name: server},
            secrets=[value] if value else [],
            hosts=self.hosts,
            limits=self.limits,
            secret_set=self.connections.secret_set,
            clock=self.clock,
        )

    def _keep(self, connection: Connection, refusal: ToolNotOffered) -> ToolNotOffered:
        self._refused[connection.id] = refusal
        return refusal

    async def forget(self, org: str, connection_id: str) -> None:
        """A removed connection: close its set."""
        self._refused.pop(connection_id, None)
        self._checking.pop(connection_id, None)
        kept = self._ready.pop(connection_id, None)
        if kept is not None:
            await kept.aclose()

    async def aclose(self) -> None:
        for kept in list(self._ready.values()):
            await kept.aclose()
        self._ready.clear()


class _BrokenNotRecorded(Exception):
    """Other writers kept moving the org's connections while `broken` was being recorded."""


def _broken(name: str, why: str) -> ToolNotOffered:
    return ToolNotOffered(
        "connection_broken",
        f"The connection {name} is broken: {why}. The person who added it removes it and adds it again.",
    )
