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
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import trio

from auto_runtime.functions.interaction import InteractionType
from auto_runtime.functions.prediction.build_facts import SCORE_KEY, is_build_input
from auto_runtime.functions.prediction.build_requests import BuildRequests
from auto_runtime.functions.prediction.builds import Builds
from auto_runtime.functions.prediction.cache_folder import CacheFolder
from auto_runtime.functions.prediction.candidates import Candidates
from auto_runtime.functions.prediction.datasets import Datasets
from auto_runtime.functions.prediction.model_pool import ModelPool
from auto_runtime.functions.prediction.prediction_type import PredictionType
from auto_runtime.functions.prediction.questions import Questions
from auto_runtime.functions.prediction.scoring import Scoring
from auto_runtime.ledger import Ledger, PlaybookScope, open_ledger
from auto_runtime.ledger.lease import WORKFLOW_HOST_LEASE
from auto_runtime.playbooks.definition_registry import DefinitionRegistry
from auto_runtime.playbooks.playbook_registry import PlaybookRegistry
from auto_runtime.playbooks.run_service import RunService
from auto_runtime.problems import Rejection
from auto_runtime.server import RUNTIME_PROJECTIONS
from auto_runtime.supervision import Supervisor
from tests.conformance.prediction.seeding import TRAINER
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


@dataclass
class Parts:
    ledger: Ledger
    builds: Builds
    runs: RunService
    pool: ModelPool
    candidates: Candidates
    scoring: Scoring


@asynccontextmanager
async def composed(tmp_path: Path, database_url: str | None) -> AsyncIterator[Parts]:
    """Two prediction functions over one dataset, with `PREDICTION_BUILDS_AT_ONCE` 1 of 2 processes."""
    file = None if database_url is not None else tmp_path / "ledger.db"
    async with open_ledger(file, database_url, RUNTIME_PROJECTIONS) as ledger:
        datasets = Datasets(ledger)
        cache = CacheFolder(tmp_path / "cache")
        cache.prepare()
        pool = ModelPool(processes=2, builds_at_once=1, memory_mib=1280)
        builds = Builds(ledger, datasets, 4, 1)
        types = {
            "prediction": PredictionType(ledger, datasets, Questions(builds, datasets, pool, cache)),
            "interaction": InteractionType(None),
        }
        definitions = DefinitionRegistry(ledger, types)  # type: ignore[arg-type]
        runs = RunService(ledger, definitions, types)  # type: ignore[arg-type]
        runs.serve_waiting("prediction", builds, is_build_input)
        playbooks = PlaybookRegistry(ledger)
        root = Supervisor("test-root", [pool.child_spec()])
        async with trio.open_nursery() as nursery:
            await nursery.start(root.run)
            async with playbooks.actors.serving(), definitions.actors.serving():
                await playbooks.create(SCOPE.org, SCOPE.playbook, "Forecasts", "", "local")
                await definitions.create(SCOPE, "interaction", "train-forecasts", TRAINER, "local")
                digest = hashlib.sha256(DATA).hexdigest()
                await datasets.upload(SCOPE, digest, _chunks(DATA))
                for name in ("units", "boxes"):
                    await definitions.create(SCOPE, "prediction", name, SOURCE.format(digest=digest), "local")
                yield Parts(
                    ledger, builds, runs, pool, Candidates(builds, pool, cache), Scoring(builds, datasets, pool, cache)
                )
            await root.stop()


async def _build(parts: Parts, name: str) -> str:
    build = await parts.runs.run_definition(SCOPE, "prediction", name, {"build": {}}, None, "local")
    assert build["status"] == "started", build
    return str(build["run_id"])


async def _candidates_facts(parts: Parts, run_id: str) -> list[str]:
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
        await BuildRequests(parts.builds).answer(SCOPE, run_id, {"candidates": [uploaded["candidate"]]}, None, "key:t")
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
            if entry.key == SCORE_KEY and entry.run_id == run_id
        ]
        await parts.scoring.fire(due, lease.fence())
        assert (await parts.runs.get_run(SCOPE, run_id))["status"] == "succeeded"
        await _build(parts, "boxes")


async def test_a_candidate_check_while_build_work_holds_its_share_is_model_process_busy(
    tmp_path: Path, database_url: str | None
) -> None:
    async with composed(tmp_path, database_url) as parts:
        run_id = await _build(parts, "units")
        async with parts.pool._build_share(wait=True):  # build work (scoring, say) holds the one build process
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
