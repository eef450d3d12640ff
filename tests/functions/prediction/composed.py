"""The prediction type composed in process as the server composes it, for the tests that drive builds, scoring
and approval by hand: a ledger (SQLite in `tmp_path`, or PostgreSQL at `database_url`), the model pool under a
supervisor of its own, and a playbook `scope` that keeps the trainer `train-forecasts`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import trio

from auto_runtime.functions.interaction import InteractionType
from auto_runtime.functions.prediction.build_facts import is_build_input
from auto_runtime.functions.prediction.builds import Builds
from auto_runtime.functions.prediction.cache_folder import CacheFolder
from auto_runtime.functions.prediction.candidates import Candidates
from auto_runtime.functions.prediction.datasets import Datasets
from auto_runtime.functions.prediction.model_pool import ModelPool
from auto_runtime.functions.prediction.prediction_type import PredictionType
from auto_runtime.functions.prediction.questions import Questions
from auto_runtime.functions.prediction.run_handlers import serve_builds
from auto_runtime.functions.prediction.scoring import Scoring
from auto_runtime.ledger import Ledger, PlaybookScope, open_ledger
from auto_runtime.playbooks.definition_registry import DefinitionRegistry
from auto_runtime.playbooks.playbook_registry import PlaybookRegistry
from auto_runtime.playbooks.run_service import RunService
from auto_runtime.server import RUNTIME_PROJECTIONS
from auto_runtime.supervision import Supervisor
from tests.conformance.prediction.seeding import TRAINER


@dataclass
class Composed:
    ledger: Ledger
    definitions: DefinitionRegistry
    datasets: Datasets
    pool: ModelPool
    cache: CacheFolder
    builds: Builds
    runs: RunService
    candidates: Candidates
    scoring: Scoring


@asynccontextmanager
async def composed_prediction(
    tmp_path: Path, database_url: str | None, scope: PlaybookScope, interaction: InteractionType
) -> AsyncIterator[Composed]:
    """Two model processes, one of them for builds; `interaction` serves the interaction type (the real one, or
    a test's own that answers at once)."""
    file = None if database_url is not None else tmp_path / "ledger.db"
    async with open_ledger(file, database_url, RUNTIME_PROJECTIONS) as ledger:
        datasets = Datasets(ledger)
        cache = CacheFolder(tmp_path / "cache")
        cache.prepare()
        pool = ModelPool(processes=2, builds_at_once=1, memory_mib=1280)
        builds = Builds(ledger, datasets, 4, 1)
        types = {
            "prediction": PredictionType(ledger, datasets, Questions(builds, datasets, pool, cache)),
            "interaction": interaction,
        }
        definitions = DefinitionRegistry(ledger, types)  # type: ignore[arg-type]
        runs = RunService(ledger, definitions, types)  # type: ignore[arg-type]
        runs.serve_waiting("prediction", builds, is_build_input)
        serve_builds(builds, definitions.actors)
        playbooks = PlaybookRegistry(ledger)
        root = Supervisor("test-root", [pool.child_spec()])
        async with trio.open_nursery() as nursery:
            await nursery.start(root.run)
            async with playbooks.actors.serving(), definitions.actors.serving():
                await playbooks.create(scope.org, scope.playbook, "Forecasts", "", "local")
                await definitions.create(scope, "interaction", "train-forecasts", TRAINER, "local")
                yield Composed(
                    ledger,
                    definitions,
                    datasets,
                    pool,
                    cache,
                    builds,
                    runs,
                    Candidates(builds, pool, cache, definitions.actors.runs),
                    Scoring(builds, datasets, pool, cache, definitions.actors.runs),
                )
            await root.stop()
