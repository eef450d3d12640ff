"""Projections: tables kept by the ledger inside each append's transaction.

A `Projection` names a table (`TableSpec`) and two pure functions. For every record appended,
`keys(record)` lists the primary keys of the rows the record touches (often none), and for each
`row_after(row, record)` receives the current row (a dict of column to value, `json` columns decoded,
or None when there is none) and returns the row after the record (a dict; missing columns are NULL
and key columns are set from the key) or None to delete it. Both functions run inside the append's
transaction and must not raise: an exception fails the append that triggered it (only that one),
and the caller sees the exception. They run on the store's own thread (the SQLite writer, the
PostgreSQL asyncio thread), never in Trio: keep them pure and quick, with no I/O. Values must suit
their column types (`str`, `int`, `float`, any JSON value for `json`), since PostgreSQL checks them.

Projections are registered when the ledger opens. The ledger keeps each projection's version in
`ledger_projections`; a projection whose table is new or whose stored version differs is rebuilt
from the whole history in one transaction on open (dropped, created and refilled), on PostgreSQL
under an advisory lock so servers starting together rebuild once.

Column types are `text`, `integer`, `real` and `json` (kept as JSON text, see `json_text`). A projection
table is read through its query object (`queries`, `Ledger.queries`), which runs its SQL with `Ledger._select`;
decode the rows it answers with `Projection.decode_row`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from . import json_text
from .records import Record

ColumnType = Literal["text", "integer", "real", "json"]
Dialect = Literal["sqlite", "postgres"]
ProjectionKey = tuple[Any, ...]
Row = dict[str, Any]

_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,47}")
_SQL_TYPES: dict[Dialect, dict[ColumnType, str]] = {
    "sqlite": {"text": "TEXT", "integer": "INTEGER", "real": "REAL", "json": "TEXT"},
    "postgres": {"text": "text", "integer": "bigint", "real": "double precision", "json": "text"},
}


def _identifier(name: str) -> str:
    if not _IDENTIFIER.fullmatch(name) or name.startswith("ledger_"):
        raise ValueError(f"invalid projection identifier {name!r} (lower-case, not starting with ledger_)")
    return name


@dataclass(frozen=True, slots=True)
class TableSpec:
    """A projection table: ordered columns with their types, a primary key and secondary indexes."""

    name: str
    columns: Mapping[str, ColumnType]
    primary_key: tuple[str, ...]
    indexes: tuple[tuple[str, ...], ...] = ()

    def __post_init__(self) -> None:
        _identifier(self.name)
        for column, kind in self.columns.items():
            _identifier(column)
            if kind not in _SQL_TYPES["sqlite"]:
                raise ValueError(f"column {column!r} has unknown type {kind!r}")
        if not self.primary_key:
            raise ValueError("a projection table needs a primary key")
        for columns in (self.primary_key, *self.indexes):
            for column in columns:
                if column not in self.columns:
                    raise ValueError(f"{column!r} is not a column of {self.name!r}")

    def create_statements(self, dialect: Dialect) -> list[str]:
        """DDL that creates the table and its indexes."""
        types = _SQL_TYPES[dialect]
        columns = ", ".join(f"{name} {types[kind]}" for name, kind in self.columns.items())
        statements = [f"CREATE TABLE {self.name} ({columns}, PRIMARY KEY ({', '.join(self.primary_key)}))"]
        for number, index in enumerate(self.indexes):
            statements.append(f"CREATE INDEX {self.name}_i{number} ON {self.name} ({', '.join(index)})")
        return statements

    @property
    def select_sql(self) -> str:
        """Select one row by primary key (`?` placeholders)."""
        where = " AND ".join(f"{column} = ?" for column in self.primary_key)
        return f"SELECT {', '.join(self.columns)} FROM {self.name} WHERE {where}"

    @property
    def upsert_sql(self) -> str:
        """Insert or replace one row (`?` placeholders, values in column order)."""
        names = list(self.columns)
        placeholders = ", ".join("?" for _ in names)
        others = [name for name in names if name not in self.primary_key]
        conflict = f"ON CONFLICT ({', '.join(self.primary_key)}) DO "
        conflict += "UPDATE SET " + ", ".join(f"{name} = excluded.{name}" for name in others) if others else "NOTHING"
        return f"INSERT INTO {self.name} ({', '.join(names)}) VALUES ({placeholders}) {conflict}"

    @property
    def delete_sql(self) -> str:
        """Delete one row by primary key (`?` placeholders)."""
        where = " AND ".join(f"{column} = ?" for column in self.primary_key)
        return f"DELETE FROM {self.name} WHERE {where}"


@dataclass(frozen=True, slots=True)
class Upsert:
    """Write this row (values in column order, `json` columns encoded)."""

    values: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Delete:
    """Delete the row with this key."""


RowChange = Upsert | Delete | None


@dataclass(frozen=True, slots=True)
class Projection:
    """A table kept inside each append's transaction; see the module docstring for the rules."""

    name: str
    version: int
    table: TableSpec
    keys: Callable[[Record], Sequence[ProjectionKey]]
    row_after: Callable[[Row | None, Record], Row | None]
    _json_columns: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _identifier(self.name)
        if isinstance(self.version, bool) or not isinstance(self.version, int) or self.version < 1:
            raise ValueError("a projection version is an int >= 1")
        json_columns = frozenset(name for name, kind in self.table.columns.items() if kind == "json")
        object.__setattr__(self, "_json_columns", json_columns)

    def checked_key(self, key: ProjectionKey) -> ProjectionKey:
        """`key` as a tuple matching the primary key; `ValueError` otherwise."""
        if not isinstance(key, tuple) or len(key) != len(self.table.primary_key):
            raise ValueError(f"projection {self.name!r}: a key is a tuple of {self.table.primary_key}")
        return key

    def decode_row(self, row: Mapping[str, Any]) -> Row:
        """A stored row as `row_after` and readers see it: `json` columns decoded."""
        return {
            name: json_text.loads(value) if name in self._json_columns and value is not None else value
            for name, value in row.items()
        }

    def change(self, key: ProjectionKey, stored: Mapping[str, Any] | None, record: Record) -> RowChange:
        """The change `record` makes to the row under `key` (`stored` as read from the table)."""
        before = self.decode_row(stored) if stored is not None else None
        after = self.row_after(before, record)
        if after is None:
            return Delete() if stored is not None else None
        unknown = set(after) - set(self.table.columns)
        if unknown:
            raise ValueError(f"projection {self.name!r} returned unknown columns {sorted(unknown)}")
        for column, value in zip(self.table.primary_key, key, strict=True):
            if column in after and after[column] != value:
                raise ValueError(f"projection {self.name!r} changed key column {column!r}")
        full = {name: after.get(name) for name in self.table.columns}
        full.update(zip(self.table.primary_key, key, strict=True))
        if before is not None and full == before:
            return None
        values = tuple(
            json_text.dumps(value) if name in self._json_columns and value is not None else value
            for name, value in full.items()
        )
        return Upsert(values)


