"""The PostgreSQL store's SQL, as coroutines over one asyncpg connection (run on the loop thread).

Read order. A global position comes from a sequence when a row is inserted, so a transaction can
commit a lower position after a higher one is visible. Oldest-first readers (the feed, oldest-first
playbook pages) therefore order by `(tx_id, global_position)` and read only records whose `tx_id` is
below the *horizon*: the oldest transaction id still in progress in this database (from
`pg_snapshot_xip(pg_current_snapshot())`, leaving out the ids `pg_stat_activity` shows in other
databases), or the snapshot's `xmax` when there is none. Every transaction below the horizon has
ended, and any later commit has a larger `tx_id`, so it sorts after every record already read. A
cause commits before the record it causes begins, so causes still sort first. Newest-first reads
need no horizon: a late commit sorts before the cursor and is read by a later page.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg

from .. import json_text
from ..content import LOCATION_LEDGER, ChunkCheck, KeptContent, SpooledContent
from ..due_work import EncodedChanges, EncodedEntry, EncodedKey
from ..errors import DuplicateRecordIdError, VersionConflict
from ..lease import LeaseFence, LeaseLost
from ..ledger import EncodedWrite
from ..paging import Order, ScanRow, SortKey
from ..placeholders import to_numbered
from ..projections import Delete, Projection, ProjectionKey, Upsert, distinct_keys, fold, touches
from ..records import Record, decode_record, record_from_encoded
from .due_work_statements import change_arguments, mark_in_transaction
from .lease_statements import LEASE_LOST_SQLSTATE, fence_arguments, lease_lost

RECORD_COLUMNS = "id, stream, position, global_position, type, data, metadata, recorded_at"
DEADLOCK_RETRIES = 5

HORIZON = """(SELECT coalesce(min(x::text::bigint), pg_snapshot_xmax(pg_current_snapshot())::text::bigint)
    FROM pg_snapshot_xip(pg_current_snapshot()) AS x
    WHERE NOT EXISTS (
        SELECT 1 FROM pg_stat_activity AS a
        WHERE a.backend_xid IS NOT NULL AND a.datname <> current_database()
          AND a.backend_xid::text::bigint = x::text::bigint % 4294967296))"""

_DUPLICATE_ID = re.compile(r"\(id\)=\((.*)\)")

CONFLICT_SQLSTATE = "LV001"

_APPEND_ONE_FUNCTION = f"""CREATE OR REPLACE FUNCTION ledger_append(
    p_streams text[], p_expected bigint[], p_counts bigint[],
    p_stream_index integer[], p_offsets bigint[], p_ids text[], p_scope_keys text[], p_types text[],
    p_data text[], p_metadata text[], p_correlation_ids text[], p_sizes bigint[], p_recorded_at bigint[]
) RETURNS TABLE (record_id text, record_position bigint, record_global_position bigint)
LANGUAGE plpgsql AS $fn$
DECLARE
    claimed bigint;
    firsts bigint[] := '{{}}';
BEGIN
    FOR i IN 1 .. coalesce(array_length(p_streams, 1), 0) LOOP
        claimed := NULL;
        IF p_expected[i] IS NULL THEN
            INSERT INTO ledger_streams AS s (stream, version) VALUES (p_streams[i], p_counts[i])
            ON CONFLICT (stream) DO UPDATE SET version = s.version + excluded.version
            RETURNING s.version INTO claimed;
        ELSIF p_expected[i] = 0 THEN
            INSERT INTO ledger_streams AS s (stream, version) VALUES (p_streams[i], p_counts[i])
            ON CONFLICT (stream) DO NOTHING
            RETURNING s.version INTO claimed;
        ELSE
            UPDATE ledger_streams AS s SET version = s.version + p_counts[i]
            WHERE s.stream = p_streams[i] AND s.version = p_expected[i]
            RETURNING s.version INTO claimed;
        END IF;
        IF claimed IS NULL THEN
            RAISE EXCEPTION USING ERRCODE = '{CONFLICT_SQLSTATE}', MESSAGE = p_streams[i];
        END IF;
        firsts := firsts || (claimed - p_counts[i] + 1);
    END LOOP;
    RETURN QUERY
    INSERT INTO ledger_records AS r
        (id, stream, position, scope_key, type, data, metadata, correlation_id, size, recorded_at)
    SELECT u.id, p_streams[u.stream_index], firsts[u.stream_index] + u.record_offset, u.scope_key,
           u.record_type, u.data, u.metadata, u.correlation_id, u.size, u.recorded_at
    FROM unnest(p_stream_index, p_offsets, p_ids, p_scope_keys, p_types, p_data, p_metadata,
                p_correlation_ids, p_sizes, p_recorded_at)
         AS u(stream_index, record_offset, id, scope_key, record_type, data, metadata, correlation_id,
              size, recorded_at)
    RETURNING r.id, r.position, r.global_position;
