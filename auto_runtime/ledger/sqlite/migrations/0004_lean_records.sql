-- A leaner append (issue 16): fewer B-trees written per record.
--
-- ledger_streams goes. A stream's records are numbered 1, 2, ... and never removed, so its version is the
-- largest position of its records, which ledger_records_stream answers in one search (`statements`); the
-- table (a rowid B-tree and the index of its key) was two more B-trees written on every append. Before it is
-- dropped, every version it holds is checked against the records: a ledger where they disagree keeps its
-- version 3 (the CHECK below fails the migration) rather than lose a version.
--
-- ledger_records_correlation keeps only the records that carry a correlation id. Its one reader, the
-- correlated page of a scope (`statements.scan` with a correlation id), asks `correlation_id = ?`, which
-- implies `correlation_id IS NOT NULL`, so that read still searches the index; records without one no
-- longer add an entry on append.

CREATE TEMP TABLE ledger_streams_agree (agree INTEGER NOT NULL CHECK (agree = 1));
INSERT INTO ledger_streams_agree (agree)
SELECT NOT EXISTS (
    SELECT 1 FROM ledger_streams AS s
    WHERE s.version <> (SELECT coalesce(max(position), 0) FROM ledger_records AS r WHERE r.stream = s.stream)
) AND NOT EXISTS (
    SELECT 1 FROM ledger_records AS r WHERE NOT EXISTS (SELECT 1 FROM ledger_streams AS s WHERE s.stream = r.stream)
);
DROP TABLE temp.ledger_streams_agree;
DROP TABLE ledger_streams;

DROP INDEX ledger_records_correlation;
CREATE INDEX ledger_records_correlation
    ON ledger_records (scope_key, correlation_id, global_position) WHERE correlation_id IS NOT NULL;
