-- A leaner append (issue 16), the PostgreSQL side of SQLite's migration 4.
--
-- ledger_records_correlation keeps only the records that carry a correlation id. Its one reader, the
-- correlated page of a scope (`statements.scan` with a correlation id), asks `correlation_id = $n`, a strict
-- comparison that implies `correlation_id IS NOT NULL`, so the planner still uses the index; records without
-- one no longer add an entry on append. (ledger_streams stays here: concurrent appenders of several servers
-- take its rows' locks to order their appends to a stream.)

DROP INDEX ledger_records_correlation;
CREATE INDEX ledger_records_correlation
    ON ledger_records (scope_key, correlation_id, tx_id, global_position) WHERE correlation_id IS NOT NULL;
