"""Counts of the ledger's own due-work table (`ledger_due_work`, kept by `ledger/due_work.py`), for code that
paces work by how much of a kind is waiting; the table's entries are armed, taken and fired through
`Ledger.due_work`."""

from __future__ import annotations

from .reading import ReadRows

ARMED_WITH_KEY = "SELECT COUNT(*) AS n FROM ledger_due_work WHERE state = 'armed' AND key = ?"
"""`state = 'armed'` written out, so both engines read the partial index of armed entries."""


class DueWorkQueries:
    """Counts of due-work entries across every scope and run."""

    def __init__(self, read: ReadRows) -> None:
        self._read = read

    async def armed_with_key(self, key: str) -> int:
        """How many entries with this key (a `DueEntry.key`, e.g. `prediction:score`) are armed, of any run of any
        scope: those not yet fired nor cancelled."""
        rows = await self._read(ARMED_WITH_KEY, (key,))
        return int(rows[0]["n"])
