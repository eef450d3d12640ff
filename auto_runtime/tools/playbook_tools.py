"""`PlaybookTools`: what the five tool operations do over the configured tool servers (HTTP page "Tool servers").

`search` (on the org or on one playbook), `introspect`, `validate` and `dry_run` read: they ask each server they
need for its tool list, with the set's own time limits, and record nothing. `execute` calls one tool as a run
would, through `HandCalls`, which records the call on a stream of its own.

What these answer is scrubbed of every secret of the set (the values of `${...}` references, credentials, minted
tokens), and they never add an entry's header, environment value, address, command or credential: a server is
shown by its name, type and `record_content` only. The operator's `allowed` is the one list of a server's tools:
a tool outside it is neither shown nor called.

Concurrency rules: everything runs on the Trio thread; a search asks its servers concurrently, each failure
confined to its own server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import trio

from auto_runtime.json_limits import json_size
from auto_runtime.ledger import Ledger, PlaybookScope
from auto_runtime.problems import InputIssue, Rejection, invalid_input
from auto_runtime.server_clock import ServerClock
from auto_runtime.settings import ToolServer
from auto_runtime.tools.argument_check import SCHEMA_NOT_READ, ArgumentCheck, checked, not_checked
from auto_runtime.tools.connection_servers import ConnectionServer, ConnectionServers
from auto_runtime.tools.hand_calls import HandCalls
from auto_runtime.tools.kinds import ListedTool
from auto_runtime.tools.scrubbing import SecretSet
from auto_runtime.tools.servers import OfferedTool, ToolNotOffered, ToolServerFailed, WantedTool
from auto_runtime.tools.tool_search import score_of, summary_of, term_words
from auto_runtime.tools.tool_server_set import ToolServerSet, serves

MAX_LISTED = 100
MAX_ARGUMENT_BYTES = 16 * 1024
MAX_DESCRIPTION_BYTES = 4096
MAX_UNAVAILABLE_BYTES = 1024
EVERY_PLAYBOOK = "*"
Only = Literal["read", "write"]


def _cut_bytes(text: str, limit: int) -> str:
    encoded = text.encode("utf-8")
    return text if len(encoded) <= limit else encoded[:limit].decode("utf-8", "ignore")


def not_offered(refusal: ToolNotOffered) -> Rejection:
    return Rejection("unavailable", refusal.detail, kind="tool_not_offered", because=refusal.because)


def server_failed(failure: ToolServerFailed) -> Rejection:
    return Rejection(
        "unavailable",
        failure.detail,
        kind="tool_server_failed",
        because=failure.because,
        retry_after=failure.retry_after,
    )


def check_argument_size(arguments: Mapping[str, Any]) -> None:
    """At most 16 KiB as JSON, else `invalid_input` at `/arguments`, before anything is asked or called."""
    size = json_size(dict(arguments))
    if size > MAX_ARGUMENT_BYTES:
        raise invalid_input(
            [
                InputIssue(
                    f"arguments: expected at most {MAX_ARGUMENT_BYTES:,} bytes as JSON, not {size:,}.", "/arguments"
                )
            ]
        )


@dataclass(frozen=True)
class SearchQuery:
    """A search: on the org (`playbook` may be None) or on one playbook. `visible` is None when the caller may
    read every playbook of the org, else the playbooks it may access (a `playbooks` field shows only those)."""

    org: str
    playbook: str | None
    terms: str | None
    server: str | None
    only: Only | None
    on_org: bool
    visible: frozenset[str] | None


@dataclass(frozen=True)
class Served:
    """A tool server of a playbook: an entry of `tool_servers`, or a connection of its org (`connection`, its
    id), reached through `servers`; a connection that is not ready has `not_ready` instead."""

    name: str
    type: str
    record_content: bool
    playbooks: tuple[str, ...] | None
    allowed: tuple[str, ...] | None
    servers: ToolServerSet | None
    connection: str | None = None
    not_ready: ToolNotOffered | None = None

    @classmethod
    def of_entry(cls, name: str, entry: ToolServer, servers: ToolServerSet | None) -> Served:
        return cls(name, entry.type, entry.record_content, entry.playbooks, entry.allowed, servers)

    @classmethod
    def of_connection(cls, server: ConnectionServer) -> Served:
        entry = server.entry
        playbooks, allowed = entry.get("playbooks"), entry.get("allowed")
        return cls(
            server.name,
            server.connection.kind,
            bool(entry.get("record_content", True)),
            tuple(playbooks) if playbooks is not None else None,
            tuple(allowed) if allowed is not None else None,
            server.servers,
            connection=server.connection.id,
            not_ready=server.not_ready,
        )

    def allows(self, tool: str) -> bool:
        return self.allowed is None or tool in self.allowed


class PlaybookTools:
    """The five operations over one `ToolServerSet` (None: no tool server is configured) and the connections
    people added (None: the runtime serves none)."""

    def __init__(
        self,
        servers: ToolServerSet | None,
        ledger: Ledger,
        connections: ConnectionServers | None = None,
        secret_set: SecretSet | None = None,
        clock: ServerClock | None = None,
    ) -> None:
        self.servers = servers
        self.connections = connections
        if secret_set is None:
            secret_set = servers.secret_set if servers is not None else SecretSet()
        self.secret_set = secret_set
        self.calls = HandCalls(ledger, servers, server_clock=clock)

    # --- entries ---------------------------------------------------------------------------------------

    def _entries(self) -> Mapping[str, ToolServer]:
        return self.servers.entries if self.servers is not None else {}

    def _scrub(self, value: dict[str, Any]) -> dict[str, Any]:
        return dict(self.secret_set.scrubber.value(value))

    def entries_for(self, org: str, playbook: str | None) -> dict[str, ToolServer]:
        """The entries that serve the playbook of the org, or (playbook None) every entry that serves the org."""
        found: dict[str, ToolServer] = {}
        for name in sorted(self._entries()):
            entry = self._entries()[name]
            if playbook is not None:
                if serves(entry, org, playbook):
                    found[name] = entry
            elif entry.orgs is None or org in entry.orgs:
                found[name] = entry
        return found

    async def served_for(self, org: str, playbook: str | None) -> dict[str, Served]:
        """The entries, then the org's connections, that serve the playbook (or, playbook None, the org)."""
        found = {
            name: Served.of_entry(name, entry, self.servers) for name, entry in self.entries_for(org, playbook).items()
        }
        if self.connections is not None:
            for server in await self.connections.of_org(org):
                if server.serves(playbook) and server.name not in found:
                    found[server.name] = Served.of_connection(server)
        return found

    async def served_of(self, org: str, playbook: str, server: str) -> Served:
        """The server of that name of the playbook, ready; else `unavailable` of the kind `tool_not_offered`."""
        served = (await self.served_for(org, playbook)).get(server)
        if served is None:
            raise not_offered(
                ToolNotOffered("tool_server_not_configured", f"No tool server named {server} serves this playbook.")
            )
        if served.not_ready is not None:
            raise not_offered(served.not_ready)
        return served

    async def _listed(self, served: Served) -> list[ListedTool]:
        assert served.servers is not None
        return await served.servers.list_tools(served.name)

    async def _listed_tool(self, served: Served, tool: str) -> ListedTool:
        for listed in await self._listed(served):
            if listed.name == tool:
                return listed
        raise not_offered(
            ToolNotOffered("tool_not_listed", f"The tool server {served.name} does not list the tool {tool}.")
        )

    def _check_allowed(self, served: Served, tool: str) -> None:
        if not served.allows(tool):
            raise not_offered(
                ToolNotOffered("tool_not_allowed", f"The tool server {served.name} does not allow the tool {tool}.")
            )

    # --- search ----------------------------------------------------------------------------------------

    async def search(self, query: SearchQuery) -> dict[str, Any]:
        served = await self.served_for(query.org, query.playbook)
        if query.server is not None:
            if query.server not in served:
                where = f"the playbook {query.playbook}" if query.playbook is not None else f"the org {query.org}"
                raise invalid_input([InputIssue(f"server: expected the name of a tool server of {where}.", "/server")])
            served = {query.server: served[query.server]}
        listings: dict[str, list[ListedTool] | ToolServerFailed | ToolNotOffered] = {}

        async def ask(server: Served) -> None:
            try:
                listings[server.name] = await self._listed(server)
            except (ToolServerFailed, ToolNotOffered) as failure:
                listings[server.name] = failure

        async with trio.open_nursery() as nursery:
            for server in served.values():
                if server.not_ready is None:
                    nursery.start_soon(ask, server)
        servers: list[dict[str, Any]] = []
        kept: dict[str, list[ListedTool]] = {}
        for name, server in served.items():
            shown: dict[str, Any] = {"name": name}
            if server.connection is not None:
                shown["connection"] = server.connection
            shown.update(type=server.type, record_content=server.record_content)
            listing = listings.get(name)
            refusal = listing if isinstance(listing, ToolNotOffered) else server.not_ready
            if refusal is not None:
                shown["unavailable"] = _cut_bytes(refusal.detail, MAX_UNAVAILABLE_BYTES)
                shown["because"] = refusal.because
            elif isinstance(listing, ToolServerFailed):
                words = f"The tool server {name} could not be used: {listing.detail}"
                shown["unavailable"] = _cut_bytes(words, MAX_UNAVAILABLE_BYTES)
                shown["because"] = listing.because
            else:
                assert isinstance(listing, list)
                tools = [tool for tool in listing if server.allows(tool.name) and _kept(tool, query.only)]
                kept[name] = tools
                shown["tool_count"] = len(tools)
            if query.on_org:
                shown["playbooks"] = _playbooks_shown(server, query.visible)
            servers.append(shown)
        return self._scrub({"servers": servers, "tools": _found(kept, query.terms), "scopes": list(served)})

    # --- one tool --------------------------------------------------------------------------------------

    async def introspect(self, org: str, playbook: str, server: str, tool: str) -> dict[str, Any]:
        served = await self.served_of(org, playbook, server)
        self._check_allowed(served, tool)
        try:
            listed = await self._listed_tool(served, tool)
        except ToolNotOffered as refusal:
            raise self._scrub_rejection(not_offered(refusal)) from None
        except ToolServerFailed as failure:
            raise self._scrub_rejection(server_failed(failure)) from None
        shown: dict[str, Any] = {
            "server": server,
            "tool": tool,
            "description": _cut_bytes(listed.description, MAX_DESCRIPTION_BYTES),
            "input_schema": dict(listed.input_schema),
        }
        if listed.annotations:
            shown["annotations"] = dict(listed.annotations)
        return self._scrub(shown)

    async def validate(
        self, org: str, playbook: str, server: str, tool: str, arguments: Mapping[str, Any]
    ) -> dict[str, Any]:
        check_argument_size(arguments)
        served = await self.served_of(org, playbook, server)
        self._check_allowed(served, tool)
        try:
            listed = await self._listed_tool(served, tool)
        except ToolNotOffered as refusal:
            raise self._scrub_rejection(not_offered(refusal)) from None
        except ToolServerFailed as failure:
            raise self._scrub_rejection(server_failed(failure)) from None
        result: dict[str, Any] = (await checked(listed.input_schema, dict(arguments))).as_json()
        return self._scrub(result)

    async def dry_run(
        self,
        org: str,
        playbook: str,
        server: str,
        tool: str,
        arguments: Mapping[str, Any] | None,
        *,
        caller_may: bool,
        playbook_retired: bool,
    ) -> dict[str, Any]:
        if arguments is not None:
            check_argument_size(arguments)
        served = await self.served_of(org, playbook, server)
        allowed = served.allows(tool)
        listed: ListedTool | None = None
        reachable: dict[str, Any] = {"reachable": "yes"}
        try:
            if allowed:
                listed = await self._listed_tool(served, tool)
            else:
                await self._listed(served)
        except (ToolServerFailed, ToolNotOffered) as failure:
            reachable = {"reachable": "no", "because": failure.because}
        check: ArgumentCheck | None = None
        if arguments is not None:
            check = await checked(listed.input_schema, dict(arguments)) if listed else not_checked(SCHEMA_NOT_READ)
        result = {
            "would_run": caller_may and not playbook_retired and allowed and reachable["reachable"] == "yes",
            "needs": "playbook:write",
            "caller_may": caller_may,
            "playbook_retired": playbook_retired,
            "allowed": allowed,
            "read_only": listed.read_only if listed is not None else None,
            "arguments": check.as_json() if check is not None else None,
            "server": reachable,
        }
        return self._scrub(result)

    async def execute(
        self, scope: PlaybookScope, server: str, tool: str, arguments: Mapping[str, Any], caller_id: str
    ) -> dict[str, Any]:
        check_argument_size(arguments)
        served = await self.served_of(scope.org, scope.playbook, server)
        self._check_allowed(served, tool)
        assert served.servers is not None
        try:
            offered: Sequence[OfferedTool] = await served.servers.offered(
                scope.org, scope.playbook, [WantedTool(server, tool)]
            )
        except ToolNotOffered as refusal:
            raise self._scrub_rejection(not_offered(refusal)) from None
        except ToolServerFailed as failure:
            raise self._scrub_rejection(server_failed(failure)) from None
        chosen = replace(offered[0], connection_id=served.connection)
        return await self.calls.call(scope, chosen, arguments, caller_id, through=served.servers)

    def _scrub_rejection(self, rejection: Rejection) -> Rejection:
        rejection.detail = self.secret_set(rejection.detail)
        return rejection