END
$fn$"""
"""The append on the server, so an append without projections is one round trip (one statement in
its own transaction): claim each stream's positions in the order given (the caller sorts by name, so
two appends over the same streams cannot deadlock), raise `CONFLICT_SQLSTATE` naming a stream whose
version differs, insert the records. It does not notify (see `notifier`)."""

_CALL_APPEND = "SELECT * FROM ledger_append($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"

_APPEND_BATCH_FUNCTION = f"""CREATE OR REPLACE FUNCTION ledger_append_batch(
    p_write_ends integer[], p_record_ends integer[],
    p_streams text[], p_expected bigint[], p_counts bigint[],
    p_stream_index integer[], p_offsets bigint[], p_ids text[], p_scope_keys text[], p_types text[],
    p_data text[], p_metadata text[], p_correlation_ids text[], p_sizes bigint[], p_recorded_at bigint[],
    p_fence_names text[], p_fence_holders text[], p_fence_numbers bigint[],
    p_arm_ends integer[], p_arm_scopes text[], p_arm_runs text[], p_arm_keys text[], p_arm_due bigint[],
    p_arm_payloads text[],
    p_cancel_ends integer[], p_cancel_scopes text[], p_cancel_runs text[], p_cancel_keys text[],
    p_fire_ends integer[], p_fire_scopes text[], p_fire_runs text[], p_fire_keys text[]
) RETURNS TABLE (append_index integer, refusal text, detail text,
                 record_id text, record_position bigint, record_global_position bigint)
LANGUAGE plpgsql AS $fn$
DECLARE
    w0 integer := 1;
    r0 integer := 1;
    a0 integer := 1;
    c0 integer := 1;
    f0 integer := 1;
    w1 integer;
    r1 integer;
    a1 integer;
    c1 integer;
    f1 integer;
    why text;
    said text;
    ids text[];
    positions bigint[];
    globals bigint[];
BEGIN
    FOR a IN 1 .. coalesce(array_length(p_write_ends, 1), 0) LOOP
        w1 := p_write_ends[a];
        r1 := p_record_ends[a];
        a1 := p_arm_ends[a];
        c1 := p_cancel_ends[a];
        f1 := p_fire_ends[a];
        why := NULL;
        BEGIN
            PERFORM ledger_check_fence(p_fence_names[a], p_fence_holders[a], p_fence_numbers[a]);
            SELECT array_agg(x.record_id), array_agg(x.record_position), array_agg(x.record_global_position)
            INTO ids, positions, globals
            FROM ledger_append(
                p_streams[w0:w1], p_expected[w0:w1], p_counts[w0:w1],
                p_stream_index[r0:r1], p_offsets[r0:r1], p_ids[r0:r1], p_scope_keys[r0:r1], p_types[r0:r1],
                p_data[r0:r1], p_metadata[r0:r1], p_correlation_ids[r0:r1], p_sizes[r0:r1], p_recorded_at[r0:r1]
            ) AS x;
            IF a1 >= a0 OR c1 >= c0 THEN
                PERFORM ledger_change_due_work(NULL, NULL, NULL,
                    p_arm_scopes[a0:a1], p_arm_runs[a0:a1], p_arm_keys[a0:a1], p_arm_due[a0:a1],
                    p_arm_payloads[a0:a1], p_cancel_scopes[c0:c1], p_cancel_runs[c0:c1], p_cancel_keys[c0:c1]);
            END IF;
            IF f1 >= f0 THEN
                PERFORM ledger_mark_fired(NULL, NULL, NULL,
                    p_fire_scopes[f0:f1], p_fire_runs[f0:f1], p_fire_keys[f0:f1]);
            END IF;
        EXCEPTION
            WHEN SQLSTATE '{CONFLICT_SQLSTATE}' THEN
                why := 'conflict';
                said := SQLERRM;
            WHEN SQLSTATE '{LEASE_LOST_SQLSTATE}' THEN
                why := 'lease_lost';
                said := SQLERRM;
            WHEN unique_violation THEN
                why := 'duplicate';
                GET STACKED DIAGNOSTICS said = PG_EXCEPTION_DETAIL;
        END;
        IF why IS NULL THEN
            RETURN QUERY SELECT a, NULL::text, NULL::text, u.i, u.p, u.g
                FROM unnest(ids, positions, globals) AS u(i, p, g);
        ELSE
            RETURN QUERY SELECT a, why, said, NULL::text, NULL::bigint, NULL::bigint;
        END IF;
        w0 := w1 + 1;
        r0 := r1 + 1;
        a0 := a1 + 1;
        c0 := c1 + 1;
        f0 := f1 + 1;
    END LOOP;
