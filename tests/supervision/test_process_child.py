"""Process children: real tiny Python processes, restarted, limited, health-checked, killed on timeout.

Real clock (a mock clock would jump while a process works); timeouts only bound failures.
"""

from __future__ import annotations

import logging
import resource
import sys

import pytest
import trio

from auto_runtime.supervision import (
    NO_BACKOFF,
    ChildContext,
    ProcessChild,
    ProcessExitedError,
    ProcessTimeoutError,
    Restart,
    RestartIntensity,
    Supervisor,
)
from tests.supervision.polling import wait_until

GENEROUS = RestartIntensity(max_restarts=10, period=1.0)

ECHO = """
import sys
print("ready", flush=True)
for line in sys.stdin:
    command = line.strip()
    if command == "crash":
        sys.exit(3)
    if command == "hang":
        continue
    if command == "limit":
        import resource
        print(resource.getrlimit(resource.RLIMIT_DATA)[0], flush=True)
        continue
    if command == "hog":
        try:
            block = bytearray(1024 * 1024 * 1024)
            print("allocated", flush=True)
        except MemoryError:
            print("memory error", flush=True)
        continue
    print("echo " + command, flush=True)
"""

IGNORES_TERM = """
import signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", flush=True)
while True:
    time.sleep(1)
"""


def echo_child(name: str = "model", **options: object) -> ProcessChild:
    return ProcessChild(name, [sys.executable, "-c", ECHO], ready_line=b"ready", **options)  # type: ignore[arg-type]


def supervisor_of(*children: ProcessChild, shutdown: float = 5.0) -> Supervisor:
    return Supervisor(
        "models",
        [child.child_spec(shutdown=shutdown) for child in children],
        intensity=GENEROUS,
        backoff=NO_BACKOFF,
    )


async def test_a_crashing_process_child_is_restarted(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="auto_runtime.supervision")
    child = echo_child()
    supervisor = supervisor_of(child)
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        assert await child.exchange(b"hello", timeout=10) == b"echo hello"
        first_pid = child.pid
        await child.write_line(b"crash")
        await wait_until(lambda: child.starts == 2 and child.ready)
        assert child.pid != first_pid
        assert await child.exchange(b"again", timeout=10) == b"echo again"
        await supervisor.stop()
    restarts = [r.getMessage() for r in caplog.records if "restarting child model" in r.getMessage()]
    assert len(restarts) == 1
    assert "exited with status 3" in restarts[0]


async def test_the_data_limit_is_set_before_the_command_runs() -> None:
    limit = 512 * 1024 * 1024
    child = echo_child(memory_limit=limit)
    supervisor = supervisor_of(child)
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        assert int(await child.exchange(b"limit", timeout=10)) == limit
        assert await child.exchange(b"hog", timeout=10) == b"memory error"
        await supervisor.stop()
    assert resource.getrlimit(resource.RLIMIT_DATA)[0] != limit


async def test_an_exchange_that_times_out_kills_the_process_and_it_is_restarted() -> None:
    child = echo_child()
    supervisor = supervisor_of(child)
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        with pytest.raises(ProcessTimeoutError):
            await child.exchange(b"hang", timeout=0.2)
        await wait_until(lambda: child.starts == 2 and child.ready)
        assert await child.exchange(b"fresh", timeout=10) == b"echo fresh"
        await supervisor.stop()


async def test_a_failing_health_check_kills_the_process_and_it_is_restarted() -> None:
    verdicts = ["sick"]

    async def health(process: ProcessChild) -> None:
        if verdicts and verdicts.pop() == "sick":
            raise RuntimeError("no heartbeat")
        assert await process.exchange(b"ping", timeout=5) == b"echo ping"

    child = echo_child(health_check=health, health_interval=0.05, health_timeout=5)
    supervisor = supervisor_of(child)
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        await wait_until(lambda: child.starts == 2 and child.ready)
        assert await child.exchange(b"ok", timeout=10) == b"echo ok"
        await supervisor.stop()


async def test_stop_terminates_gracefully_and_kills_a_process_that_ignores_sigterm() -> None:
    polite = echo_child("polite")
    stubborn = ProcessChild("stubborn", [sys.executable, "-c", IGNORES_TERM], ready_line=b"ready")
    supervisor = supervisor_of(polite, stubborn, shutdown=0.3)
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        assert polite.ready
        assert stubborn.ready
        with trio.fail_after(10):
            await supervisor.stop()
    assert polite.pid is None
    assert stubborn.pid is None
    assert (polite.starts, stubborn.starts) == (1, 1)


async def test_a_transient_process_that_exits_normally_is_not_restarted() -> None:
    child = ProcessChild("once", [sys.executable, "-c", "print('done')"])
    supervisor = Supervisor("sup", [child.child_spec(restart=Restart.TRANSIENT)])
    async with trio.open_nursery() as nursery:
        await nursery.start(supervisor.run)
        await wait_until(lambda: not supervisor.children)
        assert child.starts == 1
        await supervisor.stop()


async def test_a_process_that_dies_before_its_ready_line_fails_the_start() -> None:
    child = ProcessChild("broken", [sys.executable, "-c", "import sys; sys.exit(2)"], ready_line=b"ready")
    errors: list[BaseException] = []

    async def run_once() -> None:
        try:
            await child.run(ChildContext("broken", lambda: None))
        except ProcessExitedError as error:
            errors.append(error)

    with trio.fail_after(10):
        await run_once()
    assert isinstance(errors[0], ProcessExitedError)
    assert errors[0].returncode == 2
