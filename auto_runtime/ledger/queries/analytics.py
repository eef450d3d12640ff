"""What `get_playbook_analytics` reads of the `runs` projection: the runs of a window that have ended."""

from __future__ import annotations

from ..projections import Row
from .reading import Param, ReadRows

ENDED_IN_WINDOW = (
    "SELECT type, name, status, first_started_us, duration_ms, tokens_input, tokens_output, tokens_cached "
    "FROM runs WHERE org = ? AND playbook = ? AND first_started_us >= ? AND first_started_us < ? "
    "AND status IN ('succeeded', 'failed', 'rejected')"
)


class AnalyticsQueries:
    """Reads of the `runs` table for analytics: only the columns the counting needs."""

    def __init__(self, read: ReadRows) -> None:
        self._read = read

    async def ended_runs(
        self,
        org: str,
        playbook: str,
        start_us: int,
        end_us: int,
        definition_type: str | None = None,
        name: str | None = None,
    ) -> list[Row]:
        """The runs of the playbook that first started in `[start_us, end_us)` and have ended (succeeded, failed
        or rejected), of that definition type and name when given: `type`, `name`, `status`, `first_started_us`,
        `duration_ms` and the three token sums, in no particular order."""
        sql = ENDED_IN_WINDOW
        params: list[Param] = [org, playbook, start_us, end_us]
        if definition_type is not None:
            sql += " AND type = ?"
            params.append(definition_type)
        if name is not None:
            sql += " AND name = ?"
            params.append(name)
        return await self._read(sql, params)
