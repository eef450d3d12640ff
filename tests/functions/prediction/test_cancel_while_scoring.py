"""prediction-format §8.8: a build cancelled while it is scored stops scoring at once, "ending its scoring
process": the model process running the candidate is ended and the pool replaces it. `cancel_run` answers the
build still `started` (settled point 24); its `prediction-build/cancel` entry, fired as the lease holder would,
then ends it `rejected`, `cancelled`, kind `requested`, with `build_ended` outcome `cancelled`, and the next build
and question succeed. In this process on both ledgers, with the real model processes (see `test_build_shares`).

The candidate passes its check (its history values stay under its gate on the first two training rows) and never
finishes on the backtest rows (past the gate it loops 2⁶² steps), so only the cancel can end its scoring before
the 120 s a candidate may take; the bound below is shorter than that, so a scoring that went on until then fails
the test."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import trio

from auto_runtime.functions.prediction.build_facts import CANCEL_KEY, DISCARD_KEY, SCORE_KEY
from auto_runtime.functions.prediction.build_requests import BuildRequests
from auto_runtime.functions.prediction.scoring import CANDIDATE_SECONDS, build_run_of
from auto_runtime.ledger import DueEntry
from auto_runtime.ledger.lease import WORKFLOW_HOST_LEASE
from tests.functions.prediction.composed import Composed
from tests.functions.prediction.onnx_models import endless_past
from tests.functions.prediction.test_build_shares import SCOPE, _build, composed, database_url
from tests.functions.prediction.test_cycle_on_sqlite import LINEAR, _chunks

__all__ = ["database_url"]

ENDED_WITHIN_SECONDS = 60
"""Only keeps a scoring the cancel failed to stop from hanging the suite: below `CANDIDATE_SECONDS`."""
ENDLESS = endless_past(2, [[-1], [2]], 0.5, 5.0)


async def _answered(parts: Composed, model: bytes) -> tuple[str, DueEntry]:
    run_id = await _build(parts, "units")
    uploaded = await parts.candidates.upload(SCOPE, run_id, _chunks(model), "local")
    await BuildRequests(parts.builds, parts.definitions.actors.runs).answer(
        SCOPE, run_id, {"candidates": [uploaded["candidate"]]}, None, "key:t"
    )
    (due,) = [
        entry
        for entry in await parts.ledger.due_work.due(datetime.now(UTC) + timedelta(seconds=1), 100)
        if entry.key == SCORE_KEY and build_run_of(entry) == run_id
    ]
    return run_id, due


async def test_a_cancel_while_scoring_ends_the_model_process_at_once_and_the_next_build_succeeds(
    tmp_path: Path, database_url: str | None
) -> None:
    assert ENDED_WITHIN_SECONDS < CANDIDATE_SECONDS
    async with composed(tmp_path, database_url) as parts:
        run_id, due = await _answered(parts, ENDLESS)
        lease = await parts.ledger.lease(WORKFLOW_HOST_LEASE).claim("test", timedelta(seconds=600))
        replaced_before = parts.pool.replaced
        with trio.fail_after(ENDED_WITHIN_SECONDS):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(parts.scoring.fire, due, lease.fence())
                scoring_pid = await parts.pool.running_job()
                cancelled = await parts.runs.cancel_run(SCOPE, run_id, None, "key:owner")
        assert parts.pool.replaced == replaced_before + 1
        assert await parts.pool.probe() != scoring_pid
        assert cancelled["status"] == "started"
        (cancel,) = await parts.ledger.due_work.due(datetime.now(UTC) + timedelta(seconds=1), 100)
        assert (cancel.key, cancel.run_id) == (CANCEL_KEY, run_id)
        await parts.scoring.fire(cancel, lease.fence())
        ended = await parts.runs.get_run(SCOPE, run_id)
        rejection = ended["rejection"]
        assert (ended["status"], rejection["reason"], rejection["kind"]) == ("rejected", "cancelled", "requested")
        records = await parts.ledger.read_stream(SCOPE.stream("runs", run_id))
        assert [record.type for record in records][-4:] == [
            "request_answered",
            "run_cancel_requested",
            "build_ended",
            "run_rejected",
        ]
        assert records[-2].data == {"outcome": "cancelled", "because": "requested"}
        assert not [record for record in records if record.type.startswith("candidate_") and "scored" in record.type]
        (discard,) = await parts.ledger.due_work.due(datetime.now(UTC) + timedelta(seconds=1), 100)
        assert (discard.key, discard.run_id) == (DISCARD_KEY, run_id)
        await parts.scoring.fire(discard, lease.fence())
        assert await parts.ledger.due_work.due(datetime.now(UTC) + timedelta(seconds=1), 100) == []

        next_run, next_due = await _answered(parts, LINEAR)
        await parts.scoring.fire(next_due, lease.fence())
        built = await parts.runs.get_run(SCOPE, next_run)
        assert (built["status"], built["output"]["version"], built["output"]["state"]) == ("succeeded", 1, "active")
        asked = await parts.runs.run_definition(SCOPE, "prediction", "units", {"series": "a"}, None, "local")
        answered = await parts.runs.get_run(SCOPE, asked["run_id"])
        assert answered["status"] == "succeeded"
        assert answered["output"]["lines"][1]["points"][0]["value"] == 13
