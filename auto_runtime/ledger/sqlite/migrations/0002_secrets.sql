-- Sealed secrets (connections' credentials), apart from the records so that removing a connection deletes
-- its credential for good (`..secret_rows`, `..secret_statements`).

CREATE TABLE ledger_secrets (
    scope_key TEXT NOT NULL,
    name TEXT NOT NULL,
    sealed BLOB NOT NULL,
    ends_with TEXT,
    PRIMARY KEY (scope_key, name)
);
