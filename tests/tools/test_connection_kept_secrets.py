"""A secret kept before the header rule (issue 37.5): one that a header cannot carry, read at the connection's
first use, records that connection `broken` with why, and never breaks the org's other connections. Over a real
SQLite ledger and the real secret store; the connection's records are appended as an older runtime did."""

from __future__ import annotations

import secrets
from pathlib import Path

from auto_runtime.auth.caller import LOCAL_CALLER
from auto_runtime.ledger import NewRecord, OrgScope, StreamWrite, open_ledger
from auto_runtime.settings.connections import ConnectionsPolicy
from auto_runtime.tools.connection_records import CONNECTED, connections_stream
from auto_runtime.tools.connection_servers import ConnectionServers
from auto_runtime.tools.connections import Connections, Who
from auto_runtime.tools.scrubbing import SecretSet
from auto_runtime.tools.secret_store import SecretSealer, SecretStore

ORG = "acme"
KEPT = "clé-gardée-0123456789"


async def test_a_kept_secret_a_header_cannot_carry_breaks_only_its_connection(tmp_path: Path) -> None:
    async with open_ledger(ledger_file=tmp_path / "ledger.db") as ledger:
        connections = Connections(
            ledger,
            SecretStore(ledger, SecretSealer(secrets.token_bytes(32))),
            ConnectionsPolicy(),
            who=Who(local_mode=True, signs_people_in=False),
            origin="http://127.0.0.1:5555",
            configured_names=frozenset(),
            providers=frozenset(),
            secret_set=SecretSet(),
        )
        credential = {"kind": "secret", "name": "X-Api-Key", "in": "header"}
        odd = await connections.add(LOCAL_CALLER, ORG, "odd", "mcp", {"url": "https://a.example/mcp"}, credential)
        plain = await connections.add(LOCAL_CALLER, ORG, "plain", "mcp", {"url": "https://b.example/mcp"}, credential)
        for added, value in ((odd, KEPT), (plain, "plain-secret-0123456789")):
            await connections.store.keep(OrgScope(ORG), str(added["id"]), value)
            version = await ledger.stream_version(connections_stream(ORG))
            data = {"id": added["id"], "connected_by": "local", "connected_at": "2026-10-01T09:00:00.000Z"}
            await ledger.append([StreamWrite(connections_stream(ORG), version, [NewRecord(CONNECTED, data, {})])])
        servers = ConnectionServers(connections, reference_values={})
        try:
            found = {server.name: server for server in await servers.of_org(ORG)}
            assert found["plain"].servers is not None and found["plain"].not_ready is None
            refusal = found["odd"].not_ready
            assert refusal is not None and refusal.because == "connection_broken"
            assert refusal.detail == (
                "The connection odd is broken: its credential cannot be sent: expected text a header can carry: "
                "printable ASCII characters, spaces and tabs. The person who added it removes it and adds it again."
            )
            assert (await connections.get(ORG, str(odd["id"])))["status"] == "broken"
        finally:
            await servers.aclose()
