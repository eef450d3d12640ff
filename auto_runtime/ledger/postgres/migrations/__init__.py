"""The PostgreSQL ledger's schema, as numbered migrations: `0001_ledger.sql`, `0002_....sql`, ...

Each file is one migration, run as one script inside one transaction, under the ledger's advisory lock, that
also records its number in `ledger_schema_versions` (see `..schema`). To change a core table, add the next
numbered file; never edit a file a release has shipped, since ledgers out there already ran it. SQLite keeps
its own list under `..sqlite.migrations`, with the same numbers for the same changes. Functions are not
migrations: they are replaced on every open (see `..schema`).
"""
