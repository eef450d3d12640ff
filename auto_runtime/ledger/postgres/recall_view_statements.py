"""The PostgreSQL store's `recall_views` writes, each in one transaction with its fence check (`..recall_views`)."""

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
