-- The views of recall functions (spec recall-format.md, "How the view is kept"): one row for each active recall
-- function of a playbook, written only by the server holding the workflow lease (`..recall_views`).

CREATE TABLE recall_views (
    org text NOT NULL,
    playbook text NOT NULL,
    name text NOT NULL,
    version bigint NOT NULL,
    saved_at text NOT NULL,
    state text NOT NULL,
    view text NOT NULL,
    checkpoint text,
    checkpoint_at text,
    last_event text,
    folded bigint NOT NULL,
    tries bigint NOT NULL,
    stalled text,
    PRIMARY KEY (org, playbook, name)
);
