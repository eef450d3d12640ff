"""`ReadRows`: how a query object runs its SQL, handed to it by the ledger that owns the database.

A query object never holds the ledger: it is given the ledger's one read-only select (`Ledger._select`, private to
`ledger/`), so no module of `ledger/` reaches into another's privates and the queries import nothing of the event
store.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

Param = str | int | float | None
"""A value a query binds to a `?` placeholder: text and numbers (the projections' columns)."""

ReadRows = Callable[[str, Sequence[Param]], Awaitable[list[dict[str, Any]]]]
"""Run one read-only SELECT written with `?` placeholders (numbered for asyncpg by the PostgreSQL store) and
return its rows as dicts of column to value as stored (`json` columns still text)."""
