"""The SQLite store's SQL: appends and projections (writer thread) and reads (reader connections).

Every function takes a connection and runs synchronously on the thread that owns it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..content import LOCATION_LEDGER, KeptContent, SpooledContent
from ..due_work import EncodedChanges
from ..errors import DuplicateRecordIdError, VersionConflict
from ..lease import LeaseFence, LeaseLost
from ..ledger import EncodedWrite
from ..paging import Order, ScanRow, SortKey
from ..projections import Delete, Projection, ProjectionKey, Upsert, distinct_keys, fold, touches
from ..records import EncodedRecord, Record, decode_record, record_from_encoded
from . import due_work_statements, lease_statements

RECORD_COLUMNS = "id, stream, position, global_position, type, data, metadata, recorded_at"


def _record_values(record: EncodedRecord, position: int) -> tuple[Any, ...]:
    """A record's columns after `global_position`, in the order the INSERT statements name them."""
    return (
        record.id,
        record.stream,
        position,
        record.scope_key,
        record.type,
        record.data,
        record.metadata,
        record.correlation_id,
        record.size,
        record.recorded_at_us,
    )


_STREAM_VERSION = "SELECT coalesce(max(position), 0) FROM ledger_records WHERE stream = ?"
"""A stream's version: its records are numbered 1, 2, ... and never removed, so the version is the largest
position, one search of `ledger_records_stream` (SQLite keeps no table of versions: see migration 4)."""


def append_writes(
    conn: sqlite3.Connection, writes: Sequence[EncodedWrite], projections: Sequence[Projection]
) -> list[Record]:
    """Check versions, insert the records (which moves the streams' versions), apply the projections.

    Runs inside the writer's transaction (within a savepoint of its own); raising undoes it all.
    """
    appended: list[Record] = []
    for write in writes:
        (current,) = conn.execute(_STREAM_VERSION, (write.stream,)).fetchone()
        if write.expected is not None and current != write.expected:
            raise VersionConflict(write.stream, write.expected)
        for position, record in enumerate(write.records, start=current + 1):
            try:
                cursor = conn.execute(
                    "INSERT INTO ledger_records (id, stream, position, scope_key, type, data, metadata, "
                    "correlation_id, size, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    _record_values(record, position),
                )
            except sqlite3.IntegrityError as error:
                raise DuplicateRecordIdError(record.id) from error
            global_position = cursor.lastrowid
            assert global_position is not None
            appended.append(record_from_encoded(record, position, global_position))
    apply_projections(conn, projections, appended)
    return appended


