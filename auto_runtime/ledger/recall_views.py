"""The `recall_views` table: one row for each active recall function of a playbook, its view and checkpoint.

Only the server holding the workflow lease writes it, and every write states the lease's fence (checked in the
write's own transaction), so a server that lost the lease writes nothing (`LeaseLost`).

`RecallViewRows` is the port (`Ledger.recall_views`): it checks here, once for both stores, and each store's
dialect (`sqlite.recall_views`, `postgres.recall_views`) runs the SQL; `opening` composes it into the ledger.

Invariants:

- `put` makes or resets a row unconditionally (a new function, or a new version that rebuilds from the start).
- `advance` writes a row only when it still holds the version and checkpoint the writer read (compared as
  values, `NULL` equal to `NULL`): a write made on a row that a newer version reset, or that another writer
  moved, changes nothing and answers False. So a page folded twice (a restart in the middle) is written once.
- `drop` forgets a row (a retired function, or one whose playbook no longer keeps it).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any

from .lease import LeaseFence, validate_fence
from .open_state import OpenState

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


class RecallViewRows(abc.ABC):
    """The table's reads and fenced writes (see the module's invariants). Every method may be called from any
    Trio task; a dialect implements the `_` steps."""

    def __init__(self, open_state: OpenState) -> None:
        self._open = open_state

    async def of_playbook(self, org: str, playbook: str) -> list[ViewRow]:
        """The playbook's rows, by name."""
        self._open.check()
        return await self._of_playbook(org, playbook)

    async def one(self, org: str, playbook: str, name: str) -> ViewRow | None:
        self._open.check()
        return await self._one(org, playbook, name)

    async def playbooks(self) -> list[tuple[str, str]]:
        """Every playbook with a view row or an active recall function."""
        self._open.check()
        return sorted(set(await self._playbooks()))

    async def keeps_views(self, org: str, playbook: str) -> bool:
        """Whether the playbook has a view row or an active recall function."""
        self._open.check()
        return await self._keeps_views(org, playbook)

    async def put(self, row: ViewRow, fence: LeaseFence | None) -> None:
        """Make or reset the row. `LeaseLost` when `fence` no longer holds."""
        self._checked(fence)
        await self._write(row, None, fence)

    async def advance(self, row: ViewRow, expected: Expected, fence: LeaseFence | None) -> bool:
        """Write the row only while it holds `expected`; False when it no longer did. `LeaseLost` when `fence` no
        longer holds."""
        self._checked(fence)
        return await self._write(row, expected, fence)

    async def drop(self, org: str, playbook: str, name: str, fence: LeaseFence | None) -> None:
        self._checked(fence)
        await self._drop(org, playbook, name, fence)

    def _checked(self, fence: LeaseFence | None) -> None:
        self._open.check()
        if fence is not None:
            validate_fence(fence)

    @abc.abstractmethod
    async def _of_playbook(self, org: str, playbook: str) -> list[ViewRow]: ...

    @abc.abstractmethod
    async def _one(self, org: str, playbook: str, name: str) -> ViewRow | None: ...

    @abc.abstractmethod
    async def _playbooks(self) -> list[tuple[str, str]]:
        """The `(org, playbook)` of every view row and active recall function, in any order, perhaps repeated."""

    @abc.abstractmethod
    async def _keeps_views(self, org: str, playbook: str) -> bool: ...

    @abc.abstractmethod
    async def _write(self, row: ViewRow, expected: Expected | None, fence: LeaseFence | None) -> bool:
        """Make or reset the row (`expected` None), or write it only while it holds `expected`, in one
        transaction with the fence's check; False when that condition failed."""

    @abc.abstractmethod
    async def _drop(self, org: str, playbook: str, name: str, fence: LeaseFence | None) -> None: ...
