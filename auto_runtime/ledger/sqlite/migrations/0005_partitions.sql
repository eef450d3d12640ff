-- Partitions (issue 33): the ledger keeps its partition count, each due entry its partition, and the single
-- workflow lease of earlier releases is retired in favour of one lease per partition (`partitions`).
--
-- ledger_partitioning has at most one row, written when a server of this release first opens the ledger
-- (`WORKFLOW_PARTITIONS` then), and kept: a server whose setting disagrees keeps the ledger's. The entries
-- armed before are given their partitions on that same open, once the count is known.
--
-- The workflow-host lease is given to a holder that is no server, until the year 9999, and its fencing number moves on:
-- a server of an earlier release finds it held by another and stands by, and a fenced write of the one that
-- held it fails (its fencing number is gone), so it never writes beside the partitions' holders.

CREATE TABLE ledger_partitioning (
    only_row INTEGER PRIMARY KEY CHECK (only_row = 1),
    partitions INTEGER NOT NULL CHECK (partitions BETWEEN 1 AND 1024)
);

ALTER TABLE ledger_due_work ADD COLUMN partition_no INTEGER;

UPDATE ledger_leases SET holder = '(partitioned)', until_us = 253370764800000000, fencing = fencing + 1
WHERE name = 'workflow-host';