END
$fn$"""
"""Several appends in one statement, each in a subtransaction of its own (a plpgsql block with an exception
handler): its fence checked (`ledger_check_fence`, which share-locks the lease row), its records appended
(`ledger_append`), then its due-work arms and cancels and its marks of fired entries applied. One whose
version clashes, whose fence no longer holds or whose record id is taken is undone alone and answered with
its refusal; the others commit with the statement. The `_ends` arrays give, for each append, the index of
its last item in the arrays after them; the fence arrays hold NULLs for an unfenced append."""

_CALL_APPEND_BATCH = f"SELECT * FROM ledger_append_batch({', '.join(f'${n}' for n in range(1, 33))})"

APPEND_FUNCTION = f"{_APPEND_ONE_FUNCTION};\n{_APPEND_BATCH_FUNCTION}"
"""The script that installs `ledger_append` and `ledger_append_batch` (two statements, which asyncpg runs
together when given no arguments)."""

MAX_APPEND_BATCH = 32
"""The most appends `append_batch` sends in one statement. Each is a subtransaction with an id of its own,
and PostgreSQL keeps at most 64 of a transaction's subtransaction ids where other sessions' snapshots look
for them: more would make every snapshot taken meanwhile slower."""

APPEND_GUARDED_FUNCTION = """CREATE OR REPLACE FUNCTION ledger_append_guarded(
    p_fence_name text, p_fence_holder text, p_fence_number bigint,
    p_streams text[], p_expected bigint[], p_counts bigint[],
    p_stream_index integer[], p_offsets bigint[], p_ids text[], p_scope_keys text[], p_types text[],
    p_data text[], p_metadata text[], p_correlation_ids text[], p_sizes bigint[], p_recorded_at bigint[],
    p_arm_scopes text[], p_arm_runs text[], p_arm_keys text[], p_arm_due bigint[], p_arm_payloads text[],
    p_cancel_scopes text[], p_cancel_runs text[], p_cancel_keys text[]
) RETURNS TABLE (record_id text, record_position bigint, record_global_position bigint)
LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM ledger_check_fence(p_fence_name, p_fence_holder, p_fence_number);
    RETURN QUERY SELECT * FROM ledger_append(
        p_streams, p_expected, p_counts, p_stream_index, p_offsets, p_ids, p_scope_keys, p_types,
        p_data, p_metadata, p_correlation_ids, p_sizes, p_recorded_at);
    PERFORM ledger_change_due_work(NULL, NULL, NULL, p_arm_scopes, p_arm_runs, p_arm_keys, p_arm_due,
        p_arm_payloads, p_cancel_scopes, p_cancel_runs, p_cancel_keys);
