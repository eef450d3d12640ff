"""`Connections`: what the connection operations do (HTTP page "Connections").

A person adds a connection through their agent, without its credential; it is `pending` with an open link, a
token of which the runtime keeps only the SHA-256, for ten minutes and one use. On Studio's page the person
approves it (credential `none` or `reference`) or gives its credential (`secret`, `client_credentials`), which
the secret store seals; either connects it and uses the link up. `remove_connection` removes it for good and
forgets its credential.

Who may add: in local mode the local developer, and the token alone binds the link's routes. A runtime that
signs people in takes a connection only from a person's session (never a key; this runtime has no sessions of
people yet, so every key is refused), and a runtime of API keys alone takes none, since nobody could approve it.

Concurrency: every command reads the org's stream and appends with the version it read; a version clash makes
it read and decide again (the ledger's `decide_and_append`, up to `TRIES` decisions, then `unavailable`), so the
per-org limit and the name rule hold across requests and servers. Within one server the commands of an org take
turns (a lock per org, dropped when nobody holds or waits for it), so the retries only meet other servers'
writes.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

import trio

from auto_runtime.auth.caller import Caller
from auto_runtime.clock_text import iso_utc
from auto_runtime.ledger import Ledger, NewRecord, OrgScope, decide_and_append, folding_reader, uuid7
from auto_runtime.problems import InputIssue, Rejection, conflict, forbidden, invalid_input, not_found
from auto_runtime.settings.connections import ConnectionsPolicy
from auto_runtime.tools.connection_records import (
    ADDED,
    CONNECTED,
    REMOVED,
    Connection,
    connections_stream,
    fold,
)
from auto_runtime.tools.connection_rules import (
    credential_issues,
    entry_issues,
    rule_refusal,
    server_issues,
    value_issues,
)
from auto_runtime.tools.scrubbing import SecretSet
from auto_runtime.tools.secret_store import SecretStore

MAX_CONNECTIONS = 50
LINK_MINUTES = 10
STUDIO_CONNECT = "https://studio.on.auto/connect"
TRIES = 8
LINK_NOT_FOUND = (
    "This link is unknown, used up or expired: the person who added the connection removes it and adds it again."
)


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Who:
    """How the runtime knows people: local mode (no credential), or sign-in (`PUBLIC_URL`), or API keys alone."""

    local_mode: bool
    signs_people_in: bool


@dataclass(frozen=True)
class GivenCredential:
    """What `give_credential` takes besides the token: a secret's `value`, or a client secret, or a private key
    with its algorithm."""

    value: str | None = None
    client_secret: str | None = None
    private_key: str | None = None
    algorithm: str | None = None


class Connections:
    """The connection commands and reads over the ledger and the secret store."""

    def __init__(
        self,
        ledger: Ledger,
        store: SecretStore,
        policy: ConnectionsPolicy,
        *,
        who: Who,
        origin: str,
        configured_names: frozenset[str],
        providers: frozenset[str],
        secret_set: SecretSet,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        on_removed: Callable[[str, str], Awaitable[None]] | None = None,
    ) -> None:
        self.ledger = ledger
        self.store = store
        self.policy = policy
        self.who = who
        self.origin = origin.rstrip("/")
        self.configured_names = configured_names
        self.providers = providers
        self.secret_set = secret_set
        self.now = now
        self.on_removed = on_removed
        self._turns: dict[str, tuple[trio.Lock, list[int]]] = {}

    @asynccontextmanager
    async def _turn(self, org: str) -> AsyncIterator[None]:
        """The org's commands one at a time in this server."""
        lock, holders = self._turns.setdefault(org, (trio.Lock(), [0]))
        holders[0] += 1
        try:
            async with lock:
                yield
        finally:
            holders[0] -= 1
            if holders[0] == 0:
                del self._turns[org]

    # --- reading ------------------------------------------------------------------------------------------

    async def _decided(self, org: str, decide: Callable[[dict[str, Connection]], list[NewRecord]]) -> None:
        """In the org's turn: decide on its connections and append at the version read (see the module's rules)."""
        stream = connections_stream(org)
        async with self._turn(org):
            await decide_and_append(
                self.ledger,
                stream,
                folding_reader(self.ledger, stream, lambda records: fold(org, records)),
                decide,
                clashed=_changed_too_often,
                attempts=TRIES,
            )

    async def of_org(self, org: str) -> tuple[dict[str, Connection], int]:
        """Every connection of the org by id, oldest first, and the stream's version."""
        records = await self.ledger.read_stream(connections_stream(org))
        return fold(org, records), len(records)

    async def one(self, org: str, connection_id: str) -> Connection:
        found = (await self.of_org(org))[0].get(connection_id)
        if found is None:
            raise not_found(f"The org {org} has no connection {connection_id}.")
        return found

    async def shown(self, connection: Connection) -> dict[str, Any]:
        ends_with = None
        if connection.takes_a_credential and connection.status != "removed":
            row = await self.ledger.secrets.get(OrgScope(connection.org), connection.id)
            ends_with = row.ends_with if row is not None else None
        return connection.shown(ends_with)

    async def list(self, org: str, include_removed: bool) -> dict[str, Any]:
        connections = list((await self.of_org(org))[0].values())
        kept = [c for c in reversed(connections) if include_removed or c.status != "removed"]
        return {"connections": [await self.shown(connection) for connection in kept]}

    async def get(self, org: str, connection_id: str) -> dict[str, Any]:
        return await self.shown(await self.one(org, connection_id))

    # --- adding ---------------------------------------------------------------------------------------------

    def _check_adder(self, caller: Caller) -> None:
        """Seeds, "Connections": a person adds a connection (in local mode, the local caller; where people sign
        in, a signed-in person, never an API key); a runtime of API keys alone takes none."""
        if self.who.local_mode or (self.who.signs_people_in and caller.is_person):
            return
        if not self.who.signs_people_in:
            raise forbidden(
                "This runtime signs nobody in, so no person could approve a connection: it takes none; "
                "its operator sets up its tool servers in tool_servers."
            )
        raise forbidden("A connection is added by a person who signed in, not by an API key.")

    def check(self, org: str, name: str, kind: str, entry: Mapping[str, Any], credential: Mapping[str, Any]) -> None:
        """The checks of an entry and a credential: `invalid_input`, then the operator's rules (`forbidden`)."""
        issues = [*entry_issues(kind, entry), *credential_issues(kind, credential)]
        if not issues:
            issues = server_issues(org, name, kind, entry, credential, self.providers)
        if issues:
            raise invalid_input(issues)
        refusal = rule_refusal(self.policy, entry, credential)
        if refusal is not None:
            raise forbidden(refusal)

    async def add(
        self, caller: Caller, org: str, name: str, kind: str, entry: Mapping[str, Any], credential: Mapping[str, Any]
    ) -> dict[str, Any]:
        self._check_adder(caller)
        self.check(org, name, kind, entry, credential)
        if name in self.configured_names:
            raise conflict(f"The configuration sets up a tool server named {name}; give the connection another name.")
        token = secrets.token_urlsafe(32)
        connection_id = uuid7()
        added = self.now()
        expires = added + timedelta(minutes=LINK_MINUTES)

        def decide(connections: dict[str, Connection]) -> list[NewRecord]:
            live = [c for c in connections.values() if c.status != "removed"]
            if any(c.name == name for c in live):
                raise conflict(f"The org {org} has a connection named {name}; remove it first, or choose another name.")
            if len(live) >= MAX_CONNECTIONS:
                raise conflict(
                    f"The org {org} holds {MAX_CONNECTIONS} connections, the most it may; remove one first.",
                    kind="connections_full",
                )
            data = {
                "id": connection_id,
                "name": name,
                "kind": kind,
                "entry": dict(entry),
                "credential": dict(credential),
                "added_by": caller.id,
                "added_at": iso_utc(added),
                "link_sha256": token_digest(token),
                "link_expires_at": iso_utc(expires),
            }
            return [NewRecord(ADDED, data, {"by": caller.id})]

        await self._decided(org, decide)
        shown = await self.get(org, connection_id)
        query = urlencode({"server": self.origin, "org": org, "connection": connection_id, "token": token})
        shown["connect"] = {"url": f"{STUDIO_CONNECT}?{query}", "expires_at": iso_utc(expires)}
        return shown

    # --- removing -------------------------------------------------------------------------------------------

    async def remove(self, caller: Caller, org: str, connection_id: str) -> dict[str, Any]:
        def decide(connections: dict[str, Connection]) -> list[NewRecord]:
            found = connections.get(connection_id)
            if found is None:
                raise not_found(f"The org {org} has no connection {connection_id}.")
            if found.status == "removed":
                return []
            return [NewRecord(REMOVED, {"id": connection_id, "removed_at": iso_utc(self.now())}, {"by": caller.id})]

        await self._decided(org, decide)
        await self.store.forget(OrgScope(org), connection_id)
        if self.on_removed is not None:
            await self.on_removed(org, connection_id)
        return await self.get(org, connection_id)

    # --- the link's routes ----------------------------------------------------------------------------------

    def _open_link(self, connections: Mapping[str, Connection], connection_id: str, token: str) -> Connection:
        found = connections.get(connection_id)
        if found is None or not found.link_open(token_digest(token), self.now()):
            raise not_found(LINK_NOT_FOUND)
        return found

    async def _linked(self, org: str, connection_id: str, token: str) -> Connection:
        return self._open_link((await self.of_org(org))[0], connection_id, token)

    async def read_link(self, org: str, connection_id: str, token: str) -> dict[str, Any]:
        return await self.shown(await self._linked(org, connection_id, token))

    def _check_session(self, caller: Caller, connection: Connection) -> None:
        if not self.who.local_mode and caller.id != connection.added_by:
            raise forbidden("Only the person who added the connection may connect it, in their own session.")

    async def approve(self, caller: Caller, org: str, connection_id: str, token: str) -> dict[str, Any]:
        def decide(connections: dict[str, Connection]) -> list[NewRecord]:
            found = self._open_link(connections, connection_id, token)
            self._check_session(caller, found)
            if found.takes_a_credential:
                raise conflict(
                    f"The connection {found.name} takes a credential of the kind {found.credential_kind}: "
                    "give it, which approves the connection."
                )
            return [self._connected(caller, found, None)]

        await self._decided(org, decide)
        return await self.get(org, connection_id)

    async def give_credential(
        self, caller: Caller, org: str, connection_id: str, token: str, given: GivenCredential
    ) -> dict[str, Any]:
        found = await self._linked(org, connection_id, token)
        self._check_session(caller, found)
        if not found.takes_a_credential:
            raise conflict(
                f"The connection {found.name} takes no credential to give (its kind is {found.credential_kind}): "
                "approve it instead."
            )
        value, algorithm = _given_value(found.credential_kind, given)
        given_as = "value" if given.value is not None else "client_secret" if given.client_secret is not None else None
        issues = value_issues(found.credential, given_as, value) if given_as is not None else []
        if issues:
            raise invalid_input(issues)
        self.secret_set.add(value)
        show_end = found.credential_kind == "secret" or given.client_secret is not None
        await self.store.keep(OrgScope(org), connection_id, value, show_end=show_end)

        def decide(connections: dict[str, Connection]) -> list[NewRecord]:
            return [self._connected(caller, self._open_link(connections, connection_id, token), algorithm)]

        await self._decided(org, decide)
        return await self.get(org, connection_id)

    def _connected(self, caller: Caller, found: Connection, algorithm: str | None) -> NewRecord:
        data: dict[str, Any] = {"id": found.id, "connected_by": caller.id, "connected_at": iso_utc(self.now())}
        if algorithm is not None:
            data["algorithm"] = algorithm
        return NewRecord(CONNECTED, data, {"by": caller.id})


