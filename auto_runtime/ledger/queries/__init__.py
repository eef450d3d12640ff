"""The ledger's query ports: one typed query object per projection or concern, the only SQL read above `ledger/`.

Domain code reads a projection through `ledger.queries.<name>` (e.g. `await ledger.queries.runs.status(org,
playbook, run_id)`), never with SQL of its own. Each query object keeps its SQL beside its methods, written once
with `?` placeholders for both stores (the PostgreSQL store numbers them), and answers rows as stored (dicts of
column to value, `json` columns still text: the caller decodes them with its projection's `decode_row`, since the
projections are defined above the ledger) or plain values (`int`, `str`). None of these needs a statement per
engine: they keep to the SQL both speak (see `Ledger.fetch`), and a value whose type differs by engine is made
one type here (`SUM` is a `Decimal` on PostgreSQL: `int()`). A query that cannot be written once would keep a
SQLite and a PostgreSQL statement side by side, chosen by the store's dialect handed to `Queries`.

Query objects hold no state but the ledger's read (`reading.ReadRows`), are made once per ledger, and may be
called from any number of Trio tasks at once.
"""

from __future__ import annotations

from .analytics import AnalyticsQueries
from .definitions import DefinitionsQueries
from .playbooks import PlaybooksQueries
from .reading import Param, ReadRows
from .runs import RunsQueries
from .workflow_listeners import WorkflowListenersQueries
from .workflow_runs import WorkflowRunsQueries


class Queries:
    """The query objects of one ledger, each reading its projection through the ledger's `read`."""

    def __init__(self, read: ReadRows) -> None:
        self.playbooks = PlaybooksQueries(read)
        """`playbooks`: a playbook's row, an org's playbooks."""
        self.definitions = DefinitionsQueries(read)
        """`definitions`: a definition's latest version, a type's definitions, the active ones and their uses."""
        self.runs = RunsQueries(read)
        """`runs`: a playbook's runs newest first (`list_runs`), a run's status."""
        self.analytics = AnalyticsQueries(read)
        """`runs`, for analytics: the ended runs of a window of days."""
        self.workflow_runs = WorkflowRunsQueries(read)
        """`workflow_runs`: a workflow run's row, the calls waiting in a run's tree."""
        self.workflow_listeners = WorkflowListenersQueries(read)
        """`workflow_listeners`: the runs of a playbook with open listens."""


__all__ = [
    "AnalyticsQueries",
    "DefinitionsQueries",
    "Param",
    "PlaybooksQueries",
    "Queries",
    "ReadRows",
    "RunsQueries",
    "WorkflowListenersQueries",
    "WorkflowRunsQueries",
]