END
$fn$"""
"""`ledger_append` with a fence checked first (`ledger_check_fence`, which share-locks the lease row)
and due-work changes applied after (`ledger_change_due_work`), in one statement: still one round
trip without projections."""

_CALL_APPEND_GUARDED = (
    "SELECT * FROM ledger_append_guarded($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, "
    "$17, $18, $19, $20, $21, $22, $23, $24)"
)


def _append_arguments(writes: Sequence[EncodedWrite]) -> list[list[Any]]:
    ordered = sorted(writes, key=_stream)
    index = {write.stream: number for number, write in enumerate(ordered, start=1)}
    arguments: list[list[Any]] = [
        [write.stream for write in ordered],
        [write.expected for write in ordered],
        [len(write.records) for write in ordered],
    ]
    columns: list[list[Any]] = [[] for _ in range(10)]
    for write in writes:
        for offset, record in enumerate(write.records):
            values = (
                index[write.stream],
                offset,
                record.id,
                record.scope_key,
                record.type,
                record.data,
                record.metadata,
                record.correlation_id,
                record.size,
                record.recorded_at_us,
            )
            for column, value in zip(columns, values, strict=True):
                column.append(value)
    return arguments + columns


async def _call_append(
    conn: Any, writes: Sequence[EncodedWrite], changes: EncodedChanges | None, fence: LeaseFence | None
) -> list[Record]:
    if changes is None and fence is None:
        sql, arguments = _CALL_APPEND, _append_arguments(writes)
    else:
        guard = change_arguments(changes or EncodedChanges(), fence)
        sql, arguments = _CALL_APPEND_GUARDED, [*guard[:3], *_append_arguments(writes), *guard[3:]]
    try:
        rows = await conn.fetch(sql, *arguments)
    except asyncpg.UniqueViolationError as error:
        found = _DUPLICATE_ID.search(getattr(error, "detail", "") or "")
        raise DuplicateRecordIdError(found.group(1) if found else "") from error
    except asyncpg.PostgresError as error:
        lost = lease_lost(error, fence)
        if lost is not None:
            raise lost from error
        if getattr(error, "sqlstate", None) != CONFLICT_SQLSTATE:
            raise
        stream = str(getattr(error, "message", ""))
        expected = next((write.expected for write in writes if write.stream == stream), None)
        raise VersionConflict(stream, expected) from error
    placed = {row["record_id"]: (int(row["record_position"]), int(row["record_global_position"])) for row in rows}
    return [record_from_encoded(record, *placed[record.id]) for write in writes for record in write.records]


@dataclass(frozen=True, slots=True)
class Append:
    """One append for `append_batch`: its writes (validated and encoded), and for a guarded append its
    due-work changes and the lease fence it is conditional on (see `Ledger.append`); `due_recorded` asks the
    listener to wake the partitions' holders once it committed (`..due_wake`)."""

    writes: list[EncodedWrite]
    changes: EncodedChanges | None = None
    fence: LeaseFence | None = None
    due_recorded: bool = False


BatchResult = list[Record] | VersionConflict | DuplicateRecordIdError | LeaseLost


def _batch_arguments(appends: Sequence[Append]) -> list[list[Any]]:
    """`ledger_append_batch`'s 32 arguments: each append's own, concatenated, with the index of its last one."""
    records: list[list[Any]] = [[] for _ in range(13)]
    fences: list[list[Any]] = [[], [], []]
    arms: list[list[Any]] = [[] for _ in range(5)]
    cancels: list[list[Any]] = [[], [], []]
    fires: list[list[Any]] = [[], [], []]
    ends: list[list[int]] = [[], [], [], [], []]
    for append in appends:
        changes = append.changes or EncodedChanges()
        for column, values in zip(records, _append_arguments(append.writes), strict=True):
            column.extend(values)
        for column, value in zip(fences, fence_arguments(append.fence), strict=True):
            column.append(value)
        for entry in changes.arm:
            for column, value in zip(
                arms, (entry.scope_key, entry.run_id, entry.key, entry.due_us, entry.payload), strict=True
            ):
                column.append(value)
        for keys, columns in ((changes.cancel, cancels), (changes.fire, fires)):
            for key in keys:
                for column, value in zip(columns, (key.scope_key, key.run_id, key.key), strict=True):
                    column.append(value)
        for end, column in zip(ends, (records[0], records[5], arms[0], cancels[0], fires[0]), strict=True):
            end.append(len(column))
    return [*ends[:2], *records, *fences, ends[2], *arms, ends[3], *cancels, ends[4], *fires]


