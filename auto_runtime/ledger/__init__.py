"""The ledger: the runtime's only truth, an append-only event store on SQLite or PostgreSQL.

Import from here; the modules below are the implementation. See `Ledger` for the operations and
`open_ledger` for opening a store. A command loads, decides and appends with the version it read::

    async with open_ledger(ledger_file=Path("~/.auto-runtime/ledger.db").expanduser()) as ledger:
        scope = PlaybookScope("acme", "finance")
        stream = scope.stream("events", key)
        # Read, fold, decide, append at the version read; a clash (someone appended meanwhile) reads and decides
        # again, a few times, then raises what `clashed` makes (see `commands`; a run's writer is `runs.writer`).
        await decide_and_append(ledger, stream, folding_reader(ledger, stream, fold), decide, clashed=KeptMoving)
        page = await ledger.read_playbook(scope, order="desc", limit=20)

The workflow host claims the leases of its partitions every sweep and fires due timers only in the partitions it
holds (see `partitions`, `lease` and `due_work` for the rules; `workflow_host.partition_leases` claims several
at once and reads only their due work). For one lease::

    lease = ledger.lease(partition_lease_name(0))  # "partition:0"
    lapse = workflow_lease_lapse(sweep)  # the longer of three sweeps and 3 s
    held_fencing = None
    while not stopping:
        asked_at = trio.current_time()
        state = await lease.claim(server_id, lapse)
        if not state.held_by(server_id):  # stand by: retry next sweep
            held_fencing = None
            await trio.sleep(sweep.total_seconds())
            continue
        if state.fencing != held_fencing:  # taken (again): reload runs from the tables
            held_fencing = state.fencing
        fence = state.fence()
        # Stop before the claim lapses (a standby may take it from then on).
        with trio.move_on_at(asked_at + state.remaining.total_seconds()):
            for entry in await ledger.due_work.due(datetime.now(UTC), limit=100):
                facts, arm, cancel = engine.apply(entry)  # the run's input: TimerFired(entry.key)
                taken = DueWorkChanges(arm=arm, cancel=cancel, fire=[entry.due_key])  # marked with its input
                await ledger.append(facts, due_work=taken, fence=fence)  # LeaseLost: stand by
            next_due = await ledger.due_work.next_due()
            pause = sweep if next_due is None else min(sweep, next_due - datetime.now(UTC))
            await trio.sleep(max(pause.total_seconds(), 0))
    await lease.release(server_id)  # a clean stop: a standby takes over at its next claim

The ledger is a set of ports (design §3), and code above it runs no SQL. Beside the event store itself (`append`,
`read_stream`, `read_playbook`, `read_forward`, ...) it offers `due_work`, `lease(name)`, `content`, `secrets`,
`recall_views`, and `queries`: one typed query object per projection (the `queries` package), made once per
ledger and reading through it, each with its SQL beside its methods::

    row = await ledger.queries.definitions.row(scope.org, scope.playbook, "workflow", name)  # as stored, or None
    version = version_of(DEFINITIONS_PROJECTION.decode_row(row)) if row is not None else None
    if await ledger.queries.runs.status(scope.org, scope.playbook, run_id) == "started": ...

`queries.playbooks`, `.definitions`, `.runs`, `.analytics`, `.workflow_runs`, `.workflow_listeners`,
`.prediction_versions`, `.open_requests`, `.due_work` (counts) and `.content` (digests) answer rows as stored (the
caller decodes `json` columns with its projection, defined above the ledger) or plain values. A new read of a
projection is a method on its query object: SQL runs only inside `ledger/`, whose one read (`Ledger._select`) is
private (`tests/architecture/test_ledger_sql.py`).
"""

from .commands import Decided, Folded, decide_and_append, folding_reader
from .content import ContentDamaged, ContentStore, ContentUnavailable
from .due_work import DueEntry, DueKey, DueRow, DueState, DueWork, DueWorkChanges
from .errors import (
    DuplicateRecordIdError,
    InvalidCursor,
    LedgerClosedError,
    LedgerError,
    LedgerStartError,
    LedgerUnavailable,
    VersionConflict,
)
from .feed import AppendSignal, FeedPosition
from .ids import uuid7
from .lease import (
    WORKFLOW_HOST_LEASE,
    Lease,
    LeaseFence,
    LeaseLost,
    LeaseState,
    workflow_lease_lapse,
    workflow_lease_renewal,
)
from .ledger import Ledger, SqlValue
from .opening import open_ledger
from .paging import DEFAULT_PAGE_LIMIT, MAX_LOOKED_AT, MAX_PAGE_BYTES, MAX_PAGE_LIMIT, Order, Page
from .partitions import (
    DEFAULT_PARTITIONS,
    MAX_PARTITIONS,
    PARTITION_LEASE_PREFIX,
    SERVER_LEASE_PREFIX,
    Fences,
    Partitioning,
    compact_ranges,
    partition_lease_name,
    partition_of,
    partition_of_due,
    partition_of_lease,
    playbook_key,
    server_lease_name,
)
from .projections import ColumnType, Projection, ProjectionKey, Row, TableSpec
from .records import ANY_VERSION, MAX_RECORDS_PER_APPEND, AnyVersion, NewRecord, Record, StreamWrite
from .streams import OrgScope, PlaybookScope, Scope, StreamName

__all__ = [
    "ANY_VERSION",
    "DEFAULT_PAGE_LIMIT",
    "DEFAULT_PARTITIONS",
    "MAX_LOOKED_AT",
    "MAX_PAGE_BYTES",
    "MAX_PAGE_LIMIT",
    "MAX_PARTITIONS",
    "MAX_RECORDS_PER_APPEND",
    "PARTITION_LEASE_PREFIX",
    "SERVER_LEASE_PREFIX",
    "WORKFLOW_HOST_LEASE",
    "AnyVersion",
    "AppendSignal",
    "ColumnType",
    "ContentDamaged",
    "ContentStore",
    "ContentUnavailable",
    "Decided",
    "DueEntry",
    "DueKey",
    "DueRow",
    "DueState",
    "DueWork",
    "DueWorkChanges",
    "DuplicateRecordIdError",
    "FeedPosition",
    "Fences",
    "Folded",
    "InvalidCursor",
    "Lease",
    "LeaseFence",
    "LeaseLost",
    "LeaseState",
    "Ledger",
    "LedgerClosedError",
    "LedgerError",
    "LedgerStartError",
    "LedgerUnavailable",
    "NewRecord",
    "Order",
    "OrgScope",
    "Page",
    "Partitioning",
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
    "compact_ranges",
    "decide_and_append",
    "folding_reader",
    "open_ledger",
    "partition_lease_name",
    "partition_of",
    "partition_of_due",
    "partition_of_lease",
    "playbook_key",
    "server_lease_name",
    "uuid7",
    "workflow_lease_lapse",
    "workflow_lease_renewal",
]
