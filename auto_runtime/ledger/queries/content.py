"""Which content a scope keeps (the ledger's own `ledger_content` rows, written by `ledger/content.py`), for code
that keeps one content under a scope key of its own and reads it back without its digest (a dataset's summary, a
build's brief); the bytes are read through `Ledger.content`."""

from __future__ import annotations

from .reading import ReadRows

DIGEST_OF_SCOPE = "SELECT sha256 FROM ledger_content WHERE scope_key = ?"


class ContentQueries:
    """Reads of the content rows: digests only, never the bytes or where they are."""

    def __init__(self, read: ReadRows) -> None:
        self._read = read

    async def digest(self, scope_key: str) -> str | None:
        """The SHA-256 of the content kept under the scope key, or None when it keeps none; of a key that keeps
        several, one of them."""
        rows = await self._read(DIGEST_OF_SCOPE, (scope_key,))
        return str(rows[0]["sha256"]) if rows else None
