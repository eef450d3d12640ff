"""An org's playbooks: created, updated and retired as facts on the stream `org/<org>/playbooks`.

Commands go through the org's actor (`org_actor`, one per org in this process, spawned on its first command
and passivated when idle), which folds the org's stream and appends with its version, so only another server's
change can clash with them. Reads go to the `playbooks` projection, kept in the same transaction as each append,
so `playbook_status` — asked on every playbook request — is one indexed row. On a ledger this process alone
writes (`Ledger.sole_writer`, SQLite), the shown rows are also kept in memory (`known_rows`): filled on a read,
replaced by each command's own appends, so `playbook_status` and `get` read nothing once a playbook is known.

Rules (seeds, "Playbooks"): ids are never reused, retirement is permanent, an update that changes nothing
records nothing, retiring again succeeds and records nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from auto_runtime.actors import Registry
from auto_runtime.clock_text import iso_utc
from auto_runtime.ledger import Ledger, NewRecord, Projection, Record, Row, TableSpec
from auto_runtime.playbooks.actor_limits import ActorLimits
from auto_runtime.playbooks.known_rows import KnownRows
from auto_runtime.playbooks.org_actor import ChangePlaybooks, OrgActor, PlaybooksChanged
from auto_runtime.playbooks.playbook_facts import (
    PLAYBOOK_CREATED,
    PLAYBOOK_RETIRED,
    PLAYBOOK_UPDATED,
    Playbook,
    PlaybookStatus,
)
from auto_runtime.problems import Rejection, conflict, not_found

__all__ = ["PLAYBOOKS_PROJECTION", "Playbook", "PlaybookRegistry", "PlaybookStatus"]

KNOWN_PLAYBOOKS = 10_000
"""How many playbooks' shown rows a registry over a sole-writer ledger keeps (a few hundred bytes each)."""


def _org_of(record: Record) -> str:
    return record.stream.split("/")[1]


def _playbook_keys(record: Record) -> list[tuple[Any, ...]]:
    if record.type in (PLAYBOOK_CREATED, PLAYBOOK_UPDATED, PLAYBOOK_RETIRED):
        return [(_org_of(record), record.data["playbook"])]
    return []


def _playbook_row_after(row: Row | None, record: Record) -> Row | None:
    at = iso_utc(record.recorded_at)
    data = record.data
    if record.type == PLAYBOOK_CREATED:
        return {
            "name": data["name"],
            "description": data["description"],
            "status": "active",
            "created_at": at,
            "created_by": record.metadata.get("by", ""),
            "updated_at": at,
            "retired_at": None,
        }
    if row is None:
        return None
    if record.type == PLAYBOOK_UPDATED:
        return {**row, "name": data["name"], "description": data["description"], "updated_at": at}
    return {**row, "status": "retired", "retired_at": at, "updated_at": at}


PLAYBOOKS_PROJECTION = Projection(
    name="playbooks",
    version=1,
    table=TableSpec(
        name="playbooks",
        columns={
            "org": "text",
            "playbook": "text",
            "name": "text",
            "description": "text",
            "status": "text",
            "created_at": "text",
            "created_by": "text",
            "updated_at": "text",
            "retired_at": "text",
        },
        primary_key=("org", "playbook"),
    ),
    keys=_playbook_keys,
    row_after=_playbook_row_after,
)


def _shown_row(row: dict[str, Any]) -> dict[str, Any]:
    shown = {
        "id": row["playbook"],
        "name": row["name"],
        "description": row["description"],
        "status": row["status"],
        "created_at": row["created_at"],
        "created_by": row["created_by"],
        "updated_at": row["updated_at"],
    }
    if row["retired_at"] is not None:
        shown["retired_at"] = row["retired_at"]
    return shown


def _metadata(by: str) -> dict[str, Any]:
    return {"correlation_id": None, "causation_id": None, "by": by}


