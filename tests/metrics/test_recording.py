"""The metrics room in-process, read back through the SDK's in-memory reader: nothing is recorded while off;
run facts become runs started, ended and their duration; a sandbox job records its wait, its ending and its
work, and counts its worker busy while it runs; actors' refusals, mailbox depth, live count and restarts by kind;
a real supervisor's restart; reads of a real SQLite ledger that found every reader busy; the labels are bounded."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from auto_runtime.actors import Actor, ActorRef, MailboxFull, Registry
from auto_runtime.ledger import PlaybookScope, open_ledger
from auto_runtime.ledger.sqlite.connections import READERS
from auto_runtime.metrics import METERING, appended, restarted, sandbox_job
from auto_runtime.metrics.actors import kind_of, observe
from auto_runtime.metrics.sandbox import ending_of, share_bucket
from auto_runtime.sandbox.outcomes import OutOfWork, PastDeadline, Returned
from auto_runtime.supervision import NO_BACKOFF, RestartIntensity, Supervisor
from tests.supervision.test_supervisor import Crashable

AT = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
LIVE = "auto_runtime.actors.live"
HIGH_WATER = "auto_runtime.actors.mailbox.high_water"


@dataclass(frozen=True)
class Fact:
    stream: str
    type: str
    recorded_at: datetime
    metadata: dict[str, Any] = field(default_factory=lambda: {"definition": {"type": "computation"}})


@pytest.fixture
def reader() -> Iterator[InMemoryMetricReader]:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    meter = provider.get_meter("test")
    METERING.start(meter)
    observe(meter)
    yield reader
    METERING.stop()
    provider.shutdown()


def points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    found: dict[str, list[Any]] = {}
    if data is None:
        return found
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                found.setdefault(metric.name, []).extend(metric.data.data_points)
    return found


def test_nothing_is_recorded_while_metrics_are_off() -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    assert not METERING.on
    appended([Fact("playbook/acme/p/runs/1", "run_started", AT)])
    with sandbox_job("run", "acme") as measured:
        assert measured(lambda control: control)(5) == 5
    assert points(reader) == {}
    provider.shutdown()


def test_run_facts_count_runs_and_their_duration(reader: InMemoryMetricReader) -> None:
    stream = "playbook/acme/p/runs/1"
    appended([Fact(stream, "run_started", AT)])
    appended([Fact(stream, "workflow_input_applied", AT), Fact(stream, "run_failed", AT + timedelta(seconds=3))])
    found = points(reader)
    assert [p.value for p in found["auto_runtime.runs.started"]] == [1]
    [ended] = found["auto_runtime.runs.ended"]
    assert dict(ended.attributes) == {
        "auto_runtime.definition.type": "computation",
        "auto_runtime.run.outcome": "failed",
    }
    [duration] = found["auto_runtime.run.duration"]
    assert duration.sum == 3.0
    assert [p.value for p in found["auto_runtime.workflow.inputs_applied"]] == [1]
    assert [p.value for p in found["auto_runtime.ledger.appends"]] == [2]
    assert [p.value for p in found["auto_runtime.ledger.records"]] == [3]


def test_a_sandbox_job_records_its_wait_ending_and_work(reader: InMemoryMetricReader) -> None:
    returned = Returned(output=1, output_json="1", output_bytes=1, work=12_000)
    with sandbox_job("run", "acme") as measured:
        assert measured(lambda _: (returned, False))(None) == (returned, False)
    found = points(reader)
    [wait] = found["auto_runtime.sandbox.queue.wait"]
    assert dict(wait.attributes) == {"auto_runtime.sandbox.kind": "run", "auto_runtime.sandbox.org_share": "75-100%"}
    [job] = found["auto_runtime.sandbox.jobs"]
    assert dict(job.attributes)["auto_runtime.sandbox.ending"] == "returned"
    [work] = found["auto_runtime.sandbox.work"]
    assert work.sum == 12_000
    assert [p.value for p in found["auto_runtime.sandbox.workers.busy"]] == [0]


def test_a_worker_counts_busy_while_its_job_runs(reader: InMemoryMetricReader) -> None:
    seen: list[int] = []

    def job(_: object) -> tuple[Returned, bool]:
        seen.extend(point.value for point in points(reader)["auto_runtime.sandbox.workers.busy"])
        return Returned(output=1, output_json="1", output_bytes=1, work=1), False

    with sandbox_job("run", "acme") as measured:
        measured(job)(None)
    assert seen == [1]
    assert [point.value for point in points(reader)["auto_runtime.sandbox.workers.busy"]] == [0]


def test_a_job_that_raises_counts_as_a_crash(reader: InMemoryMetricReader) -> None:
    def broken(_: object) -> tuple[Returned, bool]:
        raise RuntimeError("the worker broke")

    with sandbox_job("check", "acme") as measured, pytest.raises(RuntimeError):
        measured(broken)(None)
    [job] = points(reader)["auto_runtime.sandbox.jobs"]
    assert dict(job.attributes)["auto_runtime.sandbox.ending"] == "crash"


def test_labels_are_bounded() -> None:
    assert kind_of("run-id-actors['acme/finance']") == "run-id-actors"
    assert kind_of("sandbox") == "sandbox"
    assert [share_bucket(share) for share in (0.1, 0.25, 0.3, 0.6, 0.9, 1.0)] == [
        "0-25%",
        "0-25%",
        "25-50%",
        "50-75%",
        "75-100%",
        "75-100%",
    ]
    assert ending_of((OutOfWork(work=5), True)) == ("out_of_work", 5)
    assert ending_of((PastDeadline(), True)) == ("past_deadline", None)


class Echo(Actor[int, int]):
    async def receive(self, message: int) -> int:
        return message


async def test_a_full_mailbox_counts_a_refusal_and_the_depth_it_reached(reader: InMemoryMetricReader) -> None:
    ref = ActorRef[int, int]("org-actors['acme']", capacity=2)
    ref.tell(1)
    ref.tell(2)
    with pytest.raises(MailboxFull):
        ref.tell(3)
    found = points(reader)
    [refused] = found["auto_runtime.actors.mailbox.refusals"]
    assert (refused.value, dict(refused.attributes)) == (1, {"auto_runtime.actor.kind": "org-actors"})
    depths = {dict(point.attributes)["auto_runtime.actor.kind"]: point.value for point in found[HIGH_WATER]}
    assert depths["org-actors"] == 2
    assert "org-actors" not in {
        dict(point.attributes)["auto_runtime.actor.kind"] for point in points(reader).get(HIGH_WATER, [])
    }  # the high-water starts again after each collection


async def test_live_actors_are_counted_by_registry_kind(reader: InMemoryMetricReader) -> None:
    registry = Registry[str, int, int]("run-id-actors[acme/finance]", lambda _: Echo(), idle_timeout=60.0)
    async with registry.serving():
        assert await registry.ask("one", 1) == 1
        assert await registry.ask("two", 2) == 2
        live = {dict(point.attributes)["auto_runtime.actor.kind"]: point.value for point in points(reader)[LIVE]}
        assert live["run-id-actors"] == 2


def test_a_supervisor_s_restart_is_counted_by_its_name(reader: InMemoryMetricReader) -> None:
    restarted("sandbox")
    restarted("run-id-actors[acme/finance]")
    counted = {
        dict(point.attributes)["auto_runtime.supervisor"]: point.value
        for point in points(reader)["auto_runtime.supervisor.restarts"]
    }
    assert counted == {"sandbox": 1, "run-id-actors": 1}


async def test_a_real_supervisor_s_restart_is_counted(reader: InMemoryMetricReader) -> None:
    child = Crashable("flaky")
    supervisor = Supervisor(
        "metered-sup", [child.spec()], intensity=RestartIntensity(max_restarts=10, period=1.0), backoff=NO_BACKOFF
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        await child.crash()
        await trio.testing.wait_all_tasks_blocked()  # the crash handled, the second life running
        await child.running.wait()
        assert child.starts == 2
        await supervisor.stop()
    [restarts] = points(reader)["auto_runtime.supervisor.restarts"]
    assert (restarts.value, dict(restarts.attributes)) == (1, {"auto_runtime.supervisor": "metered-sup"})


READS = 40
"""Reads started at once, ten times the SQLite store's four readers."""


async def test_reads_that_find_every_reader_busy_are_counted(reader: InMemoryMetricReader, tmp_path: Path) -> None:
    """Reads started at once on the SQLite store: each decides whether it waits before any read ends (they start
    in one batch of Trio's scheduler, and a read's end comes back from its thread in a later one), so exactly
    the reads past the four readers count."""
    stream = PlaybookScope("acme", "metered").stream("runs", "r1")
    async with open_ledger(tmp_path / "ledger.db") as ledger, trio.open_nursery() as nursery:
        for _ in range(READS):
            nursery.start_soon(ledger.read_stream, stream)
    [waits] = points(reader)["auto_runtime.ledger.reader.waits"]
    assert (waits.value, dict(waits.attributes)) == (READS - READERS, {"auto_runtime.ledger.store": "sqlite"})
