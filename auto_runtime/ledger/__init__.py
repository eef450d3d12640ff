"""The ledger: the runtime's only truth, an append-only event store on SQLite or PostgreSQL.

Import from here; the modules below are the implementation. See `Ledger` for the operations and
`open_ledger` for opening a store. A command loads, decides and appends with the version it read::

    async with open_ledger(ledger_file=Path("~/.auto-runtime/ledger.db").expanduser()) as ledger:
        scope = PlaybookScope("acme", "finance")
        stream = scope.stream("runs", run_id)
        for _ in range(4):
            history = await ledger.read_stream(stream)
            decided = decide(history)  # the command's own fold and decision
            try:
                await ledger.append([StreamWrite(stream, len(history), decided)])
                break
            except VersionConflict:
                continue  # someone appended meanwhile: reload and decide again
        page = await ledger.read_playbook(scope, order="desc", correlation_id=run_id, limit=20)
"""

from .content import ContentStore
from .due_work import DueEntry, DueKey, DueRow, DueState, DueWork, DueWorkChanges
from .errors import DuplicateRecordIdError, InvalidCursor, LedgerClosedError, LedgerError, VersionConflict
from .feed import AppendSignal, FeedPosition
from .ids import uuid7
from .lease import WORKFLOW_HOST_LEASE, Lease, LeaseFence, LeaseLost, LeaseState
from .ledger import Ledger, SqlValue
from .opening import open_ledger
from .paging import DEFAULT_PAGE_LIMIT, MAX_LOOKED_AT, MAX_PAGE_BYTES, MAX_PAGE_LIMIT, Order, Page
from .projections import ColumnType, Projection, ProjectionKey, Row, TableSpec
from .records import ANY_VERSION, MAX_RECORDS_PER_APPEND, AnyVersion, NewRecord, Record, StreamWrite
from .streams import OrgScope, PlaybookScope, Scope, StreamName

__all__ = [
    "ANY_VERSION",
    "DEFAULT_PAGE_LIMIT",
    "MAX_LOOKED_AT",
    "MAX_PAGE_BYTES",
    "MAX_PAGE_LIMIT",
    "MAX_RECORDS_PER_APPEND",
    "WORKFLOW_HOST_LEASE",
    "AnyVersion",
    "AppendSignal",
    "ColumnType",
    "ContentStore",
    "DueEntry",
    "DueKey",
    "DueRow",
    "DueState",
    "DueWork",
    "DueWorkChanges",
    "DuplicateRecordIdError",
    "FeedPosition",
    "InvalidCursor",
    "Lease",
    "LeaseFence",
    "LeaseLost",
    "LeaseState",
    "Ledger",
    "LedgerClosedError",
    "LedgerError",
    "NewRecord",
    "Order",
    "OrgScope",
    "Page",
    "PlaybookScope",
    "Projection",
    "ProjectionKey",
    "Record",
    "Row",
    "Scope",
    "SqlValue",
    "StreamName",
    "StreamWrite",
    "TableSpec",
    "VersionConflict",
    "open_ledger",
    "uuid7",
]
