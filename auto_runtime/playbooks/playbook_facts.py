"""An org's playbooks as facts on the stream `org/<org>/playbooks`, and their fold.

Rules (seeds, "Playbooks"): ids are never reused, retirement is permanent.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

from auto_runtime.clock_text import iso_utc
from auto_runtime.ledger import OrgScope, Record, StreamName

PLAYBOOK_CREATED = "playbook_created"
PLAYBOOK_UPDATED = "playbook_updated"
PLAYBOOK_RETIRED = "playbook_retired"
PlaybookStatus = Literal["active", "retired"]


@dataclass(frozen=True)
class Playbook:
    id: str
    name: str
    description: str
    status: PlaybookStatus
    created_at: datetime
    created_by: str
    updated_at: datetime
    retired_at: datetime | None = None

    def as_json(self) -> dict[str, Any]:
        shown: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "status": self.status,
            "created_at": iso_utc(self.created_at),
            "created_by": self.created_by,
            "updated_at": iso_utc(self.updated_at),
        }
        if self.retired_at is not None:
            shown["retired_at"] = iso_utc(self.retired_at)
        return shown


def registry_stream(org: str) -> StreamName:
    return OrgScope(org).stream("playbooks")


def fold_playbooks(history: Sequence[Record]) -> dict[str, Playbook]:
    return folded_further({}, history)


def folded_further(playbooks: dict[str, Playbook], records: Iterable[Record]) -> dict[str, Playbook]:
    """`playbooks` (changed in place and returned) with `records`, the stream's next records, folded in."""
    for record in records:
        data = record.data
        if record.type == PLAYBOOK_CREATED:
            playbooks[data["playbook"]] = Playbook(
                id=data["playbook"],
                name=data["name"],
                description=data["description"],
                status="active",
                created_at=record.recorded_at,
                created_by=record.metadata.get("by", ""),
                updated_at=record.recorded_at,
            )
        elif record.type == PLAYBOOK_UPDATED:
            current = playbooks[data["playbook"]]
            playbooks[current.id] = replace(
                current, name=data["name"], description=data["description"], updated_at=record.recorded_at
            )
        elif record.type == PLAYBOOK_RETIRED:
            current = playbooks[data["playbook"]]
            playbooks[current.id] = replace(
                current, status="retired", retired_at=record.recorded_at, updated_at=record.recorded_at
            )
    return playbooks
