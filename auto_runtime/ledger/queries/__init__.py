"""The ledger's query ports: one typed query object per projection or concern, the only SQL read above `ledger/`.

Domain code reads a projection through `ledger.queries.<name>` (e.g. `await ledger.queries.runs.status(org,
playbook, run_id)`), never with SQL of its own. Each query object keeps its SQL beside its methods, written once
with `?` placeholders for both stores (the PostgreSQL store numbers them), and answers rows as stored (dicts of
column to value, `json` columns still text: the caller decodes them with its projection's `decode_row`, since the
projections are defined above the ledger) or plain values (`int`, `str`). None of these needs a statement per
engine: they keep to the SQL both speak (see `Ledger._select`), and a value whose type differs by engine is made
one type here (`SUM` is a `Decimal` on PostgreSQL: `int()`). A query that cannot be written once would keep a
SQLite and a PostgreSQL statement side by side, chosen by the store's dialect handed to `Queries`.

Query objects hold no state but the ledger's read (`reading.ReadRows`), are made once per ledger, and may be
called from any number of Trio tasks at once.
"""

from __future__ import annotations

from .analytics import AnalyticsQueries
from .content import ContentQueries
from .definitions import DefinitionsQueries
from .due_work import DueWorkQueries
from .open_requests import OpenRequestsQueries
from .playbooks import PlaybooksQueries
from .prediction_versions import PredictionVersionsQueries
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
        """`definitions`: a definition's latest version, a playbook's or a type's definitions, the active ones and
        their uses."""
        self.runs = RunsQueries(read)
        """`runs`: a playbook's runs newest first (`list_runs`), a run's status, a definition's runs of one input
        (a prediction function's builds)."""
        self.analytics = AnalyticsQueries(read)
        """`runs`, for analytics: the ended runs of a window of days."""
        self.workflow_runs = WorkflowRunsQueries(read)
        """`workflow_runs`: a workflow run's row, the calls waiting in a run's tree."""
        self.workflow_listeners = WorkflowListenersQueries(read)
        """`workflow_listeners`: the runs of a playbook with open listens."""
        self.prediction_versions = PredictionVersionsQueries(read)
        """`prediction_versions`: a function's versions (oldest first, or as its standing lists them), its active
        one, its latest number, a version's scores, the versions of a playbook in a state."""
        self.open_requests = OpenRequestsQueries(read)
        """`open_requests`: a playbook's open requests newest first (`list_interactions`), how many of a type,
        those of a conversation a reply may answer."""
        self.due_work = DueWorkQueries(read)
        """`ledger_due_work`, counted: the armed entries of a key (the ledger's own table; entries are armed and
        taken through `Ledger.due_work`)."""
        self.content = ContentQueries(read)
        """`ledger_content`, by scope: the digest a scope key keeps (its bytes are read through `Ledger.content`)."""


__all__ = [
    "AnalyticsQueries",
    "ContentQueries",
    "DefinitionsQueries",
    "DueWorkQueries",
    "OpenRequestsQueries",
    "Param",
    "PlaybooksQueries",
    "PredictionVersionsQueries",
    "Queries",
    "ReadRows",
    "RunsQueries",
    "WorkflowListenersQueries",
    "WorkflowRunsQueries",
]
