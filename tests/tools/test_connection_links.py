"""Studio's link of a connection with an injected clock (HTTP page "Connections"): open for less than ten
minutes, used once, its token kept only as its SHA-256; removal records once and forgets the credential. Over a
real SQLite ledger and the real secret store."""

from __future__ import annotations

import hashlib
import secrets
import urllib.parse
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import trio

from auto_runtime.auth.caller import LOCAL_CALLER
from auto_runtime.ledger import Ledger, OrgScope, open_ledger
from auto_runtime.problems import Rejection
from auto_runtime.settings.connections import ConnectionsPolicy
from auto_runtime.tools.connection_records import connections_stream
from auto_runtime.tools.connections import Connections, GivenCredential, Who
from auto_runtime.tools.scrubbing import SecretSet
from auto_runtime.tools.secret_store import SecretSealer, SecretStore

ORG = "acme"
SECRET = "crm-secret-value-0123456789"
ENTRY = {"url": "https://crm.example.com/mcp"}
SECRET_CREDENTIAL = {"kind": "secret", "name": "X-Api-Key", "in": "header"}


@dataclass
class Clock:
    now: datetime

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Setup:
    ledger: Ledger
    connections: Connections
    clock: Clock
    secret_set: SecretSet


@pytest.fixture
async def setup(tmp_path: Path) -> AsyncIterator[Setup]:
    clock = Clock(datetime(2026, 10, 1, 9, 0, tzinfo=UTC))
    async with open_ledger(ledger_file=tmp_path / "ledger.db") as ledger:
        secret_set = SecretSet()
        connections = Connections(
            ledger,
            SecretStore(ledger, SecretSealer(secrets.token_bytes(32))),
            ConnectionsPolicy(),
            who=Who(local_mode=True, signs_people_in=False),
            origin="http://127.0.0.1:5555",
            configured_names=frozenset(),
            providers=frozenset(),
            secret_set=secret_set,
            now=clock,
        )
        yield Setup(ledger, connections, clock, secret_set)


def _token(added: dict[str, object]) -> str:
    connect = added["connect"]
    assert isinstance(connect, dict)
    return urllib.parse.parse_qs(urllib.parse.urlsplit(connect["url"]).query)["token"][0]


async def _refused(setup: Setup, connection_id: str, token: str) -> str:
    with pytest.raises(Rejection) as refused:
        await setup.connections.read_link(ORG, connection_id, token)
    return refused.value.reason


async def test_a_link_is_open_for_less_than_ten_minutes(setup: Setup) -> None:
    added = await setup.connections.add(LOCAL_CALLER, ORG, "crm", "mcp", ENTRY, {"kind": "none"})
    token = _token(added)
    setup.clock.now += timedelta(minutes=10) - timedelta(microseconds=1)
    assert (await setup.connections.read_link(ORG, str(added["id"]), token))["status"] == "pending"
    setup.clock.now += timedelta(microseconds=1)
    assert await _refused(setup, str(added["id"]), token) == "not_found"
    with pytest.raises(Rejection) as refused:
        await setup.connections.approve(LOCAL_CALLER, ORG, str(added["id"]), token)
    assert refused.value.reason == "not_found"


async def test_the_token_is_kept_only_as_its_sha256(setup: Setup) -> None:
    added = await setup.connections.add(LOCAL_CALLER, ORG, "crm", "mcp", ENTRY, {"kind": "none"})
    token = _token(added)
    (record,) = await setup.ledger.read_stream(connections_stream(ORG))
    assert token not in repr(record.data)
    assert record.data["link_sha256"] == hashlib.sha256(token.encode()).hexdigest()


async def test_giving_the_credential_uses_the_link_up_and_removal_forgets_it(setup: Setup) -> None:
    added = await setup.connections.add(LOCAL_CALLER, ORG, "crm", "mcp", ENTRY, SECRET_CREDENTIAL)
    connection_id, token = str(added["id"]), _token(added)
    given = await setup.connections.give_credential(LOCAL_CALLER, ORG, connection_id, token, GivenCredential(SECRET))
    assert given["status"] == "connected" and given["credential_ends_with"] == "6789"
    assert SECRET in setup.secret_set.values()
    assert await _refused(setup, connection_id, token) == "not_found"
    assert await setup.connections.store.read(OrgScope(ORG), connection_id) == SECRET
    await setup.connections.remove(LOCAL_CALLER, ORG, connection_id)
    version = await setup.ledger.stream_version(connections_stream(ORG))
    assert await setup.ledger.secrets.get(OrgScope(ORG), connection_id) is None
    again = await setup.connections.remove(LOCAL_CALLER, ORG, connection_id)
    assert again["status"] == "removed"
    assert await setup.ledger.stream_version(connections_stream(ORG)) == version  # records nothing


async def test_a_link_of_a_removed_connection_is_not_found(setup: Setup) -> None:
    added = await setup.connections.add(LOCAL_CALLER, ORG, "crm", "mcp", ENTRY, {"kind": "none"})
    await setup.connections.remove(LOCAL_CALLER, ORG, str(added["id"]))
    assert await _refused(setup, str(added["id"]), _token(added)) == "not_found"


async def test_sixty_adds_at_once_leave_exactly_fifty_connections(setup: Setup) -> None:
    outcomes: list[str] = []

    async def one(index: int) -> None:
        try:
            await setup.connections.add(LOCAL_CALLER, ORG, f"c{index}", "mcp", ENTRY, {"kind": "none"})
            outcomes.append("added")
        except Rejection as refused:
            outcomes.append(str(refused.kind))

    async with trio.open_nursery() as nursery:
        for index in range(60):
            nursery.start_soon(one, index)
    assert sorted(outcomes) == ["added"] * 50 + ["connections_full"] * 10
    assert len((await setup.connections.list(ORG, include_removed=False))["connections"]) == 50
