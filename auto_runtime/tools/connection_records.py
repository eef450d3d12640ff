"""What the ledger keeps of an org's connections: one stream per org, `org/<org>/connections`, and its fold.

Records (each `data` holds the connection's `id`):

- `connection_added`: the name, kind, entry and credential (never a value: the entry holds none and the
  credential says how it is credentialled), who added it and when, and the open link: the SHA-256 of its token
  and when it expires;
- `connection_connected`: who connected it and when (an approval, or a credential given), which uses the link
  up; for client credentials signed with a private key, the key's `algorithm`;
- `connection_broken`: why its credential cannot be read;
- `connection_removed`: when it was removed (its credential is forgotten from the secret store).

One stream per org makes the per-org limit and the name rule hold under concurrency: a command reads the
stream, decides, and appends with the version it read (`VersionConflict`: read again and decide again).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

from auto_runtime.ledger import OrgScope, Record, StreamName

Status = Literal["pending", "connected", "broken", "removed"]
ADDED = "connection_added"
CONNECTED = "connection_connected"
BROKEN = "connection_broken"
REMOVED = "connection_removed"


def connections_stream(org: str) -> StreamName:
    return OrgScope(org).stream("connections")


@dataclass(frozen=True)
class Connection:
    """One connection as its records leave it."""

    id: str
    org: str
    name: str
    kind: Literal["mcp", "openapi"]
    entry: Mapping[str, Any]
    credential: Mapping[str, Any]
    added_by: str
    added_at: str
    link_sha256: str
    link_expires_at: str
    status: Status = "pending"
    connected_at: str | None = None
    connected_by: str | None = None
    broken: str | None = None
    algorithm: str | None = None
    link_used: bool = False

    @property
    def credential_kind(self) -> str:
        return str(self.credential["kind"])

    @property
    def takes_a_credential(self) -> bool:
        """Whether its credential is given on Studio's page (a secret, or client credentials)."""
        return self.credential_kind in ("secret", "client_credentials")

    def link_open(self, sha256: str, now: datetime) -> bool:
        """Whether `sha256` is its link's, given less than ten minutes ago and not used up."""
        return (
            not self.link_used
            and self.status != "removed"
            and sha256 == self.link_sha256
            and now < datetime.fromisoformat(self.link_expires_at.replace("Z", "+00:00"))
        )

    def shown(self, credential_ends_with: str | None) -> dict[str, Any]:
        """The connection as every operation answers it: never a credential's value."""
        return {
            "id": self.id,
            "name": self.name,
            "kind": self.kind,
            "entry": dict(self.entry),
            "credential": dict(self.credential),
            "status": self.status,
            "added_by": self.added_by,
            "added_at": self.added_at,
            "connected_at": self.connected_at,
            "connected_by": self.connected_by,
            "credential_ends_with": credential_ends_with,
            "broken": self.broken,
        }


def fold(org: str, records: Iterable[Record]) -> dict[str, Connection]:
    """Every connection of the org by id, in the order they were added."""
    found: dict[str, Connection] = {}
    for record in records:
        data = record.data
        if record.type == ADDED:
            found[data["id"]] = Connection(
                id=data["id"],
                org=org,
                name=data["name"],
                kind=data["kind"],
                entry=data["entry"],
                credential=data["credential"],
                added_by=data["added_by"],
                added_at=data["added_at"],
                link_sha256=data["link_sha256"],
                link_expires_at=data["link_expires_at"],
            )
            continue
        current = found.get(data.get("id", ""))
        if current is None:
            continue
        if record.type == CONNECTED:
            found[current.id] = replace(
                current,
                status="connected",
                connected_at=data["connected_at"],
                connected_by=data["connected_by"],
                algorithm=data.get("algorithm"),
                link_used=True,
                broken=None,
            )
        elif record.type == BROKEN:
            found[current.id] = replace(current, status="broken", broken=data["broken"])
        elif record.type == REMOVED:
            found[current.id] = replace(current, status="removed", link_used=True)
    return found
