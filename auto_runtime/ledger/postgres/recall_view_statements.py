"""The PostgreSQL store's `recall_views` SQL (`..recall_views`): reads, and writes each in one transaction with its
fence check."""

from __future__ import annotations

from typing import Any

from ..lease import LeaseFence
from ..recall_views import COLUMNS, Expected, ViewRow
from .lease_statements import check_fence

_PLACES = ", ".join(f"${n}" for n in range(1, len(COLUMNS) + 1))
_PUT = (
    f"INSERT INTO recall_views ({', '.join(COLUMNS)}) VALUES ({_PLACES}) "
    "ON CONFLICT (org, playbook, name) DO UPDATE SET "
    + ", ".join(f"{column} = excluded.{column}" for column in COLUMNS[3:])
)
_SETS = len(COLUMNS) - 3
_ADVANCE = (
    "UPDATE recall_views SET "
    + ", ".join(f"{column} = ${index}" for index, column in enumerate(COLUMNS[3:], start=1))
    + f" WHERE org = ${_SETS + 1} AND playbook = ${_SETS + 2} AND name = ${_SETS + 3} AND version = ${_SETS + 4}"
    + f" AND checkpoint IS NOT DISTINCT FROM ${_SETS + 5}::text"
)


_SELECT = f"SELECT {', '.join(COLUMNS)} FROM recall_views"


async def of_playbook(conn: Any, org: str, playbook: str) -> list[ViewRow]:
    rows = await conn.fetch(f"{_SELECT} WHERE org = $1 AND playbook = $2 ORDER BY name", org, playbook)
    return [ViewRow.of(dict(row)) for row in rows]


async def one(conn: Any, org: str, playbook: str, name: str) -> ViewRow | None:
    row = await conn.fetchrow(f"{_SELECT} WHERE org = $1 AND playbook = $2 AND name = $3", org, playbook, name)
    return None if row is None else ViewRow.of(dict(row))


async def playbooks(conn: Any) -> list[tuple[str, str]]:
    """Every playbook with a view row or an active recall function."""
    rows = await conn.fetch(
        "SELECT org, playbook FROM recall_views UNION "
        "SELECT org, playbook FROM definitions WHERE type = 'recall' AND status = 'active'"
    )
    return [(str(row["org"]), str(row["playbook"])) for row in rows]


async def keeps_views(conn: Any, org: str, playbook: str) -> bool:
    """Whether the playbook has a view row or an active recall function."""
    found = await conn.fetchval(
        "SELECT 1 FROM recall_views WHERE org = $1 AND playbook = $2 UNION "
        "SELECT 1 FROM definitions WHERE org = $1 AND playbook = $2 AND type = 'recall' AND status = 'active'",
        org,
        playbook,
    )
    return found is not None


async def write(conn: Any, row: ViewRow, expected: Expected | None, fence: LeaseFence | None) -> bool:
    values = row.values()
    async with conn.transaction():
        if fence is not None:
            await check_fence(conn, fence)
        if expected is None:
            await conn.execute(_PUT, *values)
            return True
        status: str = await conn.execute(_ADVANCE, *values[3:], *values[:3], expected.version, expected.checkpoint)
        return status.endswith(" 1")


async def drop(conn: Any, org: str, playbook: str, name: str, fence: LeaseFence | None) -> None:
    async with conn.transaction():
        if fence is not None:
            await check_fence(conn, fence)
        await conn.execute(
            "DELETE FROM recall_views WHERE org = $1 AND playbook = $2 AND name = $3", org, playbook, name
        )
