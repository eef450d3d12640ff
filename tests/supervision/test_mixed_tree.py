"""One supervision tree owns Trio actors, thread actors, OS processes and nested supervisors alike."""

from __future__ import annotations

import sys

import pytest
import trio

from auto_runtime.actors import Actor, ActorRef, ThreadActor, ThreadActorRef
from auto_runtime.supervision import (
    NO_BACKOFF,
    ChildContext,
    ChildSpec,
    ProcessChild,
    RestartIntensity,
    Strategy,
    Supervisor,
)
from tests.supervision.polling import wait_until

ECHO = 'import sys\nprint("ready", flush=True)\nfor line in sys.stdin:\n    print(line.strip(), flush=True)\n'


class Fragile(Actor[str, str]):
    async def receive(self, message: str) -> str:
        if message == "crash":
            raise RuntimeError("trio actor crashed")
        return message.upper()


class Blocking(ThreadActor[str, str]):
    def receive(self, message: str) -> str:
        return message[::-1]


async def test_one_for_all_restarts_every_kind_of_child_and_stop_is_reverse_order() -> None:
    events: list[str] = []
    trio_ref = ActorRef[str, str]("trio-actor")
    thread_ref = ThreadActorRef[str, str]("thread-actor")
    model = ProcessChild("model", [sys.executable, "-c", ECHO], ready_line=b"ready")

    async def watcher(ctx: ChildContext) -> None:
        events.append("start watcher")
        ctx.started()
        try:
            await ctx.wait_stop_requested()
        finally:
            events.append("stop watcher")

    inner = Supervisor("inner", [ChildSpec("watcher", watcher)])
    root = Supervisor(
        "root",
        [
            thread_ref.child_spec(Blocking),
            model.child_spec(),
            inner.child_spec(),
            trio_ref.child_spec(Fragile),
        ],
        strategy=Strategy.ONE_FOR_ALL,
        intensity=RestartIntensity(5, 1.0),
        backoff=NO_BACKOFF,
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(root.run)
        assert root.children == ["thread-actor", "model", "inner", "trio-actor"]
        assert await trio_ref.ask("hi", timeout=10) == "HI"
        assert await thread_ref.ask("abc", timeout=10) == "cba"
        assert await model.exchange(b"ping", timeout=10) == b"ping"
        first_pid = model.pid

        with pytest.raises(RuntimeError, match="trio actor crashed"):
            await trio_ref.ask("crash", timeout=10)
        await wait_until(lambda: model.starts == 2 and model.ready and events.count("start watcher") == 2)
        assert model.pid != first_pid
        assert await trio_ref.ask("again", timeout=10) == "AGAIN"
        assert await thread_ref.ask("xyz", timeout=10) == "zyx"
        assert await model.exchange(b"pong", timeout=10) == b"pong"
        with trio.fail_after(10):
            await root.stop()
    assert events == ["start watcher", "stop watcher", "start watcher", "stop watcher"]
    assert model.pid is None
    assert not root.running
