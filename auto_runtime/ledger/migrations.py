"""Numbered schema migrations: how a store finds them, which one comes next, and what it reports.

Each store keeps its migrations as SQL files `NNNN_what.sql` in a package of its own
(`sqlite.migrations`, `postgres.migrations`), numbered 1, 2, ... with the same number for the same change
on both. A ledger's schema version is the highest number in its `ledger_schema_versions` table.

At start the store (`sqlite.schema.migrate`, `postgres.schema.migrate`) brings its schema to the latest
version one migration at a time. Each migration runs in one transaction together with the row that
records its number, under the store's lock (SQLite: `BEGIN IMMEDIATE`, the file's one write lock;
PostgreSQL: the ledger's transaction-level advisory lock, taken first), and the version is read again
inside each transaction. So of several servers starting together on one database, the first to take the
lock migrates and the others find the work done; a migration that fails leaves the version it found.

A ledger with `ledger_records` but no version table was made before versions were kept (release 0.1.0):
its version is 0, and migration 1 (that release's schema, `IF NOT EXISTS` throughout) changes nothing in
it, so it is adopted as version 1 as it is. A ledger at a version higher than the code's latest was
migrated by a newer release, whose tables this code could misread: it is refused (`SchemaTooNew`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

from .errors import LedgerError

VERSION_TABLE = "ledger_schema_versions"
_FILE_NAME = re.compile(r"(\d{4})_([a-z0-9_]+)\.sql")


@dataclass(frozen=True, slots=True)
class Migration:
    """One numbered step of a store's schema: its SQL (one or more statements) and a name for the record."""

    number: int
    name: str
    sql: str


@dataclass(frozen=True, slots=True)
class SchemaReport:
    """What a store's migration found and did when the ledger opened."""

    found: int
    """The version the ledger was at (0: a new ledger, or one made before versions were kept)."""
    version: int
    """The version it is at now, the code's latest."""
    adopted: bool
    """The ledger was made before versions were kept and was adopted as version 1."""
    applied: tuple[int, ...]
    """The migrations this process ran (none when another server had run them, or none were due)."""


class SchemaTooNew(LedgerError):
    """The ledger's schema version is higher than the code knows: a newer release migrated it."""

    def __init__(self, found: int, known: int) -> None:
        super().__init__(f"the ledger is at schema version {found}; this release knows versions up to {known}")
        self.found = found
        self.known = known

    @property
    def refusal(self) -> str:
        """The end of the start line that names the ledger (`LEDGER_FILE: <path> ...`, `DATABASE_URL: ...`)."""
        return (
            f"is a ledger of schema version {self.found}, which a newer release made; this release knows "
            f"versions up to {self.known}, so start that newer release"
        )


def load_migrations(package: str) -> tuple[Migration, ...]:
    """The migrations kept in `package` as `NNNN_what.sql`, in order; `RuntimeError` when they are not
    numbered 1, 2, ... without a gap or a repeat (a packaging mistake, caught at import)."""
    found = sorted(
        (
            Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8"))
            for entry in resources.files(package).iterdir()
            if (match := _FILE_NAME.fullmatch(entry.name))
        ),
        key=lambda migration: migration.number,
    )
    numbers = [migration.number for migration in found]
    if numbers != list(range(1, len(found) + 1)):
        raise RuntimeError(f"the migrations of {package} are numbered {numbers}, not 1, 2, ...")
    return tuple(found)


def next_migration(version: int, migrations: Sequence[Migration]) -> Migration | None:
    """The migration that brings a ledger at `version` one step on, or None at the latest; `SchemaTooNew`
    past it."""
    if version > len(migrations):
        raise SchemaTooNew(version, len(migrations))
    return migrations[version] if version < len(migrations) else None
