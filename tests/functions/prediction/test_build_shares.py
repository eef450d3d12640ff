"""prediction-format §8.1 step 3 and §8.6, §13: the shares of build work, in this process on both ledgers, with
the real model processes. `PREDICTION_BUILDS_AT_ONCE` builds queued refuse the next build `unavailable`,
`builds_full`, `Retry-After: 60` until the queue drains; a candidate check while build work holds its share of
the processes is `unavailable`, `model_process_busy`, `Retry-After: 5`, and records nothing.

No timer loop runs here, so an answered build stays queued (its `score` entry armed) until the test fires it
through the due handler with the workflow lease's fence, as the lease holder would."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from auto_runtime.functions.interaction import InteractionType
from auto_runtime.functions.prediction.build_facts import SCORE_KEY
from auto_runtime.functions.prediction.build_requests import BuildRequests
from auto_runtime.functions.prediction.model_work import job_owner
from auto_runtime.functions.prediction.scoring import build_run_of
from auto_runtime.ledger import PlaybookScope
from auto_runtime.ledger.lease import WORKFLOW_HOST_LEASE
from auto_runtime.problems import Rejection
from tests.functions.prediction.composed import Composed, composed_prediction
from tests.functions.prediction.test_cycle_on_sqlite import DATA, LINEAR, SOURCE, _chunks
from tests.postgres_support import fresh_database

SCOPE = PlaybookScope("acme", "forecasts")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest) -> Iterator[str | None]:
    if request.param == "postgres":
        with fresh_database("prediction_shares") as url:
            yield url
    else:
        yield None


@asynccontextmanager
async def composed(tmp_path: Path, database_url: str | None) -> AsyncIterator[Composed]:
    """Two prediction functions over one dataset, with `PREDICTION_BUILDS_AT_ONCE` 1 of 2 processes."""
    async with composed_prediction(tmp_path, database_url, SCOPE, InteractionType(None)) as parts:
        digest = hashlib.sha256(DATA).hexdigest()
        await parts.datasets.upload(SCOPE, digest, _chunks(DATA))
        for name in ("units", "boxes"):
            await parts.definitions.create(SCOPE, "prediction", name, SOURCE.format(digest=digest), "local")
        yield parts


async def _build(parts: Composed, name: str) -> str:
    build = await parts.runs.run_definition(SCOPE, "prediction", name, {"build": {}}, None, "local")
    assert build["status"] == "started", build
    return str(build["run_id"])


async def _candidates_facts(parts: Composed, run_id: str) -> list[str]:
    history = await parts.runs.get_run(SCOPE, run_id)
    assert history["status"] == "started"
    records = await parts.ledger.read_stream(SCOPE.stream("runs", run_id))
    return [record.type for record in records if record.type.startswith("candidate_")]


async def test_builds_at_once_queued_refuse_the_next_build_with_retry_after_60(
    tmp_path: Path, database_url: str | None
) -> None:
    async with composed(tmp_path, database_url) as parts:
        run_id = await _build(parts, "units")
        uploaded = await parts.candidates.upload(SCOPE, run_id, _chunks(LINEAR), "local")
        await BuildRequests(parts.builds, parts.definitions.actors.runs).answer(
            SCOPE, run_id, {"candidates": [uploaded["candidate"]]}, None, "key:t"
        )
        with pytest.raises(Rejection) as refused:
            await parts.runs.run_definition(SCOPE, "prediction", "boxes", {"build": {}}, None, "local")
        assert (refused.value.reason, refused.value.kind, refused.value.retry_after) == (
            "unavailable",
            "builds_full",
            60,
        )
        assert refused.value.because is None and refused.value.effective_retry_after() == 60
        assert "PREDICTION_BUILDS_AT_ONCE" in refused.value.detail
        lease = await parts.ledger.lease(WORKFLOW_HOST_LEASE).claim("test", timedelta(seconds=30))
        (due,) = [
            entry
            for entry in await parts.ledger.due_work.due(datetime.now(UTC) + timedelta(seconds=1), 100)
            if entry.key == SCORE_KEY and build_run_of(entry) == run_id
        ]
        await parts.scoring.fire(due, lease.fence())
        assert (await parts.runs.get_run(SCOPE, run_id))["status"] == "succeeded"
        await _build(parts, "boxes")


async def test_a_candidate_check_while_build_work_holds_its_share_is_model_process_busy(
    tmp_path: Path, database_url: str | None
) -> None:
    async with composed(tmp_path, database_url) as parts:
        run_id = await _build(parts, "units")
        async with parts.pool._slot(job_owner(SCOPE), build=True, wait=None):  # build work holds the build process
            with pytest.raises(Rejection) as refused:
                await parts.candidates.upload(SCOPE, run_id, _chunks(LINEAR), "local")
        assert (refused.value.reason, refused.value.kind, refused.value.retry_after) == (
            "unavailable",
            "model_process_busy",
            5,
        )
        assert refused.value.effective_retry_after() == 5
        assert await _candidates_facts(parts, run_id) == []
        accepted = await parts.candidates.upload(SCOPE, run_id, _chunks(LINEAR), "local")
        assert accepted["candidate"] == hashlib.sha256(LINEAR).hexdigest()
        assert await _candidates_facts(parts, run_id) == ["candidate_uploaded"]
