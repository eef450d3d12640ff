"""The `playbooks` projection (one row per playbook of an org, made by `playbooks/playbook_registry.py`)."""

from __future__ import annotations

from ..projections import Row
from .reading import ReadRows

ONE = "SELECT * FROM playbooks WHERE org = ? AND playbook = ?"
OF_ORG = "SELECT * FROM playbooks WHERE org = ? ORDER BY created_at, playbook"


class PlaybooksQueries:
    """Reads of the `playbooks` table; rows as stored (decode them with the projection's `decode_row`)."""

    def __init__(self, read: ReadRows) -> None:
        self._read = read

    async def row(self, org: str, playbook: str) -> Row | None:
        """The playbook's row, or None when the org has no such playbook."""
        rows = await self._read(ONE, (org, playbook))
        return rows[0] if rows else None

    async def of_org(self, org: str) -> list[Row]:
        """Every playbook of the org, retired ones too, oldest first (then by id)."""
        return await self._read(OF_ORG, (org,))
