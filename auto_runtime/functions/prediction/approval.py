"""Approving a version (prediction-format §9, `approve`): a version that skips or passes its shadow while the
function names `approve` waits `awaiting_approval`, and the runtime runs the approving function with input
`{ function, version, summary }` (`summary`: Markdown with the scores).

- An answer whose `decision` is `approve` activates the version (`version_activated`, rule `approved`), unless
  the active version is newer (`activation_refused`, `superseded`) or the version no longer fits its contract
  (`activation_refused`, `contract_changed`);
- any other answer records `activation_refused`, `not_approved`;
- a run that ends without an answer (rejected or failed), or that cannot start, records `activation_refused`,
  `approval_failed`.

The approving run is asked by due work `prediction-approval/<function>/<version>` (of the pseudo-run `models`),
armed in the append that leaves the version awaiting approval, and carried out on the workflow lease's holder.
Its run id is derived from the playbook, function and version (`approval_run_id`), so asking again names the same
run. Its ending is seen by the reactions follower (`decided_after_run`), which records the decision on the
function's `models/<function>` stream, by `playbook:<id>`, expecting the stream's version it read: of two
deciders at once one appends, the other reads the version decided and does nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from auto_runtime.functions.prediction.builds import Builds
from auto_runtime.functions.prediction.document import PredictionDocument, parse_document
from auto_runtime.functions.prediction.versions import ACTIVATION_REFUSED, VERSION_ACTIVATED
from auto_runtime.ledger import (
    DueEntry,
    LeaseFence,
    Ledger,
    NewRecord,
    PlaybookScope,
    Record,
    decide_and_append,
    folding_reader,
)
from auto_runtime.ledger.due_work import DueWorkChanges
from auto_runtime.playbooks.run_service import RunService
from auto_runtime.problems import Rejection
from auto_runtime.runs.facts import RUN_ENDINGS, RUN_SUCCEEDED, run_stream

APPROVAL_PREFIX: Final = "prediction-approval/"
APPROVAL_RUN: Final = "models"
_RUN_IDS: Final = uuid.UUID("5d0f7c1e-8a1b-4f0e-9a57-2f3c1f0b6a41")
ATTEMPTS: Final = 4


def approval_run_id(scope: PlaybookScope, function: str, version: int) -> str:
    """The approving run's id for a version: the same every time it is asked."""
    return str(uuid.uuid5(_RUN_IDS, f"{scope.key}/{function}/{version}"))


def approval_entry(scope: PlaybookScope, function: str, version: int) -> DueEntry:
    """The due entry that asks the approving function about a version now."""
    key = f"{APPROVAL_PREFIX}{function}/{version}"
    return DueEntry(scope, APPROVAL_RUN, key, datetime.now(UTC), {"function": function, "version": version})


def _number(value: Any) -> str:
    return "–" if value is None else f"{float(value):.4g}"


def summary_of(function: str, row: Mapping[str, Any]) -> str:
    """The Markdown the approving function reads: the version's scores beside the baseline's."""
    return (
        f"## Version {row['version']} of the prediction function {function}\n\n"
        "| | MASE | MSIS | Coverage |\n| --- | --- | --- | --- |\n"
        f"| Version {row['version']} | {_number(row['mase'])} | {_number(row['msis'])} | "
        f"{_number(row['coverage'])} |\n"
        f"| Seasonal-naive baseline | {_number(row['baseline_mase'])} | {_number(row['baseline_msis'])} | – |\n"
    )


