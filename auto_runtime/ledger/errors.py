"""The errors the ledger raises to its callers."""

from __future__ import annotations


class LedgerError(Exception):
    """Base class of the ledger's own errors."""


class VersionConflict(LedgerError):
    """An append stated a version its stream no longer has; nothing of the append was written.

    The caller reloads the stream, decides again and appends with the new version (a few times),
    then answers `conflict`.
    """

    def __init__(self, stream: str, expected: int | None) -> None:
        super().__init__(f"stream {stream!r} is not at version {expected}")
        self.stream = stream
        self.expected = expected


class DuplicateRecordIdError(LedgerError):
    """An appended record reused an id the ledger already holds; nothing of the append was written."""

    def __init__(self, record_id: str) -> None:
        super().__init__(f"a record with id {record_id!r} is already recorded")
        self.record_id = record_id


class InvalidCursor(LedgerError):
    """A paging cursor that this playbook's reads did not give (foreign, malformed or for another order).

    The HTTP layer answers it as `invalid_input` at `/cursor`.
    """


class LedgerClosedError(LedgerError):
    """The ledger was used after its `open_ledger` block ended."""
