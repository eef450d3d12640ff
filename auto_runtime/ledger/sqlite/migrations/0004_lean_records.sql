-- A leaner append (issue 16): fewer B-trees written per record.
--
-- ledger_streams becomes WITHOUT ROWID: its rows are keyed by the stream name alone, and a rowid table kept
-- them in two B-trees (the table and the automatic index of its primary key), both written on every append.
-- The table is rebuilt and its rows copied over as they are.
--
-- ledger_records_correlation keeps only the records that carry a correlation id. Its one reader, the
-- correlated page of a scope (`statements.scan` with a correlation id), asks `correlation_id = ?`, which
-- implies `correlation_id IS NOT NULL`, so that read still searches the index; records without one no
-- longer add an entry on append.

CREATE TABLE ledger_streams_lean (
    stream TEXT PRIMARY KEY,
    version INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO ledger_streams_lean (stream, version) SELECT stream, version FROM ledger_streams;
DROP TABLE ledger_streams;
ALTER TABLE ledger_streams_lean RENAME TO ledger_streams;

DROP INDEX ledger_records_correlation;
CREATE INDEX ledger_records_correlation
    ON ledger_records (scope_key, correlation_id, global_position) WHERE correlation_id IS NOT NULL;
