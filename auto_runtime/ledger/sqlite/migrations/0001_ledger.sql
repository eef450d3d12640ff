-- The ledger's tables as release 0.1.0 made them, before schema versions were kept. Every statement says
-- IF NOT EXISTS, so on a ledger that release made this migration changes nothing: the ledger is adopted
-- as version 1 as it is. Later migrations need not say it.

CREATE TABLE IF NOT EXISTS "ledger_records" (
   "global_position" INTEGER PRIMARY KEY,
   "id" TEXT NOT NULL,
   "stream" TEXT NOT NULL,
   "position" INTEGER NOT NULL,
   "scope_key" TEXT NOT NULL,
   "type" TEXT NOT NULL,
   "data" TEXT NOT NULL,
   "metadata" TEXT NOT NULL,
   "correlation_id" TEXT,
   "size" INTEGER NOT NULL,
   "recorded_at" INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS "ledger_records_id" ON "ledger_records" ("id");
CREATE UNIQUE INDEX IF NOT EXISTS "ledger_records_stream" ON "ledger_records" ("stream", "position");
CREATE INDEX IF NOT EXISTS "ledger_records_scope" ON "ledger_records" ("scope_key", "global_position");
CREATE INDEX IF NOT EXISTS "ledger_records_correlation"
    ON "ledger_records" ("scope_key", "correlation_id", "global_position");

CREATE TABLE IF NOT EXISTS "ledger_streams" (
   "stream" TEXT PRIMARY KEY,
   "version" INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS "ledger_projections" (
   "name" TEXT PRIMARY KEY,
   "version" INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS "ledger_content" (
   "scope_key" TEXT,
   "sha256" TEXT,
   "size" INTEGER NOT NULL,
   "location" TEXT NOT NULL,
   PRIMARY KEY ("scope_key", "sha256")
);

CREATE TABLE IF NOT EXISTS "ledger_content_chunks" (
   "scope_key" TEXT,
   "sha256" TEXT,
   "chunk" INTEGER,
   "bytes" BLOB NOT NULL,
   PRIMARY KEY ("scope_key", "sha256", "chunk")
);

CREATE TABLE IF NOT EXISTS ledger_leases (
    name TEXT PRIMARY KEY,
    holder TEXT,
    until_us INTEGER,
    fencing INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS ledger_due_work (
    scope_key TEXT NOT NULL,
    run_id TEXT NOT NULL,
    key TEXT NOT NULL,
    due_us INTEGER,
    payload TEXT,
    state TEXT NOT NULL CHECK (state IN ('armed', 'fired', 'cancelled')),
    PRIMARY KEY (scope_key, run_id, key)
);
CREATE INDEX IF NOT EXISTS ledger_due_work_armed
    ON ledger_due_work (due_us, scope_key, run_id, key) WHERE state = 'armed';
