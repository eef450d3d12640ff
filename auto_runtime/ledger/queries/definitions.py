"""The `definitions` projection: each definition's latest version (made by `playbooks/definition_facts.py`)."""

from __future__ import annotations

from ..projections import Row
from .reading import ReadRows

ONE = "SELECT * FROM definitions WHERE org = ? AND playbook = ? AND type = ? AND name = ?"
OF_PLAYBOOK = "SELECT * FROM definitions WHERE org = ? AND playbook = ?"
OF_TYPE = "SELECT * FROM definitions WHERE org = ? AND playbook = ? AND type = ? ORDER BY name"
ACTIVE_OF_TYPE = "SELECT * FROM definitions WHERE org = ? AND playbook = ? AND type = ? AND status = ?"
COUNT_ACTIVE = "SELECT COUNT(*) AS n FROM definitions WHERE org = ? AND playbook = ? AND type = ? AND status = ?"
ACTIVE_DOCUMENTS = "SELECT type, name, document FROM definitions WHERE org = ? AND playbook = ? AND status = ?"
ACTIVE = "active"


class DefinitionsQueries:
    """Reads of the `definitions` table; rows as stored (decode them with the projection's `decode_row`)."""

    def __init__(self, read: ReadRows) -> None:
        self._read = read

    async def row(self, org: str, playbook: str, definition_type: str, name: str) -> Row | None:
        """The definition's latest version, or None when the playbook has none of that type and name."""
        rows = await self._read(ONE, (org, playbook, definition_type, name))
        return rows[0] if rows else None

    async def of_playbook(self, org: str, playbook: str) -> list[Row]:
        """Every definition of the playbook, of every type, retired ones too, in no particular order."""
        return await self._read(OF_PLAYBOOK, (org, playbook))

    async def of_type(self, org: str, playbook: str, definition_type: str) -> list[Row]:
        """Every definition of the type in the playbook, retired ones too, by name."""
        return await self._read(OF_TYPE, (org, playbook, definition_type))

    async def active_of_type(self, org: str, playbook: str, definition_type: str) -> list[Row]:
        """The active definitions of the type in the playbook, in no particular order."""
        return await self._read(ACTIVE_OF_TYPE, (org, playbook, definition_type, ACTIVE))

    async def count_active(self, org: str, playbook: str, definition_type: str) -> int:
        """How many definitions of the type are active in the playbook."""
        rows = await self._read(COUNT_ACTIVE, (org, playbook, definition_type, ACTIVE))
        return int(rows[0]["n"])

    async def active_documents(self, org: str, playbook: str) -> list[Row]:
        """The `type`, `name` and `document` of every active definition of the playbook (no source), in no
        particular order."""
        return await self._read(ACTIVE_DOCUMENTS, (org, playbook, ACTIVE))