def _batch_results(appends: Sequence[Append], rows: Sequence[Any]) -> list[BatchResult]:
    placed: dict[str, tuple[int, int]] = {}
    refused: dict[int, VersionConflict | DuplicateRecordIdError | LeaseLost] = {}
    for row in rows:
        index = int(row["append_index"]) - 1
        append = appends[index]
        if row["refusal"] == "conflict":
            stream = str(row["detail"])
            expected = next((write.expected for write in append.writes if write.stream == stream), None)
            refused[index] = VersionConflict(stream, expected)
        elif row["refusal"] == "lease_lost" and append.fence is not None:
            refused[index] = LeaseLost(append.fence.name, append.fence.holder, append.fence.fencing)
        elif row["refusal"] == "duplicate":
            found = _DUPLICATE_ID.search(row["detail"] or "")
            refused[index] = DuplicateRecordIdError(found.group(1) if found else "")
        else:
            placed[row["record_id"]] = (int(row["record_position"]), int(row["record_global_position"]))
    return [
        refused[index]
        if index in refused
        else [record_from_encoded(record, *placed[record.id]) for write in append.writes for record in write.records]
        for index, append in enumerate(appends)
    ]


def _due_keys(append: Append) -> set[tuple[str, str, str]]:
    changes = append.changes or EncodedChanges()
    keys: list[EncodedKey | EncodedEntry] = [*changes.arm, *changes.cancel, *changes.fire]
    return {(k.scope_key, k.run_id, k.key) for k in keys}


def _combinable(appends: Sequence[Append]) -> bool:
    """Whether the appends may run as one `append_writes`: no stream and no due-work key in two of them, and
    at most one fence among them. Applied together they then do what they would one after the other."""
    streams = [write.stream for append in appends for write in append.writes]
    if len(set(streams)) != len(streams) or len({a.fence for a in appends if a.fence is not None}) > 1:
        return False
    keys = [key for append in appends for key in _due_keys(append)]
    return len(set(keys)) == len(keys)


def _merged(appends: Sequence[Append]) -> tuple[list[EncodedWrite], EncodedChanges | None, LeaseFence | None]:
    """The writes, due-work changes (sorted by key, as `encode_changes` sorts them) and fence of the appends
    taken together."""
    changes = [append.changes for append in appends if append.changes]
    merged = None
    if changes:

        def order(key: EncodedKey | EncodedEntry) -> tuple[str, str, str]:
            return (key.scope_key, key.run_id, key.key)

        merged = EncodedChanges(
            arm=sorted((entry for c in changes for entry in c.arm), key=order),
            cancel=sorted((key for c in changes for key in c.cancel), key=order),
            fire=sorted((key for c in changes for key in c.fire), key=order),
        )
    fence = next((append.fence for append in appends if append.fence is not None), None)
    return [write for append in appends for write in append.writes], merged, fence


async def append_batch(conn: Any, appends: Sequence[Append], projections: Sequence[Projection]) -> list[BatchResult]:
    """Several appends (at most `MAX_APPEND_BATCH`), guarded ones too, in one transaction; returns each
    append's records, or its `VersionConflict`, `DuplicateRecordIdError` or `LeaseLost` (that append alone
    writes nothing), in order.

    When their streams, due-work keys and fences allow (`_combinable`), they first go as one append (one
    statement, as fast as a lone append; with projections or marks a few round trips more); when that one is
    refused, each goes in a subtransaction of its own (`ledger_append_batch`), so only the refused ones fail.
    Raises when the transaction fails as a whole (a projection raising, a deadlock, the server's errors):
    then nothing of it was written."""
    if _combinable(appends):
        try:
            writes, changes, fence = _merged(appends)
            records = await append_writes(conn, writes, projections, changes, fence)
        except (VersionConflict, DuplicateRecordIdError, LeaseLost) as refused:
            if len(appends) == 1:
                return [refused]
        else:
            placed = iter(records)
            return [[next(placed) for write in a.writes for _ in write.records] for a in appends]
    arguments = _batch_arguments(appends)
    if not projections:
        return _batch_results(appends, await conn.fetch(_CALL_APPEND_BATCH, *arguments))
    async with conn.transaction():
        results = _batch_results(appends, await conn.fetch(_CALL_APPEND_BATCH, *arguments))
        await apply_projections(
            conn, projections, [record for result in results if isinstance(result, list) for record in result]
        )
    return results


