-- The ledger's tables as release 0.1.0 made them, before schema versions were kept. Every statement says
-- IF NOT EXISTS, so on a ledger that release made this migration changes nothing: the ledger is adopted
-- as version 1 as it is. Later migrations need not say it.
--
-- tx_id is the appending transaction's id: oldest-first reads order by (tx_id, global_position) behind a
-- horizon. Data and metadata are JSON text (not jsonb, which refuses U+0000 and lone surrogates).

CREATE TABLE IF NOT EXISTS ledger_records (
    global_position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tx_id bigint NOT NULL DEFAULT (pg_current_xact_id()::text::bigint),
    id text NOT NULL,
    stream text NOT NULL,
    position bigint NOT NULL,
    scope_key text NOT NULL,
    type text NOT NULL,
    data text NOT NULL,
    metadata text NOT NULL,
    correlation_id text,
    size bigint NOT NULL,
    recorded_at bigint NOT NULL,
    CONSTRAINT ledger_records_id UNIQUE (id),
    CONSTRAINT ledger_records_stream UNIQUE (stream, position)
);
CREATE INDEX IF NOT EXISTS ledger_records_scope ON ledger_records (scope_key, tx_id, global_position);
CREATE INDEX IF NOT EXISTS ledger_records_correlation
    ON ledger_records (scope_key, correlation_id, tx_id, global_position);
CREATE INDEX IF NOT EXISTS ledger_records_feed ON ledger_records (tx_id, global_position);

CREATE TABLE IF NOT EXISTS ledger_streams (stream text PRIMARY KEY, version bigint NOT NULL);

CREATE TABLE IF NOT EXISTS ledger_projections (name text PRIMARY KEY, version bigint NOT NULL);

CREATE TABLE IF NOT EXISTS ledger_content (
    scope_key text NOT NULL,
    sha256 text NOT NULL,
    size bigint NOT NULL,
    location text NOT NULL,
    PRIMARY KEY (scope_key, sha256)
);

CREATE TABLE IF NOT EXISTS ledger_content_chunks (
    scope_key text NOT NULL,
    sha256 text NOT NULL,
    chunk integer NOT NULL,
    bytes bytea NOT NULL,
    PRIMARY KEY (scope_key, sha256, chunk)
);

CREATE TABLE IF NOT EXISTS ledger_leases (
    name text PRIMARY KEY,
    holder text,
    lapses_at timestamptz,
    fencing bigint NOT NULL
);

CREATE TABLE IF NOT EXISTS ledger_due_work (
    scope_key text COLLATE "C" NOT NULL,
    run_id text COLLATE "C" NOT NULL,
    key text COLLATE "C" NOT NULL,
    due_us bigint,
    payload text,
    state text NOT NULL CHECK (state IN ('armed', 'fired', 'cancelled')),
    PRIMARY KEY (scope_key, run_id, key)
);
CREATE INDEX IF NOT EXISTS ledger_due_work_armed
    ON ledger_due_work (due_us, scope_key, run_id, key) WHERE state = 'armed';