class PlaybookRegistry:
    """Commands and reads over the orgs' playbooks. Run `actors` (a registry of org actors, a child of the
    playbooks supervisor) before the first command."""

    def __init__(self, ledger: Ledger, limits: ActorLimits | None = None) -> None:
        self.ledger = ledger
        limits = limits or ActorLimits()
        self.actors: Registry[str, ChangePlaybooks, PlaybooksChanged | Rejection] = Registry(
            "org-actors",
            lambda org: OrgActor(ledger, org),
            max_live=limits.max_live,
            idle_timeout=limits.idle_seconds,
            capacity=limits.capacity,
            intensity=limits.intensity,
        )
        """One actor per org: its playbooks' creations, changes and retirements share the org's stream."""
        self._known: KnownRows[tuple[str, str], dict[str, Any]] | None = (
            KnownRows(KNOWN_PLAYBOOKS) if ledger.sole_writer else None
        )
        """Shown rows by (org, playbook), on a sole-writer ledger only."""

    async def _decided(self, org: str, decide: Callable[[dict[str, Playbook]], list[NewRecord]]) -> PlaybooksChanged:
        outcome = await self.actors.ask(org, ChangePlaybooks(decide))
        if isinstance(outcome, Rejection):
            raise outcome
        if self._known is not None:
            for record in outcome.appended:
                playbook = record.data["playbook"]
                self._known.changed((org, playbook), outcome.playbooks[playbook].as_json())
        return outcome

    async def _shown(self, org: str, playbook: str) -> dict[str, Any] | None:
        """The playbook as `get` shows it (not to be changed by the caller), or None when the org has none."""
        key = (org, playbook)
        known = self._known
        if known is not None and (shown := known.get(key)) is not None:
            return shown
        ticket = known.ticket() if known is not None else 0
        row = await self.ledger.queries.playbooks.row(org, playbook)
        if row is None:
            return None
        shown = _shown_row(row)
        if known is not None:
            known.fill(key, shown, ticket)
        return shown

    async def playbook_status(self, org: str, playbook: str) -> PlaybookStatus | None:
        shown = await self._shown(org, playbook)
        if shown is None:
            return None
        status: PlaybookStatus = "retired" if shown["status"] == "retired" else "active"
        return status

    async def get(self, org: str, playbook: str) -> dict[str, Any]:
        shown = await self._shown(org, playbook)
        if shown is None:
            raise not_found(f"The org {org} has no playbook {playbook}.")
        return dict(shown)

    async def listed(self, org: str, include_retired: bool, only: frozenset[str] | None) -> list[dict[str, Any]]:
        rows = await self.ledger.queries.playbooks.of_org(org)
        return [
            _shown_row(row)
            for row in rows
            if (include_retired or row["status"] == "active") and (only is None or row["playbook"] in only)
        ]

    async def create(self, org: str, playbook: str, name: str, description: str, by: str) -> dict[str, Any]:
        def decide(playbooks: dict[str, Playbook]) -> list[NewRecord]:
            if playbook in playbooks:
                raise conflict(f"The org {org} has or had a playbook {playbook}; a playbook id is never reused.")
            data = {"playbook": playbook, "name": name, "description": description}
            return [NewRecord(PLAYBOOK_CREATED, data, _metadata(by))]

        changed = await self._decided(org, decide)
        return changed.playbooks[playbook].as_json()

    async def update(self, org: str, playbook: str, name: str, description: str, by: str) -> dict[str, Any]:
        def decide(playbooks: dict[str, Playbook]) -> list[NewRecord]:
            current = playbooks.get(playbook)
            if current is None:
                raise not_found(f"The org {org} has no playbook {playbook}.")
            if current.status == "retired":
                raise conflict(f"The playbook {playbook} is retired, so it cannot change.", kind="retired")
            if current.name == name and current.description == description:
                return []
            data = {"playbook": playbook, "name": name, "description": description}
            return [NewRecord(PLAYBOOK_UPDATED, data, _metadata(by))]

        await self._decided(org, decide)
        return await self.get(org, playbook)

    async def retire(self, org: str, playbook: str, by: str) -> dict[str, Any]:
        def decide(playbooks: dict[str, Playbook]) -> list[NewRecord]:
            current = playbooks.get(playbook)
            if current is None:
                raise not_found(f"The org {org} has no playbook {playbook}.")
            if current.status == "retired":
                return []
            return [NewRecord(PLAYBOOK_RETIRED, {"playbook": playbook}, _metadata(by))]

        await self._decided(org, decide)
        return await self.get(org, playbook)
