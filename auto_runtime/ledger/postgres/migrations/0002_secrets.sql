-- Sealed secrets (connections' credentials), apart from the records so that removing a connection deletes
-- its credential for good (`..secret_rows`, `..secret_statements`).

CREATE TABLE ledger_secrets (
    scope_key text NOT NULL,
    name text NOT NULL,
    sealed bytea NOT NULL,
    ends_with text,
    PRIMARY KEY (scope_key, name)
);