Touch = tuple[ProjectionKey, Record]
"""A record and the key of one row it touches, in the order the record changes it."""


def touches(projection: Projection, records: Sequence[Record]) -> list[Touch]:
    """Every row key each record touches, checked, in record order (what `fold` applies)."""
    return [(projection.checked_key(raw), record) for record in records for raw in projection.keys(record)]


def distinct_keys(touched: Sequence[Touch]) -> list[ProjectionKey]:
    """The keys of `touched`, each once, in the order first touched: the rows a store reads before `fold`."""
    return list(dict.fromkeys(key for key, _ in touched))


def fold(
    projection: Projection, touched: Sequence[Touch], stored: Mapping[ProjectionKey, Mapping[str, Any] | None]
) -> list[tuple[ProjectionKey, Upsert | Delete]]:
    """The net change of every row `touched` changes, from each record's change applied in order in memory.

    `stored` holds each key's row as read from the table (None when there is none), read once per key
    however many records touch it; the result is one write per key (an `Upsert` of its last values, or a
    `Delete` of a row that was stored), in the order first touched. Equal to applying each record's change
    to the table in turn, with one read and one write per row instead of one of each per record and row.
    """
    columns = tuple(projection.table.columns)
    current: dict[ProjectionKey, Mapping[str, Any] | None] = dict(stored)
    changed: dict[ProjectionKey, None] = {}
    for key, record in touched:
        change = projection.change(key, current[key], record)
        if isinstance(change, Upsert):
            current[key] = dict(zip(columns, change.values, strict=True))
        elif isinstance(change, Delete):
            current[key] = None
        else:
            continue
        changed[key] = None
    net: list[tuple[ProjectionKey, Upsert | Delete]] = []
    for key in changed:
        row, before = current[key], stored[key]
        if row is None:
            if before is not None:
                net.append((key, Delete()))
        elif before is None or dict(before) != row:
            net.append((key, Upsert(tuple(row[column] for column in columns))))
    return net


def check_registrations(projections: Sequence[Projection]) -> None:
    """`ValueError` when two projections share a name or a table."""
    names = [p.name for p in projections]
    tables = [p.table.name for p in projections]
    if len(set(names)) != len(names) or len(set(tables)) != len(tables):
        raise ValueError("projection names and tables must be unique")
