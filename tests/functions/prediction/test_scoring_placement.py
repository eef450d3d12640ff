"""A build's scoring goes with the partition of `org/playbook` (issue 33, design §3), in this process on both
ledgers with the real model processes: the score entry is placed in the playbook's partition, the server holding
it scores, and when another server holds the build run's partition the scored facts are handed to it (a
`prediction-build/record-scores` entry, armed in the write that marks the score entry fired) and recorded by it
under the run partition's fence. Two `Scoring`s stand for the two servers; their fences are real partition leases."""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from auto_runtime.functions.prediction.build_facts import RECORD_SCORES_KEY, SCORE_KEY, score_run_id
from auto_runtime.functions.prediction.build_requests import BuildRequests
from auto_runtime.functions.prediction.scoring import Scoring
from auto_runtime.ledger import (
    DueEntry,
    LeaseFence,
    Ledger,
    partition_lease_name,
    partition_of,
    partition_of_due,
    playbook_key,
)
from tests.functions.prediction.composed import Composed, composed_prediction
from tests.functions.prediction.test_approval import SCOPE, Approver
from tests.functions.prediction.test_build_shares import database_url
from tests.functions.prediction.test_cycle_on_sqlite import DATA, LINEAR, SOURCE, _chunks

__all__ = ["database_url"]


class Held:
    """`Fences` of the partitions one server holds (real leases claimed by the test)."""

    def __init__(self, fences: dict[int, LeaseFence], partitions: int) -> None:
        self.fences = fences
        self.partitions = partitions

    def __call__(self) -> LeaseFence | None:
        return self.fences.get(0)

    def of_key(self, key: str) -> LeaseFence | None:
        return self.fences.get(partition_of(key, self.partitions))

    def fence_of(self, partition: int) -> LeaseFence | None:
        return self.fences.get(partition)

    def held(self) -> frozenset[int]:
        return frozenset(self.fences)


async def _claimed(ledger: Ledger, partition: int, server: str) -> LeaseFence:
    return (await ledger.lease(partition_lease_name(partition)).claim(server, timedelta(minutes=5))).fence()


async def _armed(ledger: Ledger, key: str) -> list[DueEntry]:
    due = await ledger.due_work.due(datetime.now(UTC) + timedelta(seconds=1), 100)
    return [entry for entry in due if entry.key == key]


async def test_the_playbooks_holder_scores_and_the_runs_holder_records_the_facts(
    tmp_path: Path, database_url: str | None
) -> None:
    async with composed_prediction(tmp_path, database_url, SCOPE, Approver()) as parts:
        ledger = parts.ledger
        count = ledger.partitioning.count
        home = partition_of(playbook_key(SCOPE.org, SCOPE.playbook), count)
        digest = await _dataset(parts)
        await parts.definitions.create(SCOPE, "prediction", "units", SOURCE.format(digest=digest), "local")
        while partition_of(run_id := str(uuid.uuid4()), count) == home:  # a build run of another partition
            pass
        build = await parts.runs.run_definition(SCOPE, "prediction", "units", {"build": {}}, run_id, "local")
        assert build["run_id"] == run_id, build
        uploaded = await parts.candidates.upload(SCOPE, run_id, _chunks(LINEAR), "local")
        await BuildRequests(parts.builds, parts.definitions.actors.runs).answer(
            SCOPE, run_id, {"candidates": [uploaded["candidate"]]}, None, "key:t"
        )
        (score,) = await _armed(ledger, SCORE_KEY)
        assert score.run_id == score_run_id(run_id)
        assert partition_of_due(SCOPE.key, score.run_id, count) == home, "placed with the playbook"

        playbooks = Held({home: await _claimed(ledger, home, "server-a")}, count)
        runs_partition = partition_of(run_id, count)
        runs_holder = Held({runs_partition: await _claimed(ledger, runs_partition, "server-b")}, count)
        scorer = Scoring(
            parts.builds, parts.datasets, parts.pool, parts.cache, parts.definitions.actors.runs, playbooks
        )
        await scorer.fire(score, playbooks.fences[home])
        assert (await parts.runs.get_run(SCOPE, run_id))["status"] == "started", "the facts are the run holder's"
        assert [r.state for r in await ledger.due_work.entries_of_run(SCOPE, score.run_id)] == ["fired"]
        (handed,) = await _armed(ledger, RECORD_SCORES_KEY)
        assert handed.run_id == run_id and partition_of_due(SCOPE.key, handed.run_id, count) == runs_partition

        recorder = Scoring(
            parts.builds, parts.datasets, parts.pool, parts.cache, parts.definitions.actors.runs, runs_holder
        )
        await recorder.fire(handed, runs_holder.fences[runs_partition])
        built = await parts.runs.get_run(SCOPE, run_id)
        assert built["status"] == "succeeded" and built["output"]["state"] == "active", built
        assert await _armed(ledger, RECORD_SCORES_KEY) == []


async def _dataset(parts: Composed) -> str:
    digest = hashlib.sha256(DATA).hexdigest()
    await parts.datasets.upload(SCOPE, digest, _chunks(DATA))
    return digest
