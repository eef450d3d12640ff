"""The `recall_views` table: one row for each active recall function of a playbook, its view and checkpoint.

Only the server holding the workflow lease writes it, and every write states the lease's fence (checked in the
write's own transaction), so a server that lost the lease writes nothing (`LeaseLost`). Reads are plain
`Ledger._select` selects.

Invariants:

- `put` makes or resets a row unconditionally (a new function, or a new version that rebuilds from the start).
- `advance` writes a row only when it still holds the version and checkpoint the writer read (compared as
  values, `NULL` equal to `NULL`): a write made on a row that a newer version reset, or that another writer
  moved, changes nothing and answers False. So a page folded twice (a restart in the middle) is written once.
- `drop` forgets a row (a retired function, or one whose playbook no longer keeps it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .lease import LeaseFence

if TYPE_CHECKING:
    from .ledger import Ledger

COLUMNS = (
    "org",
    "playbook",
    "name",
    "version",
    "saved_at",
    "state",
    "view",
    "checkpoint",
    "checkpoint_at",
    "last_event",
    "folded",
    "tries",
    "stalled",
)


@dataclass(frozen=True, slots=True)
class ViewRow:
    """One row as stored: `view`, `last_event` and `stalled` are JSON text (the last two may be None)."""

    org: str
    playbook: str
    name: str
    version: int
    saved_at: str
    state: str
    view: str
    checkpoint: str | None
    checkpoint_at: str | None
    last_event: str | None
    folded: int
    tries: int
    stalled: str | None

    def values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, column) for column in COLUMNS)

    @classmethod
    def of(cls, row: dict[str, Any]) -> ViewRow:
        return cls(**{column: row[column] for column in COLUMNS})


@dataclass(frozen=True, slots=True)
class Expected:
    """What `advance` requires the row to still hold."""

    version: int
    checkpoint: str | None


class RecallViewRows:
    """The table's reads and fenced writes (see the module's invariants)."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    async def of_playbook(self, org: str, playbook: str) -> list[ViewRow]:
        rows = await self.ledger._select(
            f"SELECT {', '.join(COLUMNS)} FROM recall_views WHERE org = ? AND playbook = ? ORDER BY name",
            (org, playbook),
        )
        return [ViewRow.of(row) for row in rows]

    async def one(self, org: str, playbook: str, name: str) -> ViewRow | None:
        rows = await self.ledger._select(
            f"SELECT {', '.join(COLUMNS)} FROM recall_views WHERE org = ? AND playbook = ? AND name = ?",
            (org, playbook, name),
        )
        return ViewRow.of(rows[0]) if rows else None

    async def playbooks(self) -> list[tuple[str, str]]:
        """Every playbook with a view row or an active recall function."""
        rows = await self.ledger._select(
            "SELECT org, playbook FROM recall_views UNION "
            "SELECT org, playbook FROM definitions WHERE type = 'recall' AND status = 'active'"
        )
        return sorted({(str(row["org"]), str(row["playbook"])) for row in rows})

    async def keeps_views(self, org: str, playbook: str) -> bool:
        """Whether the playbook has a view row or an active recall function."""
        rows = await self.ledger._select(
            "SELECT 1 AS found FROM recall_views WHERE org = ? AND playbook = ? UNION "
            "SELECT 1 AS found FROM definitions "
            "WHERE org = ? AND playbook = ? AND type = 'recall' AND status = 'active'",
            (org, playbook, org, playbook),
        )
        return bool(rows)

    async def put(self, row: ViewRow, fence: LeaseFence | None) -> None:
        await self.ledger.write_recall_view(row, None, fence)

    async def advance(self, row: ViewRow, expected: Expected, fence: LeaseFence | None) -> bool:
        return await self.ledger.write_recall_view(row, expected, fence)

    async def drop(self, org: str, playbook: str, name: str, fence: LeaseFence | None) -> None:
        await self.ledger.drop_recall_view(org, playbook, name, fence)
