-- Partitions (issue 33), the PostgreSQL side of SQLite's migration 5: the ledger keeps its partition count,
-- each due entry its partition, and the single workflow lease of earlier releases is retired in favour of one
-- lease per partition (`partitions`).
--
-- ledger_partitioning has at most one row, written when a server of this release first opens the ledger
-- (`WORKFLOW_PARTITIONS` then), and kept: a server whose setting disagrees keeps the ledger's. The entries
-- armed before are given their partitions on that same open, once the count is known; `ledger_change_due_work`
-- (replaced on every open) places each entry it arms from then on, also for a server of the earlier release
-- still running, whose function it replaces.
--
-- The workflow-host lease is given to a holder that is no server, until the year 9999, and its fencing number moves on:
-- a server of an earlier release finds it held by another and stands by, and a fenced write of the one that
-- held it fails (its fencing number is gone), so it never writes beside the partitions' holders.

CREATE TABLE ledger_partitioning (
    only_row integer PRIMARY KEY CHECK (only_row = 1),
    partitions integer NOT NULL CHECK (partitions BETWEEN 1 AND 1024)
);

ALTER TABLE ledger_due_work ADD COLUMN partition_no integer;

UPDATE ledger_leases SET holder = '(partitioned)', lapses_at = '9999-01-01 00:00:00+00', fencing = fencing + 1
WHERE name = 'workflow-host';
