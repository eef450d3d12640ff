"""prediction-format §9–§10, shadow work in this process on both ledgers (the conformance tests run it through
the real server, `tests/conformance/prediction/test_shadow.py`): a second version
shadows, predicts after its build, and once a saved document version names a dataset reaching the predicted
period it is graded, passes and is activated by rule `shadow_passed`. Its points are kept as content, the event
holding their count, bytes and SHA-256 (settled point 25), and a `shadow_predicted` recorded before that, with the
points in the event, is graded as well. The test fires the due entries and hands the saved version's record to
the follower's hook, as the lease holder would."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from pathlib import Path

from auto_runtime.functions.prediction.build_facts import SCORE_KEY
from auto_runtime.functions.prediction.build_requests import BuildRequests
from auto_runtime.functions.prediction.shadow import SHADOW_PREFIX, Shadow, arm_after_save
from auto_runtime.ledger import ANY_VERSION, LeaseFence, NewRecord, PlaybookScope, StreamWrite
from auto_runtime.ledger.lease import WORKFLOW_HOST_LEASE
from tests.functions.prediction.test_approval import Parts, _decisions, _due, composed
from tests.functions.prediction.test_build_shares import database_url
from tests.functions.prediction.test_cycle_on_sqlite import DATA, LINEAR, _chunks

__all__ = ["database_url"]

SCOPE = PlaybookScope("acme", "forecasts")
LATER = DATA + b"2026-01,a,13\n"


async def _built(parts: Parts) -> str:
    build = await parts.runs.run_definition(SCOPE, "prediction", "units", {"build": {}}, None, "local")
    run_id = str(build["run_id"])
    uploaded = await parts.candidates.upload(SCOPE, run_id, _chunks(LINEAR), "local")
    await BuildRequests(parts.builds, parts.definitions.actors.runs).answer(
        SCOPE, run_id, {"candidates": [uploaded["candidate"]]}, None, "key:t"
    )
    lease = await parts.ledger.lease(WORKFLOW_HOST_LEASE).claim("test", timedelta(seconds=30))
    await parts.scoring.fire(await _due(parts, SCORE_KEY), lease.fence())
    scored = await parts.runs.get_run(SCOPE, run_id)
    return str(scored["output"]["state"])


POINTS = [
    {
        "series": "a",
        "origin": "2025-12",
        "period": "2026-01",
        "horizon": 1,
        "value": 13,
        "low": 12.5,
        "high": 13.5,
        "against": 13,
    }
]


async def _later_dataset_saved(parts: Parts, fence: LeaseFence) -> None:
    """A document version naming a dataset that reaches 2026-01, its save handed to the follower's hook (twice:
    armed once)."""
    later = hashlib.sha256(LATER).hexdigest()
    await parts.datasets.upload(SCOPE, later, _chunks(LATER))
    source = (await parts.definitions.latest(SCOPE, "prediction", "units")).source
    await parts.definitions.update(
        SCOPE, "prediction", "units", source.replace(hashlib.sha256(DATA).hexdigest(), later), "local"
    )
    (saved,) = [
        record
        for record in await parts.ledger.read_stream(SCOPE.stream("definitions", "prediction"))
        if record.type == "definition_updated"
    ]
    await arm_after_save(parts.ledger, saved, fence)
    await arm_after_save(parts.ledger, saved, fence)


async def _graded_passed_and_activated(parts: Parts, shadow: Shadow, fence: LeaseFence) -> None:
    await shadow.fire(await _due(parts, SHADOW_PREFIX), fence)
    decisions = await _decisions(parts)
    assert [kind for kind, _ in decisions] == [
        "shadow_predicted",
        "shadow_graded",
        "shadow_passed",
        "version_activated",
    ]
    assert decisions[1][1]["graded"] == decisions[1][1]["graded_total"] == 1
    assert decisions[-1][1] == {"version": 2, "rule": "shadow_passed", "previous": 1}
    rows = await parts.ledger.queries.prediction_versions.oldest_first(SCOPE.org, SCOPE.playbook, "units")
    assert [(int(row["version"]), row["state"]) for row in rows] == [(1, "replaced"), (2, "active")]


async def test_a_second_version_shadows_is_graded_passes_and_is_activated(
    tmp_path: Path, database_url: str | None
) -> None:
    async with composed(tmp_path, database_url, approve=False) as parts:
        shadow = Shadow(parts.builds, parts.datasets, parts.pool, parts.cache)
        lease = await parts.ledger.lease(WORKFLOW_HOST_LEASE).claim("test", timedelta(seconds=30))
        assert await _built(parts) == "active"
        assert await _built(parts) == "shadowing"
        await shadow.fire(await _due(parts, SHADOW_PREFIX), lease.fence())
        ((kind, predicted),) = await _decisions(parts)
        assert kind == "shadow_predicted"
        kept = json.dumps(POINTS, separators=(",", ":")).encode()
        assert predicted == {
            "version": 2,
            "against": 1,
            "dataset": hashlib.sha256(DATA).hexdigest(),
            "series": 1,
            "predictions": 1,
            "predictions_bytes": len(kept),
            "predictions_sha256": hashlib.sha256(kept).hexdigest(),
        }
        assert await parts.ledger.content.get(SCOPE.key, predicted["predictions_sha256"]) == kept
        await _later_dataset_saved(parts, lease.fence())
        await _graded_passed_and_activated(parts, shadow, lease.fence())


async def test_a_shadow_predicted_recorded_before_with_its_points_in_the_event_is_graded(
    tmp_path: Path, database_url: str | None
) -> None:
    """A ledger made before settled point 25 holds `shadow_predicted` with the points themselves as `predictions`:
    its shadow work grades them as before."""
    async with composed(tmp_path, database_url, approve=False) as parts:
        shadow = Shadow(parts.builds, parts.datasets, parts.pool, parts.cache)
        lease = await parts.ledger.lease(WORKFLOW_HOST_LEASE).claim("test", timedelta(seconds=30))
        assert await _built(parts) == "active"
        assert await _built(parts) == "shadowing"
        predicting = await _due(parts, SHADOW_PREFIX)
        await parts.ledger.due_work.mark_fired([predicting.due_key], fence=lease.fence())
        written_before = {
            "version": 2,
            "against": 1,
            "dataset": hashlib.sha256(DATA).hexdigest(),
            "series": 1,
            "predictions": POINTS,
        }
        metadata = {
            "correlation_id": None,
            "causation_id": None,
            "by": f"playbook:{SCOPE.playbook}",
            "definition": {"type": "prediction", "name": "units", "version": 1},
        }
        record = NewRecord("shadow_predicted", written_before, metadata)
        await parts.ledger.append([StreamWrite(SCOPE.stream("models", "units"), ANY_VERSION, [record])])
        await _later_dataset_saved(parts, lease.fence())
        await _graded_passed_and_activated(parts, shadow, lease.fence())
