"""The `prediction_versions` projection: a prediction function's model versions (`functions/prediction/versions.py`).

Each read names the columns its caller shows or decides on, and no more: `standing` shows every column it reads.
"""

from __future__ import annotations

from ..projections import Row
from .reading import ReadRows

OF_PLAYBOOK = "FROM prediction_versions WHERE org = ? AND playbook = ?"
OF_FUNCTION = OF_PLAYBOOK + " AND function = ?"
IN_STATE = "SELECT function, version " + OF_PLAYBOOK + " AND state = ?"
SCORES = (
    "SELECT version, state, mase, msis, coverage, baseline_mase, baseline_msis, document_version "
    + OF_FUNCTION
    + " AND version = ?"
)
ACTIVE = "SELECT version, candidate, document_version " + OF_FUNCTION + " AND state = ?"
LATEST = "SELECT MAX(version) AS latest " + OF_FUNCTION
OLDEST_FIRST = "SELECT version, state, candidate, dataset, document_version " + OF_FUNCTION + " ORDER BY version"
LISTED = (
    "SELECT version, state, candidate, built_at, rule, activated_at, mase, baseline_mase, coverage, document_version "
    + OF_FUNCTION
    + " ORDER BY version DESC"
)


class PredictionVersionsQueries:
    """Reads of the `prediction_versions` table; rows as stored (every column is text or a number)."""

    def __init__(self, read: ReadRows) -> None:
        self._read = read

    async def in_state(self, org: str, playbook: str, state: str) -> list[Row]:
        """The `function` and `version` of every version of the playbook in that state (`awaiting_approval`, ...),
        in no particular order."""
        return await self._read(IN_STATE, (org, playbook, state))

    async def scores(self, org: str, playbook: str, function: str, version: int) -> Row | None:
        """The version's `version`, `state`, its scores and its baseline's (`mase`, `msis`, `coverage`,
        `baseline_mase`, `baseline_msis`) and `document_version`, or None when the function built no such
        version."""
        rows = await self._read(SCORES, (org, playbook, function, version))
        return rows[0] if rows else None

    async def active(self, org: str, playbook: str, function: str) -> Row | None:
        """The function's active version (`version`, `candidate`, `document_version`), or None when none is."""
        rows = await self._read(ACTIVE, (org, playbook, function, "active"))
        return rows[0] if rows else None

    async def latest(self, org: str, playbook: str, function: str) -> int:
        """The function's highest version number, 0 when it built none."""
        rows = await self._read(LATEST, (org, playbook, function))
        latest = rows[0]["latest"] if rows else None
        return int(latest or 0)

    async def oldest_first(self, org: str, playbook: str, function: str) -> list[Row]:
        """Every version of the function, by version: `version`, `state`, `candidate`, `dataset`,
        `document_version`."""
        return await self._read(OLDEST_FIRST, (org, playbook, function))

    async def listed(self, org: str, playbook: str, function: str) -> list[Row]:
        """Every version of the function, the newest first, with the columns its `standing` shows (`version`,
        `state`, `candidate`, `built_at`, `rule`, `activated_at`, `mase`, `baseline_mase`, `coverage`, in that
        order) and `document_version`."""
        return await self._read(LISTED, (org, playbook, function))
