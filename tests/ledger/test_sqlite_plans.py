"""Every statement the SQLite store runs against its records searches an index (issue 16).

The store's read statements (and the reads of its append path) run on a connection that records each
statement with its parameters; each is then explained (`EXPLAIN QUERY PLAN` with the same parameters), and a
full scan of `ledger_records` (a `SCAN` step, with or without an index) fails the test.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import pytest
import trio

from auto_runtime.ledger import NewRecord, OrgScope, PlaybookScope, StreamWrite, open_ledger
from auto_runtime.ledger.ledger import EncodedWrite
from auto_runtime.ledger.records import encode_record
from auto_runtime.ledger.sqlite import statements
from auto_runtime.ledger.sqlite.schema import connect_writer

ACME = PlaybookScope("acme", "finance")
GLOBEX = PlaybookScope("globex", "ops")
ACME_ORG = OrgScope("acme")
TABLE = "ledger_records"


class Recording:
    """A connection that keeps each statement run on it, with its (first row of) parameters."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.seen: list[tuple[str, Sequence[Any]]] = []

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        self.seen.append((sql, params))
        return self.conn.execute(sql, params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> sqlite3.Cursor:
        rows = list(rows)
        if rows:
            self.seen.append((sql, rows[0]))
        return self.conn.executemany(sql, rows)


def plan(conn: sqlite3.Connection, sql: str, params: Sequence[Any]) -> list[str]:
    return [str(row[3]) for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params)]


async def fill(path: Path) -> None:
    """Records in several streams and scopes, with and without a correlation id."""
    async with open_ledger(ledger_file=path) as ledger:
        for number in range(40):
            run = f"run-{number % 5}"
            await ledger.append(
                [
                    StreamWrite(
                        ACME.stream("runs", run),
                        number // 5,
                        [NewRecord("step_done", {"n": number}, {"correlation_id": run})],
                    ),
                    StreamWrite(GLOBEX.stream("mirror", run), number // 5, [NewRecord("mirrored", {"n": number})]),
                    StreamWrite(ACME_ORG.stream("playbooks"), number, [NewRecord("playbook_saved", {})]),
                ]
            )


@pytest.fixture
def recording(tmp_path: Path) -> Iterator[Recording]:
    path = tmp_path / "ledger.db"
    trio.run(fill, path)
    conn = connect_writer(str(path))
    try:
        yield Recording(conn)
    finally:
        conn.close()


def reads(conn: sqlite3.Connection) -> None:
    """Every read statement of the store, in each of its shapes."""
    some = statements.read_stream(conn, ACME.stream("runs", "run-1"), 1, None)
    assert some
    statements.read_stream(conn, ACME.stream("runs", "run-1"), 3, 2)
    statements.stream_version(conn, ACME.stream("runs", "run-1"))
    statements.read_record(conn, ACME.key, some[0].id)
    after = (some[2].global_position, some[2].global_position)
    for order in ("asc", "desc"):
        for correlation in (None, "run-1"):
            for key in (None, after):
                statements.scan(conn, ACME.key, order, key, correlation, None, None, 10)
                statements.scan(conn, ACME.key, order, key, correlation, ["step_done", "x"], 1, 10)
    statements.load(conn, [(record.global_position, record.global_position) for record in some])
    statements.read_forward(conn, None, 10)
    statements.read_forward(conn, after, 10)


def appends(conn: sqlite3.Connection) -> None:
    """The append paths (fast and one by one), rolled back afterwards."""
    writes = [
        EncodedWrite(
            stream,
            expected,
            [encode_record(stream, NewRecord("step_done", {}, {"correlation_id": "run-1"}), 1)],
        )
        for stream, expected in ((ACME.stream("runs", "run-1"), 8), (ACME.stream("runs", "run-9"), 0))
    ]
    conn.execute("BEGIN IMMEDIATE")
    try:
        statements.append_batch(conn, [statements.Append(writes[:1]), statements.Append(writes[1:])], ())
        mirror = GLOBEX.stream("mirror", "run-2")
        one = EncodedWrite(mirror, None, [encode_record(mirror, NewRecord("mirrored", {}), 1)])
        statements.append_writes(conn, [one], ())
    finally:
        conn.execute("ROLLBACK")


def full_scans(conn: sqlite3.Connection, sql: str, params: Sequence[Any]) -> list[str]:
    """The steps of the statement's plan that scan `ledger_records` whole, under its name or an alias."""
    names = {TABLE, *re.findall(rf"\b{TABLE}\s+AS\s+(\w+)", sql, re.IGNORECASE)}
    return [step for step in plan(conn, sql, params) if step.split(" ")[:2] in [["SCAN", name] for name in names]]


def test_every_read_of_records_searches_an_index(recording: Recording) -> None:
    assert full_scans(recording.conn, f"SELECT count(*) FROM {TABLE} AS r WHERE r.type = ?", ["x"]) == ["SCAN r"]
    reads(cast(sqlite3.Connection, recording))
    appends(cast(sqlite3.Connection, recording))
    touching = {sql: params for sql, params in recording.seen if TABLE in sql}
    assert len(touching) >= 15
    assert {sql: scans for sql, params in touching.items() if (scans := full_scans(recording.conn, sql, params))} == {}


def test_the_correlated_page_searches_the_partial_correlation_index(recording: Recording) -> None:
    conn = cast(sqlite3.Connection, recording)
    rows = statements.scan(conn, ACME.key, "desc", None, "run-1", None, None, 50)
    assert len(rows) == 8
    statements.scan(conn, ACME.key, "desc", None, None, None, None, 50)
    (correlated, _), (scoped, params) = recording.seen
    assert any("USING INDEX ledger_records_correlation" in step for step in plan(recording.conn, correlated, _))
    assert any("USING INDEX ledger_records_scope" in step for step in plan(recording.conn, scoped, params))
    (sql,) = recording.conn.execute(
        "SELECT sql FROM sqlite_master WHERE name = 'ledger_records_correlation'"
    ).fetchone()
    assert sql.endswith("WHERE correlation_id IS NOT NULL")
