"""The full cycle of a prediction function on a SQLite ledger, in this process (issue 20's acceptance): the
server's parts composed as `server.compose_services` composes them (the real interaction type saves the trainer),
the model processes real, the build's request read from the inbox's `open_requests` projection, its answer through
`BuildRequests` (what `answer_interaction` hands a build to) and its scoring through the due handler with the
workflow lease's fence, as the lease holder carries it out. The conformance cycle runs the same through the real
server on both ledgers."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

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
from auto_runtime.interaction_host.open_requests import OPEN_REQUESTS_TABLE
from auto_runtime.ledger import Ledger, PlaybookScope, open_ledger
from auto_runtime.ledger.lease import WORKFLOW_HOST_LEASE
from auto_runtime.playbooks.definition_registry import DefinitionRegistry
from auto_runtime.playbooks.playbook_registry import PlaybookRegistry
from auto_runtime.playbooks.run_service import RunService
from auto_runtime.server import RUNTIME_PROJECTIONS
from auto_runtime.supervision import Supervisor
from tests.conformance.prediction.seeding import TRAINER
from tests.functions.prediction.onnx_models import candidate

DATA = ("period,series,units\n" + "".join(f"2025-{month:02d},a,{month}\n" for month in range(1, 13))).encode()
SOURCE = (
    "---\ndataset: {digest}\nperiod: month\ntarget: units\nlags: 2\nhorizons: [1]\nseason: 1\nbacktest: 2\n"
    "trainer: train-forecasts\n---\n"
)
LINEAR = candidate([[-1], [2]], [0.5])


async def _chunks(data: bytes) -> AsyncIterator[bytes]:
    yield data


async def _open_requests(ledger: Ledger, scope: PlaybookScope) -> list[tuple[str, str]]:
    rows = await ledger.fetch(
        f"SELECT run_id, type FROM {OPEN_REQUESTS_TABLE} WHERE org = ? AND playbook = ?", (scope.org, scope.playbook)
    )
    return [(str(row["run_id"]), str(row["type"])) for row in rows]


async def test_upload_build_candidate_answer_scoring_activation_and_a_question(tmp_path: Path) -> None:
    scope = PlaybookScope("acme", "forecasts")
    async with open_ledger(tmp_path / "ledger.db", None, RUNTIME_PROJECTIONS) as ledger:
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
                await playbooks.create(scope.org, scope.playbook, "Forecasts", "", "local")
                await definitions.create(scope, "interaction", "train-forecasts", TRAINER, "local")
                digest = hashlib.sha256(DATA).hexdigest()
                assert (await datasets.upload(scope, digest, _chunks(DATA)))["rows"] == 12
                await definitions.create(scope, "prediction", "units", SOURCE.format(digest=digest), "local")
                build = await runs.run_definition(scope, "prediction", "units", {"build": {}}, None, "local")
                assert build["status"] == "started"
                run_id = build["run_id"]
                uploaded = await Candidates(builds, pool, cache).upload(scope, run_id, _chunks(LINEAR), "local")
                assert await _open_requests(ledger, scope) == [(run_id, "prediction")]
                answer = {"candidates": [uploaded["candidate"]]}
                await BuildRequests(builds).answer(scope, run_id, answer, None, "key:trainer")
                assert await _open_requests(ledger, scope) == []
                lease = await ledger.lease(WORKFLOW_HOST_LEASE).claim("test", timedelta(seconds=30))
                (due,) = [
                    entry
                    for entry in await ledger.due_work.due(datetime.now(UTC) + timedelta(seconds=1), 100)
                    if entry.key == SCORE_KEY
                ]
                await Scoring(builds, datasets, pool, cache).fire(due, lease.fence())
                scored = await runs.get_run(scope, run_id)
                assert scored["status"] == "succeeded", scored
                assert (scored["output"]["version"], scored["output"]["state"]) == (1, "active")
                asked = await runs.run_definition(scope, "prediction", "units", {"series": "a"}, None, "local")
                shown = await runs.get_run(scope, asked["run_id"])
                predicted = shown["output"]["lines"][1]["points"]
                assert predicted == [{"period": "2026-01", "horizon": 1, "value": 13, "low": 12.5, "high": 13.5}]
            await root.stop()