class Approval:
    """See the module. `fire` is the due handler of `prediction-approval/`; `decided_after_run` a hook of the
    reactions follower."""

    def __init__(self, builds: Builds, runs: RunService) -> None:
        self.builds = builds
        self.runs = runs
        self.ledger: Ledger = builds.ledger

    async def fire(self, entry: DueEntry, fence: LeaseFence) -> None:
        scope = entry.scope
        assert isinstance(scope, PlaybookScope)
        function, version = str(entry.payload["function"]), int(entry.payload["version"])
        found = await self._waiting(scope, function, version)
        if found is None:
            await self.ledger.due_work.mark_fired([entry.due_key], fence=fence)
            return
        document, row = found
        run_id = approval_run_id(scope, function, version)
        value = {"function": function, "version": version, "summary": summary_of(function, row)}
        refused = document.approve is None
        if not refused:
            assert document.approve is not None
            try:
                await self.runs.run_definition(
                    scope, "interaction", document.approve, value, run_id, f"playbook:{scope.playbook}"
                )
            except Rejection:
                refused = not await self.ledger.read_stream(run_stream(scope, run_id), limit=1)
        if refused:  # no run was recorded, so no ending will decide
            await self._decide(scope, function, version, "approval_failed", fence, fired=entry)
            return
        await self.ledger.due_work.mark_fired([entry.due_key], fence=fence)

    async def decided_after_run(self, record: Record, fence: LeaseFence | None) -> None:
        """A run's ending: when it is the approving run of a version awaiting approval, record the decision."""
        if record.type not in RUN_ENDINGS:
            return
        definition = record.metadata.get("definition") or {}
        parts = record.stream.split("/")
        if definition.get("type") != "interaction" or len(parts) != 5 or parts[3] != "runs":
            return
        scope = PlaybookScope(parts[1], parts[2])
        waiting = await self.ledger.queries.prediction_versions.in_state(scope.org, scope.playbook, "awaiting_approval")
        for row in waiting:
            function, version = str(row["function"]), int(row["version"])
            if approval_run_id(scope, function, version) != parts[4]:
                continue
            if record.type != RUN_SUCCEEDED:
                decision = "approval_failed"
            else:
                output = (record.data or {}).get("output")
                approved = isinstance(output, dict) and output.get("decision") == "approve"
                decision = "approved" if approved else "not_approved"
            await self._decide(scope, function, version, decision, fence)

    async def _waiting(
        self, scope: PlaybookScope, function: str, version: int
    ) -> tuple[PredictionDocument, Mapping[str, Any]] | None:
        """The function's document and the version's row while it awaits approval, else None."""
        definition = await self.ledger.queries.definitions.row(scope.org, scope.playbook, "prediction", function)
        if definition is None or definition["status"] == "retired":
            return None
        document = parse_document(str(definition["source"]))
        row = await self.ledger.queries.prediction_versions.scores(scope.org, scope.playbook, function, version)
        if isinstance(document, list) or row is None or row["state"] != "awaiting_approval":
            return None
        return document, row

    async def _decide(
        self,
        scope: PlaybookScope,
        function: str,
        version: int,
        decision: str,
        fence: LeaseFence | None,
        fired: DueEntry | None = None,
    ) -> None:
        """Record `decision` (`approved`, or the `because` of a refusal) for a version still awaiting approval."""
        stream = scope.stream("models", function)

        async def decide(_: None) -> list[NewRecord]:
            found = await self._waiting(scope, function, version)
            if found is None:
                return []
            document, row = found
            definition = await self.ledger.queries.definitions.row(scope.org, scope.playbook, "prediction", function)
            assert definition is not None, "a definition `_waiting` read is never deleted"
            metadata = {
                "correlation_id": None,
                "causation_id": None,
                "by": f"playbook:{scope.playbook}",
                "definition": {"type": "prediction", "name": function, "version": int(definition["version"])},
            }
            fact = await self._fact(scope, function, version, decision, document, row)
            return [NewRecord(fact[0], fact[1], metadata)]

        try:
            decided = await decide_and_append(
                self.ledger,
                stream,
                folding_reader(self.ledger, stream, _nothing),
                decide,
                clashed=_KeptMoving,
                attempts=ATTEMPTS,
                due_work=DueWorkChanges(fire=[fired.due_key]) if fired is not None else None,
                fence=fence,
            )
        except _KeptMoving:
            decided = None
        if (decided is None or not decided.appended) and fired is not None:
            await self.ledger.due_work.mark_fired([fired.due_key], fence=fence)

    async def _fact(
        self,
        scope: PlaybookScope,
        function: str,
        version: int,
        decision: str,
        document: PredictionDocument,
        row: Mapping[str, Any],
    ) -> tuple[str, dict[str, Any]]:
        if decision != "approved":
            return ACTIVATION_REFUSED, {"version": version, "because": decision}
        if await self.builds.contract_of(scope, function, int(row["document_version"])) != document.contract:
            return ACTIVATION_REFUSED, {"version": version, "because": "contract_changed"}
        active = await self.ledger.queries.prediction_versions.active(scope.org, scope.playbook, function)
        previous = int(active["version"]) if active is not None else None
        if previous is not None and previous > version:
            return ACTIVATION_REFUSED, {"version": version, "because": "superseded"}
        return VERSION_ACTIVATED, {"version": version, "rule": "approved", "previous": previous}


class _KeptMoving(Exception):
    """The function's model stream kept moving through every attempt: the decision is left to the next firing."""


def _nothing(history: Sequence[Record]) -> None:
    """A decision on the model stream needs nothing of its records but their count (the version)."""
