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

from auto_runtime.functions.interaction import InteractionType
from auto_runtime.functions.prediction.build_facts import SCORE_KEY
from auto_runtime.functions.prediction.build_requests import BuildRequests
from auto_runtime.ledger import Ledger, PlaybookScope
from auto_runtime.ledger.lease import WORKFLOW_HOST_LEASE
from tests.functions.prediction.composed import composed_prediction
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
    rows = await ledger.queries.open_requests.newest_first(scope.org, scope.playbook, None, 100)
    return [(str(row["run_id"]), str(row["type"])) for row in rows]


async def test_upload_build_candidate_answer_scoring_activation_and_a_question(tmp_path: Path) -> None:
    scope = PlaybookScope("acme", "forecasts")
    async with composed_prediction(tmp_path, None, scope, InteractionType(None)) as parts:
        ledger, datasets, definitions, runs, builds = (
            parts.ledger,
            parts.datasets,
            parts.definitions,
            parts.runs,
            parts.builds,
        )
        digest = hashlib.sha256(DATA).hexdigest()
        assert (await datasets.upload(scope, digest, _chunks(DATA)))["rows"] == 12
        await definitions.create(scope, "prediction", "units", SOURCE.format(digest=digest), "local")
        build = await runs.run_definition(scope, "prediction", "units", {"build": {}}, None, "local")
        assert build["status"] == "started"
        run_id = build["run_id"]
        uploaded = await parts.candidates.upload(scope, run_id, _chunks(LINEAR), "local")
        assert await _open_requests(ledger, scope) == [(run_id, "prediction")]
        answer = {"candidates": [uploaded["candidate"]]}
        await BuildRequests(builds, definitions.actors.runs).answer(scope, run_id, answer, None, "key:trainer")
        assert await _open_requests(ledger, scope) == []
        lease = await ledger.lease(WORKFLOW_HOST_LEASE).claim("test", timedelta(seconds=30))
        (due,) = [
            entry
            for entry in await ledger.due_work.due(datetime.now(UTC) + timedelta(seconds=1), 100)
            if entry.key == SCORE_KEY
        ]
        await parts.scoring.fire(due, lease.fence())
        scored = await runs.get_run(scope, run_id)
        assert scored["status"] == "succeeded", scored
        assert (scored["output"]["version"], scored["output"]["state"]) == (1, "active")
        asked = await runs.run_definition(scope, "prediction", "units", {"series": "a"}, None, "local")
        shown = await runs.get_run(scope, asked["run_id"])
        predicted = shown["output"]["lines"][1]["points"]
        assert predicted == [{"period": "2026-01", "horizon": 1, "value": 13, "low": 12.5, "high": 13.5}]
