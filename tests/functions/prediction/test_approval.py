"""prediction-format §9 (`approve`), in this process on both ledgers with the real model processes: a version
built while the function names `approve` waits `awaiting_approval`; the runtime runs the approving function with
`{ function, version, summary }`, and its ending decides: `decision: approve` activates the version (rule
`approved`), another answer refuses it (`not_approved`), a run that ends without an answer refuses it
(`approval_failed`).

`Approver` is the real interaction type with runs that answer at once what the test sets (the conformance test
`test_full_cycle` answers the approving request through the inbox instead). No timer loop or follower runs here:
the test fires the due entries with the workflow lease's fence and hands the approving run's ending to the
follower's hook, as the lease holder would."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from auto_runtime.functions.function_type import Rejected, RunEnding, RunRequest, Succeeded
from auto_runtime.functions.interaction import InteractionType
from auto_runtime.functions.prediction.approval import APPROVAL_PREFIX, Approval, approval_run_id
from auto_runtime.functions.prediction.build_facts import SCORE_KEY
from auto_runtime.functions.prediction.build_requests import BuildRequests
from auto_runtime.ledger import DueEntry, PlaybookScope
from auto_runtime.ledger.lease import WORKFLOW_HOST_LEASE
from auto_runtime.problems import Rejection
from auto_runtime.runs.facts import run_stream
from tests.conformance.prediction.seeding import APPROVER
from tests.functions.prediction.composed import Composed, composed_prediction
from tests.functions.prediction.test_build_shares import database_url
from tests.functions.prediction.test_cycle_on_sqlite import DATA, LINEAR, SOURCE, _chunks

__all__ = ["database_url"]

SCOPE = PlaybookScope("acme", "forecasts")


class Approver(InteractionType):
    """The interaction type, whose runs end at once with `answer` (a Rejection ends them without one) and which
    keeps the inputs it was run with."""

    def __init__(self) -> None:
        super().__init__(None)
        self.answer: dict[str, Any] | Rejection = {"decision": "approve"}
        self.inputs: list[Any] = []

    async def run(self, request: RunRequest) -> RunEnding:
        self.inputs.append(request.input)
        if isinstance(self.answer, Rejection):
            return Rejected(self.answer)
        return Succeeded(output=self.answer, record={})


@dataclass
class Parts(Composed):
    approval: Approval
    approver: Approver


@asynccontextmanager
async def composed(tmp_path: Path, database_url: str | None, *, approve: bool = True) -> AsyncIterator[Parts]:
    """A playbook with a trainer, an approver and the function `units` (naming the approver when `approve`)."""
    approver = Approver()
    async with composed_prediction(tmp_path, database_url, SCOPE, approver) as parts:
        await parts.definitions.create(SCOPE, "interaction", "approve-versions", APPROVER, "local")
        digest = hashlib.sha256(DATA).hexdigest()
        await parts.datasets.upload(SCOPE, digest, _chunks(DATA))
        source = SOURCE.format(digest=digest)
        if approve:
            source = source.replace("trainer:", "approve: approve-versions\ntrainer:")
        await parts.definitions.create(SCOPE, "prediction", "units", source, "local")
        yield Parts(**vars(parts), approval=Approval(parts.builds, parts.runs), approver=approver)


async def _due(parts: Parts, prefix: str) -> DueEntry:
    (entry,) = [
        entry
        for entry in await parts.ledger.due_work.due(datetime.now(UTC) + timedelta(seconds=1), 100)
        if entry.key.startswith(prefix)
    ]
    return entry


async def _built_awaiting_approval(parts: Parts) -> None:
    build = await parts.runs.run_definition(SCOPE, "prediction", "units", {"build": {}}, None, "local")
    run_id = build["run_id"]
    uploaded = await parts.candidates.upload(SCOPE, run_id, _chunks(LINEAR), "local")
    await BuildRequests(parts.builds, parts.definitions.actors.runs).answer(
        SCOPE, run_id, {"candidates": [uploaded["candidate"]]}, None, "key:t"
    )
    lease = await parts.ledger.lease(WORKFLOW_HOST_LEASE).claim("test", timedelta(seconds=30))
    await parts.scoring.fire(await _due(parts, SCORE_KEY), lease.fence())
    scored = await parts.runs.get_run(SCOPE, run_id)
    assert scored["output"]["state"] == "awaiting_approval", scored
    await parts.approval.fire(await _due(parts, APPROVAL_PREFIX), lease.fence())
    ending = (await parts.ledger.read_stream(run_stream(SCOPE, approval_run_id(SCOPE, "units", 1))))[-1]
    await parts.approval.decided_after_run(ending, lease.fence())


async def _decisions(parts: Parts) -> list[tuple[str, dict[str, Any]]]:
    records = await parts.ledger.read_stream(SCOPE.stream("models", "units"))
    return [(record.type, dict(record.data)) for record in records]


async def _state(parts: Parts) -> str:
    row = await parts.ledger.queries.prediction_versions.scores(SCOPE.org, SCOPE.playbook, "units", 1)
    assert row is not None, "version 1 of units was built"
    return str(row["state"])


async def test_an_approving_answer_activates_the_version(tmp_path: Path, database_url: str | None) -> None:
    async with composed(tmp_path, database_url) as parts:
        await _built_awaiting_approval(parts)
        ((asked),) = parts.approver.inputs
        assert (asked["function"], asked["version"]) == ("units", 1)
        assert asked["summary"].startswith("## Version 1 of the prediction function units")
        assert "| Version 1 | 0 |" in asked["summary"] and "Seasonal-naive baseline" in asked["summary"]
        assert await _decisions(parts) == [("version_activated", {"version": 1, "rule": "approved", "previous": None})]
        assert await _state(parts) == "active"
        records = await parts.ledger.read_stream(SCOPE.stream("models", "units"))
        assert records[0].metadata["by"] == "playbook:forecasts"
        ending = (await parts.ledger.read_stream(run_stream(SCOPE, approval_run_id(SCOPE, "units", 1))))[-1]
        lease = await parts.ledger.lease(WORKFLOW_HOST_LEASE).claim("test", timedelta(seconds=30))
        await parts.approval.decided_after_run(ending, lease.fence())  # the follower again: nothing more
        assert len(await _decisions(parts)) == 1


@pytest.mark.parametrize(
    ("answer", "because"),
    [
        ({"decision": "reject"}, "not_approved"),
        (Rejection("unavailable", "nobody answered"), "approval_failed"),
    ],
)
async def test_another_answer_or_none_refuses_the_activation(
    tmp_path: Path, database_url: str | None, answer: dict[str, Any] | Rejection, because: str
) -> None:
    async with composed(tmp_path, database_url) as parts:
        parts.approver.answer = answer
        await _built_awaiting_approval(parts)
        assert await _decisions(parts) == [("activation_refused", {"version": 1, "because": because})]
        assert await _state(parts) == "refused"
