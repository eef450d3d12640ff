"""The `runs` projection: one row per run id, what `get_run` and `list_runs` show (made by `runs/facts.py`)."""

from __future__ import annotations

from ..projections import Row
from .reading import Param, ReadRows

NEWEST_FIRST = "SELECT * FROM runs WHERE org = ? AND playbook = ?"
AFTER = " AND (first_started_us < ? OR (first_started_us = ? AND run_id < ?))"
NEWEST_FIRST_ORDER = " ORDER BY first_started_us DESC, run_id DESC LIMIT ?"
STATUS = "SELECT status FROM runs WHERE org = ? AND playbook = ? AND run_id = ?"
WITH_INPUT = (
    "SELECT run_id, status, waits, first_started_us, ending FROM runs WHERE org = ? AND playbook = ? "
    "AND type = ? AND name = ? AND input_digest = ?"
)


class RunsQueries:
    """Reads of the `runs` table; rows as stored (decode them with the projection's `decode_row`)."""

    def __init__(self, read: ReadRows) -> None:
        self._read = read

    async def newest_first(self, org: str, playbook: str, after: tuple[int, str] | None, limit: int) -> list[Row]:
        """Up to `limit` of the playbook's runs, the latest first start first (then by run id, descending), after
        the run at `after` (its `first_started_us` and run id) in that order, or from the newest when None."""
        sql = NEWEST_FIRST
        params: list[Param] = [org, playbook]
        if after is not None:
            sql += AFTER
            params += [after[0], after[0], after[1]]
        params.append(limit)
        return await self._read(sql + NEWEST_FIRST_ORDER, params)

    async def status(self, org: str, playbook: str, run_id: str) -> str | None:
        """The run's status (`started`, `succeeded`, ...), or None when the playbook has no run of that id."""
        rows = await self._read(STATUS, (org, playbook, run_id))
        return str(rows[0]["status"]) if rows else None

    async def with_input(
        self, org: str, playbook: str, definition_type: str, name: str, input_digest: str
    ) -> list[Row]:
        """The `run_id`, `status`, `waits`, `first_started_us` and `ending` (JSON text, or None while it runs) of
        every run of the definition whose input has that digest (a prediction function's builds), in no particular
        order."""
        return await self._read(WITH_INPUT, (org, playbook, definition_type, name, input_digest))
