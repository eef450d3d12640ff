"""`Ledger`: the interface the runtime codes against, with the behaviour both stores share.

One instance per process, opened with `open_ledger` and used from Trio tasks. The event store is this class:
subclasses (the SQLite and PostgreSQL stores) implement its storage steps (`_append`, `_scan`, `_load`, ...);
validation, encoding, paging and cursors live here so both stores behave alike. Beside it, each other concern
is a port of its own with a SQLite and a PostgreSQL implementation (`LedgerPorts`: content, due work, leases,
secret rows, recall view rows), which `opening` composes and hands to the store; the ledger shows them as
`content`, `due_work`, `lease(name)`, `secrets` and `recall_views`.
"""

from __future__ import annotations

import abc
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from auto_runtime.metrics import appended
from auto_runtime.telemetry import ledger_append_span

from . import paging
from .content import ContentStore, is_digest
from .due_wake import DueWake
from .due_work import DueWork, DueWorkChanges, EncodedChanges, encode_changes
from .feed import AppendSignal, FeedPosition, KeyedSignal, StreamsAppended
from .lease import WORKFLOW_HOST_LEASE, Lease, LeaseFence, Leases, validate_fence, validate_lease_name
from .migrations import SchemaReport
from .open_state import OpenState
from .paging import Order, Page, ScanRow, SortKey
from .partitions import Partitioning
from .projections import Projection
from .queries import Queries
from .recall_views import RecallViewRows
from .records import (
    AnyVersion,
    EncodedRecord,
    Record,
    StreamWrite,
    encode_record,
    now_microseconds,
    to_microseconds,
    validate_writes,
)
from .secret_rows import SecretRows
from .streams import PlaybookScope, Scope, StreamName, scope_key_of

SqlValue = str | int | float | bytes | None


@dataclass(frozen=True, slots=True)
class EncodedWrite:
    """A validated `StreamWrite` ready for a store: `expected` is None for `ANY_VERSION`."""

    stream: str
    expected: int | None
    records: list[EncodedRecord]


@dataclass(frozen=True, slots=True)
class LedgerPorts:
    """A ledger's ports beside its event store, all on the store's own database (made by `opening`)."""

    content: ContentStore
    due_work: DueWork
    leases: Leases
    secrets: SecretRows
    recall_views: RecallViewRows
    partitioning: Partitioning
    due_wake: DueWake