async def append_writes(
    conn: Any,
    writes: Sequence[EncodedWrite],
    projections: Sequence[Projection],
    changes: EncodedChanges | None = None,
    fence: LeaseFence | None = None,
) -> list[Record]:
    """Append through `ledger_append` (or `ledger_append_guarded` with due-work changes or a fence):
    alone (one round trip) without projections or marks, else in a transaction with the projections' row
    changes and the marks of entries fired (`changes.fire`, after the guarded append checked the fence)."""
    marks = changes.fire if changes is not None else []
    if not projections and not marks:
        return await _call_append(conn, writes, changes, fence)
    async with conn.transaction():
        appended = await _call_append(conn, writes, changes, fence)
        if marks:
            await mark_in_transaction(conn, marks)
        await apply_projections(conn, projections, appended)
    return appended


def _stream(write: EncodedWrite) -> str:
    return write.stream


async def append_with_retry(
    conn: Any,
    writes: Sequence[EncodedWrite],
    projections: Sequence[Projection],
    changes: EncodedChanges | None = None,
    fence: LeaseFence | None = None,
) -> list[Record]:
    """`append_writes`, run again when PostgreSQL ended it to break a deadlock (projection rows
    locked in different orders by concurrent appends); the failed attempt wrote nothing."""
    attempt = 1
    while True:
        try:
            return await append_writes(conn, writes, projections, changes, fence)
        except asyncpg.DeadlockDetectedError:
            if attempt >= DEADLOCK_RETRIES:
                raise
            attempt += 1


_ARRAY_TYPES = {"text": "text[]", "integer": "bigint[]", "real": "double precision[]", "json": "text[]"}


def _select_rows_sql(projection: Projection) -> str:
    """Select the rows of many keys at once: one array parameter per key column."""
    table = projection.table
    arrays = ", ".join(
        f"${number}::{_ARRAY_TYPES[table.columns[column]]}" for number, column in enumerate(table.primary_key, start=1)
    )
    return (
        f"SELECT {', '.join(table.columns)} FROM {table.name} "
        f"WHERE ({', '.join(table.primary_key)}) IN (SELECT * FROM unnest({arrays}))"
    )


_LOCK_KEYS = "SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0))) FROM unnest($1::text[]) AS k"
"""Take the transaction-level advisory locks of many row keys, in the order given (the caller sorts them)."""


async def apply_projections(
    conn: Any, projections: Sequence[Projection], records: Sequence[Record], lock_rows: bool = True
) -> None:
    """Apply the records to each projection, in order, folded per row (inside the caller's transaction):
    each row the records touch is read once and written once (`projections.fold`), with a few round trips
    per projection, not several per record and row.

    With `lock_rows`, every row's key is first locked with a transaction-level advisory lock (all keys of
    the call in one sorted order, so two appends cannot wait for each other's rows), so concurrent appends
    (in any process) that touch one row apply their changes one after the other: the read after the lock
    sees the other append's committed row (READ COMMITTED takes a snapshot per statement), and a row that
    does not exist yet cannot be created twice from nothing. A rebuild, which owns its new table until it
    commits, needs no row locks.
    """
    folds = [(projection, touched) for projection in projections if (touched := touches(projection, records))]
    if lock_rows and folds:
        names = sorted(
            {json_text.dumps([p.table.name, *key]) for p, touched in folds for key in distinct_keys(touched)}
        )
        await conn.fetchval(_LOCK_KEYS, names)
    for projection, touched in folds:
        table = projection.table
        keys = distinct_keys(touched)
        width = len(table.primary_key)
        found = await conn.fetch(_select_rows_sql(projection), *([key[n] for key in keys] for n in range(width)))
        stored: dict[ProjectionKey, dict[str, Any] | None] = dict.fromkeys(keys)
        for row in found:
            stored[tuple(row[column] for column in table.primary_key)] = dict(row)
        changes = fold(projection, touched, stored)
        upserts = [change.values for _, change in changes if isinstance(change, Upsert)]
        deletes = [key for key, change in changes if isinstance(change, Delete)]
        if upserts:
            await conn.executemany(to_numbered(table.upsert_sql), upserts)
        if deletes:
            await conn.executemany(to_numbered(table.delete_sql), deletes)


