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


class LedgerUnavailable(LedgerError):
    """The store cannot take this work now: its disk is full (SQLite's `SQLITE_FULL`, a disk I/O error on a
    disk with no space left, PostgreSQL's `disk_full`), or its writer's bounded mailbox is full
    (`overloaded`). Nothing of the work was kept.

    A passing fault, not a failure of the runtime: a request answers `unavailable` with `Retry-After`, a
    background loop backs off and tries again, and the same work succeeds once space returns. `detail` is
    the sentence a caller reads; the store's own error is the `__cause__`, for the operator's log.
    """

    detail = (
        "The server cannot record anything at the moment: the disk that keeps its ledger is full. "
        "Send the same request again later."
    )

    def __init__(self, cause: str, detail: str | None = None) -> None:
        super().__init__(f"the ledger cannot take writes: {cause}")
        self.cause = cause
        if detail is not None:
            self.detail = detail


OVERLOADED_DETAIL = "The server is busy recording other work at the moment. Send the same request again shortly."


def overloaded(actor: str, capacity: int) -> LedgerUnavailable:
    """The error for work the store's actor refused because its mailbox is full (back-pressure, not a fault)."""
    return LedgerUnavailable(f"the {actor}'s mailbox holds {capacity} units of work already", OVERLOADED_DETAIL)


class LedgerStartError(LedgerError):
    """The store cannot be opened at start. `str(error)` is the one line to print: it names the setting
    (`LEDGER_FILE`, `DATABASE_URL`) and the cause, never a password."""
