-- The views of recall functions (spec recall-format.md, "How the view is kept"): one row for each active recall
-- function of a playbook, written only by the server holding the workflow lease (`..recall_views`).

CREATE TABLE recall_views (
    org TEXT NOT NULL,
    playbook TEXT NOT NULL,
    name TEXT NOT NULL,
    version INTEGER NOT NULL,
    saved_at TEXT NOT NULL,
    state TEXT NOT NULL,
    view TEXT NOT NULL,
    checkpoint TEXT,
    checkpoint_at TEXT,
    last_event TEXT,
    folded INTEGER NOT NULL,
    tries INTEGER NOT NULL,
    stalled TEXT,
    PRIMARY KEY (org, playbook, name)
);