class Ledger(abc.ABC):
    """The append-only event store. Every method is async and called from Trio tasks.

    Concurrency: any number of tasks may call any method at once. Appends to one stream are
    serialised by the expected version: of two appends stating the same version, one commits and the
    other raises `VersionConflict`. On PostgreSQL this also holds across processes. Leases
    (`lease`) and due work (`due_work`) follow the rules in their modules; an append may carry
    due-work changes and a lease fence, all applied in its one transaction or not at all.
    """

    sole_writer: bool = False
    """True when no other process can append to this ledger (SQLite: one server per file, held by a lock), so
    what this process appended is all there is: a cache kept current by this process's own appends is exact,
    and "did another server move this stream?" needs no read. False on PostgreSQL, shared by servers."""

    def __init__(self, projections: Sequence[Projection], ports: LedgerPorts, open_state: OpenState) -> None:
        self.projections: tuple[Projection, ...] = tuple(projections)
        self.ports = ports
        self.content = ports.content
        self.open_state = open_state
        """Shared with the ports: the store's `stop` closes it, and every call of the ledger or a port then
        raises `LedgerClosedError`."""
        self.appended = AppendSignal()
        self.appends_heard: AppendSignal = self.appended
        """Woken by the appends this process hears of, whichever server made them: on PostgreSQL the appends'
        `LISTEN/NOTIFY` (this process's own appends too, once their notification comes back), not each append of
        this process; a ledger no other server shares has only this process's appends, so it is `appended`. A
        reader waiting for another server's write waits on it rather than on `appended`."""
        self.due_recorded = AppendSignal()
        """Woken when a server (this one too) recorded due work for a partition it does not hold, due soon: the
        ledger's own notification after such a write commits (`due_wake`; PostgreSQL only)."""
        self.runs_begun = KeyedSignal()
        """Woken by run id when a server began runs it was handed (`tell_runs_begun`), whichever server began them:
        a server waiting for another to begin a run reads again when that run is named, not at every append."""
        self.streams_appended = StreamsAppended()
        """The streams each of this process's appends wrote to, told once it committed (see `StreamsAppended`)."""
        self.recorded_clock: Callable[[], int] = now_microseconds
        """The clock records are stamped with (`recorded_at`, UTC microseconds since 1970): the wall clock, or the
        server's (`auto_runtime.server_clock`, set before the first append)."""
        self.rebuilt: list[str] = []
        """The names of the projections rebuilt from history when this ledger opened."""
        self.schema: SchemaReport | None = None
        """The schema versions this ledger was found at and brought to when it opened (see `migrations`)."""

    def _check_open(self) -> None:
        self.open_state.check()

    async def append(
        self,
        writes: Sequence[StreamWrite],
        due_work: DueWorkChanges | None = None,
        fence: LeaseFence | None = None,
    ) -> list[Record]:
        """Append the records of every write in one transaction and return them as recorded.

        Atomic over all the streams of the call. Each write states the version it read
        (`expected_version`: 0 means the stream must not exist, `ANY_VERSION` skips the check); a
        clash raises `VersionConflict` naming the stream and writes nothing. More than
        `MAX_RECORDS_PER_APPEND` records, a stream twice, an invalid id or type, or data that is not
        JSON is a `ValueError`. A reused record id raises `DuplicateRecordIdError`. Registered projections
        are applied in the same transaction. Returns only after the commit is durable. An append
        whose task is cancelled while it waits may or may not have been committed: reload the
        stream to know.

        `due_work` arms, cancels and marks fired due-work entries in the same transaction (see
        `due_work`): an applied workflow input appends its facts, changes its timers and marks the entry
        it took fired atomically, so a refused append changes no entry. `fence` makes the append
        conditional on the lease: when its holder or fencing number changed, `LeaseLost` is raised and
        nothing is written (see `lease`).
        """
        self._check_open()
        validate_writes(writes)
        changes = encode_changes(due_work) if due_work is not None else None
        if fence is not None:
            validate_fence(fence)
        with ledger_append_span(writes) as trace:
            now = self.recorded_clock()
            encoded = [
                EncodedWrite(
                    stream=write.stream,
                    expected=None if isinstance(write.expected_version, AnyVersion) else write.expected_version,
                    records=[encode_record(write.stream, record, now, trace) for record in write.records],
                )
                for write in writes
            ]
            if not changes and fence is None:
                records = await self._append(encoded)
            else:
                records = await self._append_guarded(encoded, changes or EncodedChanges(), fence)
        self.streams_appended.tell(frozenset(write.stream for write in writes))
        appended(records)
        return records

    def lease(self, name: str = WORKFLOW_HOST_LEASE) -> Lease:
        """The lease called `name` (the workflow host's by default): `claim`, `release`, `holder`."""
        return Lease(self.ports.leases, validate_lease_name(name))

    async def tell_runs_begun(self, run_ids: Sequence[str]) -> None:
        """Tell every server sharing this ledger, this one included (their `runs_begun`), that the runs of
        `run_ids` began (or were found begun). On a ledger no other server shares, this process's own signal."""
        self._check_open()
        self.runs_begun.notify(run_ids)

    @property
    def partitioning(self) -> Partitioning:
        """The ledger's partition count (`partitioning.count`, kept in the ledger) and the one its setting asked
        for (see `partitions`)."""
        return self.ports.partitioning

    @property
    def due_wake(self) -> DueWake:
        """Which writes of due work wake the partitions' holders (`due_wake`): the workflow host tells it the
        partitions this server holds (`watch`)."""
        return self.ports.due_wake

    @property
    def leases(self) -> Leases:
        """Every lease row (`claim_many`, `release_many`, `read_all`), for the holders of several leases."""
        return self.ports.leases

    @property
    def secrets(self) -> SecretRows:
        """The sealed secret rows (`secret_rows`): put, get, forget, every, replace."""
        return self.ports.secrets

    @property
    def due_work(self) -> DueWork:
        """The due-work table (timers): `arm`, `cancel`, `due`, `next_due`, `mark_fired`, ..."""
        return self.ports.due_work

    async def read_stream(self, stream: StreamName, from_position: int = 1, limit: int | None = None) -> list[Record]:
        """The stream's records from `from_position` (counting from 1), at most `limit` of them."""
        self._check_open()
        scope_key_of(stream)
        if from_position < 1 or (limit is not None and limit < 1):
            raise ValueError("from_position and limit count from 1")
        return await self._read_stream(stream, from_position, limit)

    async def stream_version(self, stream: StreamName) -> int:
        """How many records the stream holds (0 when it does not exist)."""
        self._check_open()
        scope_key_of(stream)
        return await self._stream_version(stream)

    async def read_record(self, scope: Scope, record_id: str) -> Record | None:
        """The record with this id when it is recorded in one of the scope's streams, else None."""
        self._check_open()
        return await self._read_record(scope.key, record_id)

    async def read_playbook(
        self,
        scope: PlaybookScope,
        order: Order = "desc",
        types: set[str] | None = None,
        since: datetime | None = None,
        correlation_id: str | None = None,
        limit: int = paging.DEFAULT_PAGE_LIMIT,
        cursor: str | None = None,
    ) -> Page:
        """One page of the playbook's records, newest first (`desc`) or oldest first (`asc`).

        `types` keeps records of those types, `since` those recorded at or after that time,
        `correlation_id` one run's tree (records whose `metadata.correlation_id` is that id). Paging
        follows the seeds' "Paging" (see `paging`); a cursor from another playbook, from a read in
        the other order, or malformed raises `InvalidCursor`.
        """
        self._check_open()
        if not isinstance(scope, PlaybookScope):
            raise TypeError("read_playbook needs a PlaybookScope")
        if order not in ("asc", "desc"):
            raise ValueError("order is asc or desc")
        paging.validate_limit(limit)
        after = paging.decode_cursor(cursor, scope.key, order) if cursor is not None else None
        filtered = bool(types) or since is not None
        size = paging.scan_size(limit, filtered)
        rows = await self._scan(
            scope.key,
            order,
            after,
            correlation_id,
            sorted(types) if types else None,
            to_microseconds(since) if since is not None else None,
            size,
        )
        plan = paging.plan_page(rows, limit, size)
        records = await self._load(plan.chosen) if plan.chosen else []
        next_cursor = (
            paging.encode_cursor(scope.key, order, plan.resume_after)
            if plan.has_more and plan.resume_after is not None
            else None
        )
        return Page(records=records, has_more=next_cursor is not None, next_cursor=next_cursor)

    async def read_forward(
        self, after: FeedPosition | None, limit: int = 100
    ) -> tuple[list[Record], FeedPosition | None]:
        """The next records of the whole store, oldest first, after `after` (from the start when None).

        Returns the records and the position to pass next time (`after` itself when there were
        none). Never skips a record that commits late: on PostgreSQL it reads only behind the
        horizon of transactions still open in its database.
        """
        self._check_open()
        if limit < 1:
            raise ValueError("limit counts from 1")
        found = await self._read_forward((after.commit_order, after.global_position) if after else None, limit)
        if not found:
            return [], after
        last_key = found[-1][0]
        return [record for _, record in found], FeedPosition(last_key[0], last_key[1])

    async def read_playbook_after(
        self, scope: PlaybookScope, after: SortKey | None, limit: int
    ) -> list[tuple[SortKey, Record]]:
        """Up to `limit` of the playbook's records oldest first after the sort key `after` (from the first when
        None), each with its sort key. On PostgreSQL it reads only behind the oldest write still open, so a
        record committed late is read late, never passed over."""
        self._check_open()
        if limit < 1:
            raise ValueError("limit counts from 1")
        rows = await self._scan(scope.key, "asc", after, None, None, None, limit)
        keys = [row.key for row in rows]
        records = await self._load(keys) if keys else []
        return list(zip(keys, records, strict=True))

    @property
    def recall_views(self) -> RecallViewRows:
        """The recall views' table (`recall_views`): reads, and writes fenced by the workflow lease."""
        return self.ports.recall_views

    async def _select(self, sql: str, params: Sequence[SqlValue] = ()) -> list[dict[str, Any]]:
        """Run one read-only SELECT (usually over projection tables) and return its rows as dicts: the read the
        query objects are given (`queries`), private to `ledger/`.

        Write the SQL with `?` placeholders; the PostgreSQL store numbers them for asyncpg. Keep to
        SQL both engines speak. Column values come back as `str`, `int`, `float` or None; decode a
        projection's `json` columns with `Projection.decode_row`. Computed values differ by engine
        unless cast: a comparison is a `bool` on PostgreSQL and an `int` on SQLite, and `avg` is a
        `Decimal` on PostgreSQL, so write `CAST(avg(x) AS DOUBLE PRECISION)` (both engines accept
        it). The statement runs in a read-only transaction on both stores, so a write is refused.
        Code above the ledger runs no SQL: it reads through `queries` (`tests/architecture/test_ledger_sql.py`).
        """
        self._check_open()
        return await self._fetch(sql, tuple(params))

    @functools.cached_property
    def queries(self) -> Queries:
        """The query ports (`queries`): one typed query object per projection, e.g. `queries.runs.status(...)`;
        what code above the ledger reads projections with, instead of SQL."""
        return Queries(self._select)

    async def put_content(self, scope: Scope, data: bytes) -> str:
        """Keep `data` under its SHA-256 within the scope; returns the hex digest. Idempotent. Kept in the
        ledger's database, or in the object store when one writes (`content`); `ContentUnavailable` (a
        `LedgerUnavailable`) when it cannot take the bytes now, and then nothing is kept."""
        self._check_open()
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError("content is bytes")
        return await self.content.put(scope.key, bytes(data))

    async def get_content(self, scope: Scope, sha256: str) -> bytes | None:
        """The bytes kept under `sha256` within the scope, or None (also for a malformed digest). Read where
        the content's row says: `ContentUnavailable` when its object store cannot answer now, `ContentDamaged`
        when what it answers is not that content."""
        self._check_open()
        if not is_digest(sha256):
            return None
        return await self.content.get(scope.key, sha256)

    @abc.abstractmethod
    async def _append(self, writes: list[EncodedWrite]) -> list[Record]: ...

    @abc.abstractmethod
    async def _append_guarded(
        self, writes: list[EncodedWrite], changes: EncodedChanges, fence: LeaseFence | None
    ) -> list[Record]:
        """`_append` with due-work changes and a fence check, all in the append's transaction."""

    @abc.abstractmethod
    async def _read_stream(self, stream: str, from_position: int, limit: int | None) -> list[Record]: ...

    @abc.abstractmethod
    async def _stream_version(self, stream: str) -> int: ...

    @abc.abstractmethod
    async def _read_record(self, scope_key: str, record_id: str) -> Record | None: ...

    @abc.abstractmethod
    async def _scan(
        self,
        scope_key: str,
        order: Order,
        after: SortKey | None,
        correlation_id: str | None,
        types: list[str] | None,
        since_us: int | None,
        size: int,
    ) -> list[ScanRow]:
        """Look at up to `size` records of the scope in read order after `after`."""

    @abc.abstractmethod
    async def _load(self, keys: list[SortKey]) -> list[Record]:
        """The records with these sort keys, in the order given."""

    @abc.abstractmethod
    async def _read_forward(self, after: SortKey | None, limit: int) -> list[tuple[SortKey, Record]]: ...

    @abc.abstractmethod
    async def _fetch(self, sql: str, params: tuple[SqlValue, ...]) -> list[dict[str, Any]]: ...