def _record(row: Any) -> Record:
    return decode_record(
        row["id"],
        row["stream"],
        int(row["position"]),
        int(row["global_position"]),
        row["type"],
        row["data"],
        row["metadata"],
        int(row["recorded_at"]),
    )


async def read_stream(conn: Any, stream: str, from_position: int, limit: int | None) -> list[Record]:
    rows = await conn.fetch(
        f"SELECT {RECORD_COLUMNS} FROM ledger_records WHERE stream = $1 AND position >= $2 ORDER BY position LIMIT $3",
        stream,
        from_position,
        limit,
    )
    return [_record(row) for row in rows]


async def stream_version(conn: Any, stream: str) -> int:
    version = await conn.fetchval("SELECT version FROM ledger_streams WHERE stream = $1", stream)
    return 0 if version is None else int(version)


async def read_record(conn: Any, scope_key: str, record_id: str) -> Record | None:
    row = await conn.fetchrow(
        f"SELECT {RECORD_COLUMNS} FROM ledger_records WHERE id = $1 AND scope_key = $2", record_id, scope_key
    )
    return None if row is None else _record(row)


async def scan(
    conn: Any,
    scope_key: str,
    order: Order,
    after: SortKey | None,
    correlation_id: str | None,
    types: list[str] | None,
    since_us: int | None,
    size: int,
) -> list[ScanRow]:
    """Look at up to `size` of the scope's records in `(tx_id, global_position)` order; oldest-first
    scans stop at the horizon."""
    match: list[str] = []
    params: list[Any] = []
    if types:
        match.append("type = ANY(?::text[])")
        params.append(types)
    if since_us is not None:
        match.append("recorded_at >= ?")
        params.append(since_us)
    where = ["scope_key = ?"]
    params.append(scope_key)
    if correlation_id is not None:
        where.append("correlation_id = ?")
        params.append(correlation_id)
    if after is not None:
        where.append("(tx_id, global_position) " + (">" if order == "asc" else "<") + " (?, ?)")
        params.extend(after)
    if order == "asc":
        where.append(f"tx_id < {HORIZON}")
    direction = "ASC" if order == "asc" else "DESC"
    params.append(size)
    sql = (
        f"SELECT tx_id, global_position, {' AND '.join(match) if match else 'true'} AS matches, size "
        f"FROM ledger_records WHERE {' AND '.join(where)} "
        f"ORDER BY tx_id {direction}, global_position {direction} LIMIT ?"
    )
    rows = await conn.fetch(to_numbered(sql), *params)
    return [
        ScanRow(
            key=(int(row["tx_id"]), int(row["global_position"])),
            matches=bool(row["matches"]),
            size=int(row["size"]),
        )
        for row in rows
    ]


async def load(conn: Any, keys: Sequence[SortKey]) -> list[Record]:
    positions = [key[1] for key in keys]
    rows = await conn.fetch(
        f"SELECT {RECORD_COLUMNS} FROM ledger_records WHERE global_position = ANY($1::bigint[])", positions
    )
    by_position = {int(row["global_position"]): _record(row) for row in rows}
    return [by_position[position] for position in positions]


async def read_forward(conn: Any, after: SortKey | None, limit: int) -> list[tuple[SortKey, Record]]:
    start = after if after is not None else (-1, -1)
    rows = await conn.fetch(
        f"SELECT tx_id, {RECORD_COLUMNS} FROM ledger_records "
        f"WHERE (tx_id, global_position) > ($1, $2) AND tx_id < {HORIZON} "
        "ORDER BY tx_id, global_position LIMIT $3",
        start[0],
        start[1],
        limit,
    )
    return [((int(row["tx_id"]), int(row["global_position"])), _record(row)) for row in rows]


