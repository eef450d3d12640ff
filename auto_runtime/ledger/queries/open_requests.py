"""The `open_requests` projection: the open requests of every playbook (`interaction_host/open_requests.py`)."""

from __future__ import annotations

from ..projections import Row
from .reading import Param, ReadRows

NEWEST_FIRST = "SELECT * FROM open_requests WHERE org = ? AND playbook = ?"
AFTER = " AND (requested_us < ? OR (requested_us = ? AND run_id < ?))"
NEWEST_FIRST_ORDER = " ORDER BY requested_us DESC, run_id DESC LIMIT ?"
COUNT_OF_TYPE = "SELECT COUNT(*) AS n FROM open_requests WHERE org = ? AND playbook = ? AND type = ?"
AWAITING_REPLY = (
    "SELECT run_id FROM open_requests WHERE org = ? AND playbook = ? AND conversation = ? "
    "AND standing IN ('delivered', 'retrying') ORDER BY requested_us, run_id LIMIT ?"
)


class OpenRequestsQueries:
    """Reads of the `open_requests` table; rows as stored (decode them with the projection's `decode_row`)."""

    def __init__(self, read: ReadRows) -> None:
        self._read = read

    async def newest_first(
        self,
        org: str,
        playbook: str,
        after: tuple[int, str] | None,
        limit: int,
        *,
        to_party: str | None = None,
        definition_type: str | None = None,
        function: str | None = None,
    ) -> list[Row]:
        """Up to `limit` of the playbook's open requests, the latest `requested_us` first (then by run id,
        descending), after the request at `after` (its `requested_us` and run id) in that order, or from the newest
        when None; only those to that party, of that definition type and of that function when given."""
        sql = NEWEST_FIRST
        params: list[Param] = [org, playbook]
        if after is not None:
            sql += AFTER
            params += [after[0], after[0], after[1]]
        for column, wanted in (("to_party", to_party), ("type", definition_type), ("function", function)):
            if wanted is not None:
                sql += f" AND {column} = ?"
                params.append(wanted)
        params.append(limit)
        return await self._read(sql + NEWEST_FIRST_ORDER, params)

    async def count(self, org: str, playbook: str, definition_type: str) -> int:
        """How many requests of functions of that definition type are open in the playbook."""
        rows = await self._read(COUNT_OF_TYPE, (org, playbook, definition_type))
        return int(rows[0]["n"]) if rows else 0

    async def awaiting_reply(self, org: str, playbook: str, conversation: str, limit: int) -> list[str]:
        """The run ids of at most `limit` requests delivered in the conversation (`delivered`, or `retrying` a
        delivery) that a reply may still answer, the oldest request first (then by run id)."""
        rows = await self._read(AWAITING_REPLY, (org, playbook, conversation, limit))
        return [str(row["run_id"]) for row in rows]
