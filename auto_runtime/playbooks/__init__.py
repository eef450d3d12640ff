"""The generic layer every definition type stands on: orgs' playbooks, definitions, runs, events, analytics."""
