"""The `workflow_listeners` projection: the open listens of workflow runs (`workflow_host/listeners.py`)."""

from __future__ import annotations

from ..projections import Row
from .reading import ReadRows

OF_PLAYBOOK = "SELECT run_id, listeners, taken FROM workflow_listeners WHERE org = ? AND playbook = ? ORDER BY run_id"


class WorkflowListenersQueries:
    """Reads of the `workflow_listeners` table; rows as stored (decode them with the projection's `decode_row`)."""

    def __init__(self, read: ReadRows) -> None:
        self._read = read

    async def of_playbook(self, org: str, playbook: str) -> list[Row]:
        """The `run_id`, `listeners` and `taken` of every run of the playbook with open listens, by run id."""
        return await self._read(OF_PLAYBOOK, (org, playbook))
