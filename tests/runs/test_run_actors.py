"""The run actors' table of handlers: a message is handled by its exact type's handler, in the run's actor, and
a message no handler takes is refused (as temporalio refuses an unknown job), never guessed at."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from auto_runtime.ledger import Ledger
from auto_runtime.playbooks.playbook_host import PlaybookActors
from auto_runtime.runs import RunHandlers, RunMessage, RunWriter, UnknownRunMessage
from tests.runs.conftest import SCOPE

RUN = "0193e0a0-0000-7000-8000-0000000000bb"


@dataclass(frozen=True)
class Ping(RunMessage[str]):
    text: str


@dataclass(frozen=True)
class Unhandled(RunMessage[str]):
    pass


@dataclass(frozen=True)
class LoudPing(Ping):
    """A subtype of a handled message is a type of its own: the table is keyed by exact type."""


async def pong(writer: RunWriter, message: Ping) -> str:
    return f"{writer.scope.org}/{writer.scope.playbook}/{writer.run_id}: {message.text}"


@pytest.fixture
async def host(ledger: Ledger) -> AsyncIterator[PlaybookActors]:
    handlers = RunHandlers()
    handlers.add(Ping, pong)
    actors = PlaybookActors(ledger, {}, handlers=handlers)
    async with actors.serving():
        yield actors


async def test_a_message_is_answered_by_its_type_s_handler_in_the_run_s_actor(host: PlaybookActors) -> None:
    assert await host.runs.ask(SCOPE, RUN, Ping("hello")) == f"acme/finance/{RUN}: hello"
    assert host.runs.spawns == 1 and host.runs.restarts == 0


@pytest.mark.parametrize("message", [Unhandled(), LoudPing("hello")])
async def test_a_message_no_handler_takes_is_refused_and_the_actor_lives_on(
    host: PlaybookActors, message: RunMessage[str]
) -> None:
    with pytest.raises(UnknownRunMessage, match=type(message).__name__):
        await host.runs.ask(SCOPE, RUN, message)
    assert host.runs.restarts == 0
    assert await host.runs.ask(SCOPE, RUN, Ping("still here")) == f"acme/finance/{RUN}: still here"


def test_a_message_type_is_handled_once() -> None:
    handlers = RunHandlers()
    handlers.add(Ping, pong)
    with pytest.raises(ValueError, match="Ping"):
        handlers.add(Ping, pong)
