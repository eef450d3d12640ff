"""The SQLite ledger's schema, as numbered migrations: `0001_ledger.sql`, `0002_....sql`, ...

Each file is one migration: SQL statements separated by `;`, run in order inside one transaction that also
records its number in `ledger_schema_versions` (see `..schema`). To change a core table, add the next
numbered file; never edit a file a release has shipped, since ledgers out there already ran it. PostgreSQL
keeps its own list under `..postgres.migrations`, with the same numbers for the same changes. What SQLite
refuses inside a transaction (`VACUUM`, `PRAGMA journal_mode`, `PRAGMA foreign_keys`) has no place here; a
table SQLite cannot `ALTER` is rebuilt the usual way (create the new table, copy, drop, rename) in the file.
"""
