"""Supervisor behaviour: strategies, restart types, intensity, back-off, shutdown, logging.

Time-dependent tests take pytest-trio's `autojump_clock` (a `trio.testing.MockClock`), so virtual time
is deterministic and the tests are fast.
"""

from __future__ import annotations

import logging
import math

import pytest
import trio
import trio.testing

from auto_runtime.supervision import (
    NO_BACKOFF,
    Backoff,
    ChildContext,
    ChildSpec,
    Restart,
    RestartIntensity,
    Strategy,
    Supervisor,
    SupervisorFailedError,
    SupervisorNotRunningError,
)
from auto_runtime.supervision.child_spec import StartFunction

GENEROUS = RestartIntensity(max_restarts=100, period=1.0)


class Recorder:
    """Child start functions that record their lifecycle in one shared event list."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.crash_next: set[str] = set()
        self.crashed: dict[str, trio.Event] = {}

    def spec(self, name: str, restart: Restart = Restart.PERMANENT, shutdown: float = 1.0) -> ChildSpec:
        return ChildSpec(name=name, start=self._child(name), restart=restart, shutdown=shutdown)

    def _child(self, name: str) -> StartFunction:
        async def run(ctx: ChildContext) -> None:
            self.events.append(f"start {name}")
            ctx.started()
            try:
                await ctx.wait_stop_requested()
            finally:
                self.events.append(f"stop {name}")

        return run

    def starts(self, name: str) -> int:
        return self.events.count(f"start {name}")


class Crashable:
    """A child that runs until `crash()` makes it raise, or `finish()` makes it return."""

    def __init__(self, name: str, restart: Restart = Restart.PERMANENT, events: list[str] | None = None):
        self.name = name
        self.restart = restart
        self.events = events if events is not None else []
        self.starts = 0
        self._outcome: trio.MemorySendChannel[str] | None = None
        self.running = trio.Event()

    def spec(self) -> ChildSpec:
        return ChildSpec(name=self.name, start=self.run, restart=self.restart, shutdown=1.0)

    async def run(self, ctx: ChildContext) -> None:
        self.starts += 1
        self.events.append(f"start {self.name}")
        send, receive = trio.open_memory_channel[str](1)
        self._outcome = send
        ctx.started()
        self.running.set()
        try:
            with trio.CancelScope() as scope:
                ctx.on_stop_requested(scope.cancel)
                outcome = await receive.receive()
                if outcome == "crash":
                    raise RuntimeError(f"{self.name} crashed on purpose")
        finally:
            self.running = trio.Event()
            self.events.append(f"stop {self.name}")

    async def crash(self) -> None:
        await self.running.wait()
        assert self._outcome is not None
        self._outcome.send_nowait("crash")

    async def finish(self) -> None:
        await self.running.wait()
        assert self._outcome is not None
        self._outcome.send_nowait("finish")


async def test_one_for_one_restarts_only_the_failed_child_and_never_cancels_siblings(
    autojump_clock: trio.testing.MockClock,
) -> None:
    a, b, c = Crashable("a"), Crashable("b"), Crashable("c")
    supervisor = Supervisor("sup", [a.spec(), b.spec(), c.spec()], intensity=GENEROUS, backoff=NO_BACKOFF)
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        await b.crash()
        await trio.sleep(0.1)
        await b.running.wait()
        assert (a.starts, b.starts, c.starts) == (1, 2, 1)
        assert supervisor.children == ["a", "b", "c"]
        await supervisor.stop()


async def test_one_for_all_stops_the_others_in_reverse_order_then_restarts_all_in_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    events: list[str] = []
    a, b, c = (Crashable(name, events=events) for name in "abc")
    supervisor = Supervisor("sup", [a.spec(), b.spec(), c.spec()], strategy=Strategy.ONE_FOR_ALL, intensity=GENEROUS)
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        events.clear()
        await b.crash()
        await trio.sleep(1)
        assert events == ["stop b", "stop c", "stop a", "start a", "start b", "start c"]
        await supervisor.stop()


async def test_rest_for_one_restarts_the_failed_child_and_those_started_after_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    events: list[str] = []
    a, b, c, d = (Crashable(name, events=events) for name in "abcd")
    supervisor = Supervisor(
        "sup",
        [a.spec(), b.spec(), c.spec(), d.spec()],
        strategy=Strategy.REST_FOR_ONE,
        intensity=GENEROUS,
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        events.clear()
        await b.crash()
        await trio.sleep(1)
        assert events == ["stop b", "stop d", "stop c", "start b", "start c", "start d"]
        assert a.starts == 1
        await supervisor.stop()


async def test_transient_child_is_not_restarted_after_a_normal_exit_but_is_after_an_error(
    autojump_clock: trio.testing.MockClock,
) -> None:
    transient = Crashable("t", Restart.TRANSIENT)
    supervisor = Supervisor("sup", [transient.spec()], intensity=GENEROUS)
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        await transient.crash()
        await trio.sleep(1)
        assert transient.starts == 2
        await transient.finish()
        await trio.sleep(1)
        assert transient.starts == 2
        assert supervisor.children == []
        assert supervisor.specs == []
        await supervisor.stop()


async def test_permanent_child_is_restarted_after_a_normal_exit_and_temporary_never(
    autojump_clock: trio.testing.MockClock,
) -> None:
    permanent = Crashable("p", Restart.PERMANENT)
    temporary = Crashable("tmp", Restart.TEMPORARY)
    supervisor = Supervisor("sup", [permanent.spec(), temporary.spec()], intensity=GENEROUS)
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        await permanent.finish()
        await temporary.crash()
        await trio.sleep(1)
        assert (permanent.starts, temporary.starts) == (2, 1)
        assert supervisor.children == ["p"]
        await supervisor.stop()


async def test_exceeding_the_restart_intensity_stops_every_child_and_escalates(
    autojump_clock: trio.testing.MockClock,
) -> None:
    events: list[str] = []
    a, b = Crashable("a", events=events), Crashable("b", events=events)
    supervisor = Supervisor("sup", [a.spec(), b.spec()])
    assert supervisor.intensity == RestartIntensity(max_restarts=1, period=5.0)
    with pytest.raises(ExceptionGroup) as group:
        async with trio.open_nursery() as nursery:
            await nursery.start(supervisor.run)
            await b.crash()
            await trio.sleep(1)
            await b.crash()
            await trio.sleep(1)
    [failure] = group.value.exceptions
    assert isinstance(failure, SupervisorFailedError)
    assert failure.child == "b"
    assert isinstance(failure.error, RuntimeError)
    assert events[-1] == "stop a"
    assert not supervisor.running


async def test_restarts_spread_beyond_the_period_do_not_escalate(
    autojump_clock: trio.testing.MockClock,
) -> None:
    child = Crashable("c")
    supervisor = Supervisor("sup", [child.spec()])
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        for _ in range(3):
            await child.crash()
            await trio.sleep(6)
        assert child.starts == 4
        await supervisor.stop()


async def test_a_failed_nested_supervisor_is_restarted_by_its_parent(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    worker = Crashable("worker")
    inner = Supervisor("inner", [worker.spec()], intensity=RestartIntensity(0, 5.0))
    outer = Supervisor("outer", [inner.child_spec()], intensity=GENEROUS)
    caplog.set_level(logging.WARNING, logger="auto_runtime.supervision")
    async with trio.open_nursery() as nursery:
        await nursery.start(outer.run)
        await worker.crash()
        await trio.sleep(1)
        assert worker.starts == 2
        assert outer.children == ["inner"]
        assert inner.children == ["worker"]
        await outer.stop()
    restart_lines = [r.getMessage() for r in caplog.records if "restarting child inner" in r.getMessage()]
    assert len(restart_lines) == 1
    assert "SupervisorFailedError" in restart_lines[0]


async def test_every_restart_is_logged_with_the_child_name_and_the_error(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    child = Crashable("ledger-writer")
    supervisor = Supervisor("root", [child.spec()], intensity=GENEROUS)
    caplog.set_level(logging.WARNING, logger="auto_runtime.supervision")
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        await child.crash()
        await trio.sleep(1)
        await child.crash()
        await trio.sleep(1)
        await supervisor.stop()
    lines = [r.getMessage() for r in caplog.records if r.name == "auto_runtime.supervision.supervisor"]
    restarts = [line for line in lines if "restarting child ledger-writer" in line]
    assert len(restarts) == 2
    assert all("ledger-writer crashed on purpose" in line for line in restarts)


async def test_back_off_grows_exponentially_between_consecutive_restarts(
    autojump_clock: trio.testing.MockClock,
) -> None:
    restart_times: list[float] = []

    async def crash_at_once(ctx: ChildContext) -> None:
        restart_times.append(trio.current_time())
        raise RuntimeError("boom")

    supervisor = Supervisor(
        "sup",
        [ChildSpec("flaky", crash_at_once)],
        intensity=RestartIntensity(max_restarts=4, period=100.0),
        backoff=Backoff(initial=1.0, factor=2.0, maximum=5.0, reset_after=100.0),
    )
    start = trio.current_time()
    with pytest.raises(SupervisorFailedError):
        await supervisor.run()
    gaps = [round(b - a, 6) for a, b in zip([start, *restart_times], restart_times, strict=False)][1:]
    assert gaps == [1.0, 2.0, 4.0, 5.0]


async def test_stop_stops_children_in_reverse_start_order_including_dynamic_ones(
    autojump_clock: trio.testing.MockClock,
) -> None:
    recorder = Recorder()
    supervisor = Supervisor("root", [recorder.spec("a"), recorder.spec("b")])
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        await supervisor.start_child(recorder.spec("c"))
        with pytest.raises(ValueError, match="already has a child named"):
            await supervisor.start_child(recorder.spec("a"))
        await supervisor.stop()
    assert recorder.events == ["start a", "start b", "start c", "stop c", "stop b", "stop a"]
    with pytest.raises(SupervisorNotRunningError):
        await supervisor.start_child(recorder.spec("d"))


async def test_terminate_child_stops_and_forgets_it(autojump_clock: trio.testing.MockClock) -> None:
    recorder = Recorder()
    supervisor = Supervisor("root", [recorder.spec("a"), recorder.spec("b")])
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        await supervisor.terminate_child("a")
        assert supervisor.children == ["b"]
        assert [spec.name for spec in supervisor.specs] == ["b"]
        await supervisor.stop()
    assert recorder.events == ["start a", "start b", "stop a", "stop b"]


async def test_shutdown_timeout_is_honoured_then_the_child_is_cancelled(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: dict[str, float] = {}

    def note_stop_request() -> None:
        seen["asked"] = trio.current_time()

    async def stubborn(ctx: ChildContext) -> None:
        ctx.on_stop_requested(note_stop_request)
        ctx.started()
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            seen["cancelled"] = trio.current_time()
            raise

    async def graceful(ctx: ChildContext) -> None:
        ctx.started()
        await ctx.wait_stop_requested()
        await trio.sleep(2)
        seen["graceful done"] = trio.current_time()

    supervisor = Supervisor(
        "sup", [ChildSpec("graceful", graceful, shutdown=10), ChildSpec("stubborn", stubborn, shutdown=3)]
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        stop_at = trio.current_time()
        await supervisor.stop()
    assert seen["asked"] == stop_at
    assert seen["cancelled"] == stop_at + 3
    assert seen["graceful done"] == stop_at + 3 + 2


async def test_a_child_without_a_stop_handler_is_cancelled_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def plain(ctx: ChildContext) -> None:
        ctx.started()
        await trio.sleep_forever()

    supervisor = Supervisor("sup", [ChildSpec("plain", plain, shutdown=30)])
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        before = trio.current_time()
        await supervisor.stop()
        assert trio.current_time() == before


async def test_root_supervisor_runs_in_a_nursery_and_cancelling_the_nursery_stops_everything() -> None:
    recorder = Recorder()
    supervisor = Supervisor("root", [recorder.spec("a")])
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        nursery.cancel_scope.cancel()
    assert recorder.events == ["start a", "stop a"]
    assert not supervisor.running


async def test_a_child_that_ends_before_reporting_started_does_not_block_start_child(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def quick(ctx: ChildContext) -> None:
        return

    supervisor = Supervisor("sup", intensity=GENEROUS)
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        await supervisor.start_child(ChildSpec("quick", quick, restart=Restart.TEMPORARY))
        await trio.sleep(1)
        assert supervisor.children == []
        await supervisor.stop()


def test_child_spec_validates() -> None:
    async def nothing(ctx: ChildContext) -> None:
        return

    with pytest.raises(ValueError, match="name"):
        ChildSpec("", nothing)
    with pytest.raises(ValueError, match="shutdown"):
        ChildSpec("x", nothing, shutdown=-1)
    assert ChildSpec("x", nothing, shutdown=math.inf).shutdown == math.inf