async def fetch(conn: Any, sql: str, params: Sequence[Any]) -> list[dict[str, Any]]:
    """One statement in a read-only transaction, `?` placeholders numbered for asyncpg."""
    async with conn.transaction(readonly=True):
        rows = await conn.fetch(to_numbered(sql), *params)
    return [dict(row) for row in rows]


async def put_content(conn: Any, scope_key: str, digest: str, chunks: Sequence[bytes]) -> None:
    """Keep content's chunks unless the scope already holds that digest (concurrent puts: one wins)."""
    async with conn.transaction():
        claimed = await conn.fetchval(
            "INSERT INTO ledger_content (scope_key, sha256, size, location) VALUES ($1, $2, $3, 'ledger') "
            "ON CONFLICT DO NOTHING RETURNING 1",
            scope_key,
            digest,
            sum(len(chunk) for chunk in chunks),
        )
        if claimed is None:
            return
        await conn.executemany(
            "INSERT INTO ledger_content_chunks (scope_key, sha256, chunk, bytes) VALUES ($1, $2, $3, $4)",
            [(scope_key, digest, number, chunk) for number, chunk in enumerate(chunks)],
        )


async def put_spooled_content(conn: Any, scope_key: str, spooled: SpooledContent) -> None:
    """`put_content` of spooled bytes, each chunk read in a worker thread of the loop and inserted in turn; a
    `ContentMismatch` after the last chunk rolls the row and its chunks back."""
    loop = asyncio.get_running_loop()
    check = ChunkCheck(spooled)
    async with conn.transaction():
        claimed = await conn.fetchval(
            "INSERT INTO ledger_content (scope_key, sha256, size, location) VALUES ($1, $2, $3, 'ledger') "
            "ON CONFLICT DO NOTHING RETURNING 1",
            scope_key,
            spooled.sha256,
            spooled.size,
        )
        if claimed is None:
            return
        for number in range(spooled.chunk_count):
            chunk = check.add(await loop.run_in_executor(None, spooled.chunk, number))
            await conn.execute(
                "INSERT INTO ledger_content_chunks (scope_key, sha256, chunk, bytes) VALUES ($1, $2, $3, $4)",
                scope_key,
                spooled.sha256,
                number,
                chunk,
            )
        check.finish()


async def drop_content(conn: Any, scope_key: str) -> list[str]:
    """Delete the scope's content rows and chunks; the locations of rows kept elsewhere."""
    async with conn.transaction():
        await conn.execute("DELETE FROM ledger_content_chunks WHERE scope_key = $1", scope_key)
        rows = await conn.fetch("DELETE FROM ledger_content WHERE scope_key = $1 RETURNING location", scope_key)
    return [str(row["location"]) for row in rows if row["location"] != LOCATION_LEDGER]


async def put_content_reference(conn: Any, scope_key: str, digest: str, size: int, location: str) -> None:
    """Keep a content row whose bytes are at `location`, unless the scope already holds that digest."""
    await conn.execute(
        "INSERT INTO ledger_content (scope_key, sha256, size, location) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
        scope_key,
        digest,
        size,
        location,
    )


async def get_content(conn: Any, scope_key: str, digest: str) -> KeptContent | None:
    """The content row, with its bytes when the ledger keeps them."""
    async with conn.transaction(readonly=True, isolation="repeatable_read"):
        row = await conn.fetchrow(
            "SELECT location, size FROM ledger_content WHERE scope_key = $1 AND sha256 = $2", scope_key, digest
        )
        if row is None:
            return None
        if row["location"] != LOCATION_LEDGER:
            return KeptContent(row["location"], int(row["size"]), None)
        rows = await conn.fetch(
            "SELECT bytes FROM ledger_content_chunks WHERE scope_key = $1 AND sha256 = $2 ORDER BY chunk",
            scope_key,
            digest,
        )
    return KeptContent(row["location"], int(row["size"]), b"".join(bytes(chunk["bytes"]) for chunk in rows))
