"""The `workflow_runs` projection: a workflow run as its last applied input left it (`workflow_host/run_state.py`)."""

from __future__ import annotations

from ..projections import Row
from .reading import ReadRows

ONE = "SELECT * FROM workflow_runs WHERE org = ? AND playbook = ? AND run_id = ?"
OPEN_CALLS_OF_TREE = (
    "SELECT SUM(open_calls) AS n FROM workflow_runs WHERE org = ? AND playbook = ? AND tree = ? AND run_id <> ?"
)


class WorkflowRunsQueries:
    """Reads of the `workflow_runs` table; rows as stored (decode them with the projection's `decode_row`)."""

    def __init__(self, read: ReadRows) -> None:
        self._read = read

    async def row(self, org: str, playbook: str, run_id: str) -> Row | None:
        """The run's row, its state still JSON text, or None when it is no workflow run of the playbook."""
        rows = await self._read(ONE, (org, playbook, run_id))
        return rows[0] if rows else None

    async def open_calls(self, org: str, playbook: str, tree: str, besides: str) -> int:
        """How many calls wait in the runs of the tree under the top run `tree`, the run `besides` left out (0
        when none; PostgreSQL's `SUM` is a `Decimal`, made an `int` here)."""
        rows = await self._read(OPEN_CALLS_OF_TREE, (org, playbook, tree, besides))
        return int((rows[0]["n"] if rows else None) or 0)