def _given_value(kind: str, given: GivenCredential) -> tuple[str, str | None]:
    """The value to seal and the algorithm, or `invalid_input` at the field at fault."""
    issues: list[InputIssue] = []

    def refuse(field: str, words: str) -> None:
        issues.append(InputIssue(f"{field}: {words}.", f"/{field}"))

    if kind == "secret":
        for field in ("client_secret", "private_key", "algorithm"):
            if getattr(given, field) is not None:
                refuse(field, "is not taken by a credential of the kind secret")
        if given.value is None:
            refuse("value", "expected for a credential of the kind secret")
        if issues:
            raise invalid_input(issues)
        assert given.value is not None
        return given.value, None
    if given.value is not None:
        refuse("value", "is not taken by a credential of the kind client_credentials")
    if (given.client_secret is None) == (given.private_key is None):
        refuse("client_secret", "expected client_secret, or private_key with algorithm, and not both")
    elif given.private_key is not None and given.algorithm is None:
        refuse("algorithm", "expected beside private_key")
    elif given.client_secret is not None and given.algorithm is not None:
        refuse("algorithm", "is taken only beside private_key")
    if issues:
        raise invalid_input(issues)
    if given.client_secret is not None:
        return given.client_secret, None
    assert given.private_key is not None
    return given.private_key, given.algorithm


def _changed_too_often() -> Rejection:
    return Rejection("unavailable", "The org's connections changed too often meanwhile; send the request again.")