_INSERT_RECORD = (
    "INSERT INTO ledger_records (global_position, id, stream, position, scope_key, type, data, metadata, "
    "correlation_id, size, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_MAX_PARAMETERS = 500


def _versions(conn: sqlite3.Connection, streams: Sequence[str]) -> dict[str, int]:
    """The versions of `streams` that exist, in one statement per `_MAX_PARAMETERS` streams (each version one
    search of `ledger_records_stream`, as `_STREAM_VERSION`)."""
    versions: dict[str, int] = {}
    for start in range(0, len(streams), _MAX_PARAMETERS):
        chunk = streams[start : start + _MAX_PARAMETERS]
        rows = conn.execute(
            f"WITH wanted (stream) AS (VALUES {', '.join('(?)' for _ in chunk)}) "
            "SELECT stream, (SELECT max(position) FROM ledger_records AS r WHERE r.stream = wanted.stream) "
            "FROM wanted",
            chunk,
        )
        versions.update((stream, int(version)) for stream, version in rows if version is not None)
    return versions


@dataclass(frozen=True, slots=True)
class Append:
    """One append for the writer: its writes (validated and encoded), and for a guarded append its due-work
    changes and the lease fence it is conditional on (see `Ledger.append`)."""

    writes: list[EncodedWrite]
    changes: EncodedChanges | None = None
    fence: LeaseFence | None = None


def append_one(conn: sqlite3.Connection, append: Append, projections: Sequence[Projection]) -> list[Record]:
    """One append statement by statement: its fence checked first, its due-work changes applied after its
    records (inside the writer's transaction, in a savepoint of its own; raising undoes it all)."""
    if append.fence is not None:
        lease_statements.check_fence(conn, append.fence)
    appended = append_writes(conn, append.writes, projections)
    if append.changes is not None:
        due_work_statements.apply_changes(conn, append.changes)
    return appended


def _refusal(conn: sqlite3.Connection, append: Append, versions: dict[str, int]) -> VersionConflict | LeaseLost | None:
    """Why `append` cannot commit after what the batch accepted before it (None when it can)."""
    clash = next((w for w in append.writes if w.expected is not None and versions.get(w.stream, 0) != w.expected), None)
    if clash is not None:
        return VersionConflict(clash.stream, clash.expected)
    if append.fence is not None:
        try:
            lease_statements.check_fence(conn, append.fence)
        except LeaseLost as lost:
            return lost
    return None


def append_batch(
    conn: sqlite3.Connection, appends: Sequence[Append], projections: Sequence[Projection]
) -> list[list[Record] | VersionConflict | LeaseLost]:
    """Several appends (guarded ones too) in a few statements, for the writer's fast path; returns each
    append's records, or its `VersionConflict` or `LeaseLost` (that append alone writes nothing), in order.

    Correct only on the one writer's connection: versions are read once and then decided in memory,
    global positions continue from the largest one recorded, and no other unit runs between the appends
    of a batch (so a fence checked at its append still holds at the commit). Each accepted append's
    due-work changes are applied in order. Raises (and the writer undoes it all) on a duplicate record id
    or a projection error.
    """
    versions = _versions(conn, sorted({write.stream for append in appends for write in append.writes}))
    (last,) = conn.execute("SELECT coalesce(max(global_position), 0) FROM ledger_records").fetchone()
    next_global = int(last) + 1
    results: list[list[Record] | VersionConflict | LeaseLost] = []
    rows: list[tuple[Any, ...]] = []
    for append in appends:
        refusal = _refusal(conn, append, versions)
        if refusal is not None:
            results.append(refusal)
            continue
        appended: list[Record] = []
        for write in append.writes:
            current = versions.get(write.stream, 0)
            for position, record in enumerate(write.records, start=current + 1):
                rows.append((next_global, *_record_values(record, position)))
                appended.append(record_from_encoded(record, position, next_global))
                next_global += 1
            versions[write.stream] = current + len(write.records)
        if append.changes is not None:
            due_work_statements.apply_changes(conn, append.changes)
        results.append(appended)
    conn.executemany(_INSERT_RECORD, rows)
    apply_projections(
        conn, projections, [record for result in results if isinstance(result, list) for record in result]
    )
    return results


def apply_projections(conn: sqlite3.Connection, projections: Sequence[Projection], records: Sequence[Record]) -> None:
    """Apply the records to each projection, in order, folded per row (`projections.fold`): each row the
    records touch is read once and written once."""
    for projection in projections:
        touched = touches(projection, records)
        if not touched:
            continue
        table = projection.table
        stored: dict[ProjectionKey, dict[str, Any] | None] = {}
        for key in distinct_keys(touched):
            found = conn.execute(table.select_sql, key).fetchone()
            stored[key] = dict(zip(table.columns, found, strict=True)) if found is not None else None
        changes = fold(projection, touched, stored)
        conn.executemany(table.upsert_sql, [change.values for _, change in changes if isinstance(change, Upsert)])
        conn.executemany(table.delete_sql, [key for key, change in changes if isinstance(change, Delete)])


def read_stream(conn: sqlite3.Connection, stream: str, from_position: int, limit: int | None) -> list[Record]:
    rows = conn.execute(
        f"SELECT {RECORD_COLUMNS} FROM ledger_records WHERE stream = ? AND position >= ? ORDER BY position LIMIT ?",
        (stream, from_position, -1 if limit is None else limit),
    ).fetchall()
    return [decode_record(*row) for row in rows]


def stream_version(conn: sqlite3.Connection, stream: str) -> int:
    (version,) = conn.execute(_STREAM_VERSION, (stream,)).fetchone()
    return int(version)


def read_record(conn: sqlite3.Connection, scope_key: str, record_id: str) -> Record | None:
    row = conn.execute(
        f"SELECT {RECORD_COLUMNS} FROM ledger_records WHERE id = ? AND scope_key = ?", (record_id, scope_key)
    ).fetchone()
    return None if row is None else decode_record(*row)


def scan(
    conn: sqlite3.Connection,
    scope_key: str,
    order: Order,
    after: SortKey | None,
    correlation_id: str | None,
    types: list[str] | None,
    since_us: int | None,
    size: int,
) -> list[ScanRow]:
    """Look at up to `size` of the scope's records in global-position order (the commit order here)."""
    where = ["scope_key = ?"]
    params: list[Any] = []
    match: list[str] = []
    if types:
        match.append(f"type IN ({', '.join('?' for _ in types)})")
        params.extend(types)
    if since_us is not None:
        match.append("recorded_at >= ?")
        params.append(since_us)
    params.append(scope_key)
    if correlation_id is not None:
        where.append("correlation_id = ?")
        params.append(correlation_id)
    if after is not None:
        where.append("global_position > ?" if order == "asc" else "global_position < ?")
        params.append(after[1])
    params.append(size)
    sql = (
        f"SELECT global_position, {' AND '.join(match) if match else '1'}, size FROM ledger_records "
        f"WHERE {' AND '.join(where)} ORDER BY global_position {order.upper()} LIMIT ?"
    )
    return [
        ScanRow(key=(position, position), matches=bool(matches), size=stored)
        for position, matches, stored in conn.execute(sql, params).fetchall()
    ]


def load(conn: sqlite3.Connection, keys: Sequence[SortKey]) -> list[Record]:
    positions = [key[1] for key in keys]
    rows = conn.execute(
        f"SELECT {RECORD_COLUMNS} FROM ledger_records WHERE global_position IN ({', '.join('?' for _ in positions)})",
        positions,
    ).fetchall()
    by_position = {row[3]: decode_record(*row) for row in rows}
    return [by_position[position] for position in positions]


def read_forward(conn: sqlite3.Connection, after: SortKey | None, limit: int) -> list[tuple[SortKey, Record]]:
    rows = conn.execute(
        f"SELECT {RECORD_COLUMNS} FROM ledger_records WHERE global_position > ? ORDER BY global_position LIMIT ?",
        (0 if after is None else after[1], limit),
    ).fetchall()
    return [((row[3], row[3]), decode_record(*row)) for row in rows]


def fetch(conn: sqlite3.Connection, sql: str, params: Sequence[Any]) -> list[dict[str, Any]]:
    """One read-only statement's rows as dicts (the reader connections are `query_only`)."""
    cursor = conn.execute(sql, params)
    names = [column[0] for column in cursor.description or ()]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def put_content(conn: sqlite3.Connection, scope_key: str, digest: str, chunks: Sequence[bytes]) -> None:
    """Keep content's chunks unless the scope already holds that digest (writer thread)."""
    if conn.execute("SELECT 1 FROM ledger_content WHERE scope_key = ? AND sha256 = ?", (scope_key, digest)).fetchone():
        return
    conn.execute(
        "INSERT INTO ledger_content (scope_key, sha256, size, location) VALUES (?, ?, ?, 'ledger')",
        (scope_key, digest, sum(len(chunk) for chunk in chunks)),
    )
    conn.executemany(
        "INSERT INTO ledger_content_chunks (scope_key, sha256, chunk, bytes) VALUES (?, ?, ?, ?)",
        [(scope_key, digest, number, chunk) for number, chunk in enumerate(chunks)],
    )


def put_spooled_content(conn: sqlite3.Connection, scope_key: str, spooled: SpooledContent) -> None:
    """`put_content` of spooled bytes, read a chunk at a time (writer thread, inside its transaction: a
    `ContentMismatch` after the last chunk rolls the row and its chunks back)."""
    digest = spooled.sha256
    if conn.execute("SELECT 1 FROM ledger_content WHERE scope_key = ? AND sha256 = ?", (scope_key, digest)).fetchone():
        return
    conn.execute(
        "INSERT INTO ledger_content (scope_key, sha256, size, location) VALUES (?, ?, ?, 'ledger')",
        (scope_key, digest, spooled.size),
    )
    for number, chunk in enumerate(spooled.checked_chunks()):
        conn.execute(
            "INSERT INTO ledger_content_chunks (scope_key, sha256, chunk, bytes) VALUES (?, ?, ?, ?)",
            (scope_key, digest, number, chunk),
        )


def drop_content(conn: sqlite3.Connection, scope_key: str) -> list[str]:
    """Delete the scope's content rows and chunks (writer thread); the locations of rows kept elsewhere."""
    locations = [
        str(row[0])
        for row in conn.execute(
            "SELECT location FROM ledger_content WHERE scope_key = ? AND location <> 'ledger'", (scope_key,)
        )
    ]
    conn.execute("DELETE FROM ledger_content_chunks WHERE scope_key = ?", (scope_key,))
    conn.execute("DELETE FROM ledger_content WHERE scope_key = ?", (scope_key,))
    return locations


def put_content_reference(conn: sqlite3.Connection, scope_key: str, digest: str, size: int, location: str) -> None:
    """Keep a content row whose bytes are at `location`, unless the scope already holds that digest (writer
    thread)."""
    conn.execute(
        "INSERT INTO ledger_content (scope_key, sha256, size, location) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (scope_key, sha256) DO NOTHING",
        (scope_key, digest, size, location),
    )


def get_content(conn: sqlite3.Connection, scope_key: str, digest: str) -> KeptContent | None:
    """The content row, with its bytes when the ledger keeps them (reader thread). A row and its chunks are
    committed together and never change, so the two reads agree without a transaction."""
    row = conn.execute(
        "SELECT location, size FROM ledger_content WHERE scope_key = ? AND sha256 = ?", (scope_key, digest)
    ).fetchone()
    if row is None:
        return None
    location, size = str(row[0]), int(row[1])
    if location != LOCATION_LEDGER:
        return KeptContent(location, size, None)
    rows = conn.execute(
        "SELECT bytes FROM ledger_content_chunks WHERE scope_key = ? AND sha256 = ? ORDER BY chunk",
        (scope_key, digest),
    ).fetchall()
    return KeptContent(location, size, b"".join(bytes(chunk[0]) for chunk in rows))
