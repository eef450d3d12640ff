"""The recall type as the generic layer sees it: documents checked on a checker, runs answered from the view.

The views themselves are kept by the recall host (`auto_runtime.recall_host`) on the server holding the
workflow lease; a run only reads its function's row (`recall_views`) and never waits for folding.
"""

from __future__ import annotations

from typing import Any

from auto_runtime.functions.computation.document import as_saved
from auto_runtime.functions.computation.run import checked_input
from auto_runtime.functions.documents import object_schema, on_a_checker
from auto_runtime.functions.function_type import CheckedDocument, Rejected, RunEnding, RunRequest, Use
from auto_runtime.functions.overview import schema_table
from auto_runtime.functions.recall.answer import answer_run, view_record
from auto_runtime.functions.recall.check import check_document
from auto_runtime.functions.recall.document import RecallDocument, parse_document
from auto_runtime.functions.recall.standing import cannot_answer, newest_record_at
from auto_runtime.ledger import Ledger, PlaybookScope
from auto_runtime.problems import Rejection
from auto_runtime.sandbox import Checkers, SandboxEngine, SandboxPool
from auto_runtime.sandbox.fair_queue import JobOwner

RUNS = "folds its runs into its view"
CHANGES = "folds its changes into its view"


def recall_overview(document: RecallDocument) -> str:
    events = ", ".join(f"`{item.attributes['type']}`" for item in document.filters)
    answers = (
        "A run answers with what `answer` makes of the view and the input."
        if document.has_answer
        else "A run answers with the view itself."
    )
    return (
        f"{document.description or 'A recall function.'}\n\n"
        "## What it needs\n\n"
        f"{schema_table(object_schema(document.input_schema))}\n"
        "## What it produces\n\n"
        f"{schema_table(object_schema(document.output_schema))}\n"
        "## What it does\n\n"
        f"It keeps a view built from the playbook's own events of the types {events}, folded one at a time in "
        f"the order the playbook recorded them, from the first record of its history. {answers} A run reads the "
        "view as it stands and never changes it, so running it again is always safe.\n"
    )


def _named(value: object, prefix: str) -> tuple[str, str] | None:
    """The (type, name) a `subject` (`<type>/<name>`) or `source` (`/definitions/<type>/<name>`) names."""
    if not isinstance(value, str) or not value.startswith(prefix):
        return None
    parts = value[len(prefix) :].split("/")
    return (parts[0], parts[1]) if len(parts) == 2 and all(parts) else None


def _uses(document: RecallDocument) -> tuple[Use, ...]:
    """The definitions a filter names by their runs' `subject` or their changes' `source`, for **Used by**."""
    uses: list[Use] = []
    for event_filter in document.filters:
        for key, prefix, how in (("subject", "", RUNS), ("source", "/definitions/", CHANGES)):
            named = _named(event_filter.attributes.get(key), prefix)
            if named is not None and Use(named[0], named[1], how) not in uses:
                uses.append(Use(named[0], named[1], how))
    return tuple(uses)


class RecallType:
    """Checks on the checkers shared with computation and workflows; runs read the view's row and, with
    `answer`, run on the pool of `COMPUTATION_WORKERS` workers."""

    name = "recall"

    def __init__(self, engine: SandboxEngine, pool: SandboxPool, checkers: Checkers[Any], ledger: Ledger) -> None:
        self.engine = engine
        self.pool = pool
        self.checkers = checkers
        self.ledger = ledger

    async def check(self, source: str) -> CheckedDocument:
        checked = await on_a_checker(check_document(self.checkers, self.engine, source), "the program")
        return CheckedDocument(
            media_type="text/markdown",
            description=checked.description,
            input_schema=object_schema(checked.input_schema),
            output_schema=object_schema(checked.output_schema),
            shape=None,
            overview=recall_overview(checked),
            uses=_uses(checked),
        )

    async def parse(self, source: str) -> RecallDocument | Rejection:
        return as_saved(parse_document(source))

    async def run(self, request: RunRequest) -> RunEnding:
        document = request.document if request.document is not None else await self.parse(request.source)
        if isinstance(document, Rejection):
            return Rejected(document)
        value = {} if request.input is None else request.input
        checked = await checked_input(document.input_schema, value)
        if isinstance(checked, Rejection):
            return Rejected(checked)
        scope = PlaybookScope(request.org, request.playbook)
        row = await self.ledger.recall_views.one(request.org, request.playbook, request.name)
        if row is None or row.version != request.version or row.state != "live":
            newest = await newest_record_at(self.ledger, scope)
            refusal = cannot_answer(request.name, request.version, row, newest)
            if refusal is not None:
                same = row is not None and row.version == request.version
                return Rejected(refusal, {"view": view_record(row)} if same and row is not None else None)
        assert row is not None, "cannot_answer refuses a missing row"
        input_json, input_bytes = checked
        return await answer_run(
            self.pool,
            document,
            row,
            input_json,
            input_bytes,
            started_at_ms=int(request.started_at.timestamp() * 1000),
            owner=JobOwner(request.org, request.playbook),
        )