def _kept(tool: ListedTool, only: Only | None) -> bool:
    if only is None:
        return True
    return tool.read_only if only == "read" else not tool.read_only


def _playbooks_shown(entry: Served, visible: frozenset[str] | None) -> list[str]:
    if entry.playbooks is None:
        return [EVERY_PLAYBOOK] if visible is None else sorted(visible)
    return [playbook for playbook in entry.playbooks if visible is None or playbook in visible]


def _tool_shown(server: str, tool: ListedTool) -> dict[str, Any]:
    return {"server": server, "tool": tool.name, "summary": summary_of(tool.description), "read_only": tool.read_only}


def _found(kept: Mapping[str, list[ListedTool]], terms: str | None) -> list[dict[str, Any]]:
    """Without terms: every tool, in the order of the servers and of their lists, when at most 100, else none.
    With terms: the tools that score, best first, then by name and by server, at most 100."""
    if terms is None:
        total = sum(len(tools) for tools in kept.values())
        if total > MAX_LISTED:
            return []
        return [_tool_shown(server, tool) for server, tools in kept.items() for tool in tools]
    wanted = term_words(terms)
    scored = [
        (score, tool.name, server, tool)
        for server, tools in kept.items()
        for tool in tools
        if (score := score_of(tool, wanted)) > 0
    ]
    scored.sort(key=lambda item: (-item[0], item[1], item[2]))
    return [_tool_shown(server, tool) for _, _, server, tool in scored[:MAX_LISTED]]
