"""`OpenState`: whether a ledger is still open, shared by the ledger and each of its ports.

`opening` makes one per ledger and hands it to the store and to every port it composes; the store's `stop`
closes it, and from then on every call of the ledger or of a port raises `LedgerClosedError` before it
reaches the database. Set once, from the Trio thread; read from any Trio task.
"""

from __future__ import annotations

from .errors import LedgerClosedError


class OpenState:
    def __init__(self) -> None:
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """The ledger is closed: every later `check` raises."""
        self._closed = True

    def check(self) -> None:
        """Raise `LedgerClosedError` once the ledger is closed."""
        if self._closed:
            raise LedgerClosedError("the ledger is closed")
