"""The base of every message to a run's actor, and the answer a refused one gets.

Each message is a frozen dataclass deriving `RunMessage[Reply]`, where `Reply` is what its handler answers;
`Runs.ask` is typed by it. The messages of each type live beside this module (`workflow_messages`,
`interaction_messages`, `prediction_messages`, `request_messages`); a message with no handler in the run
actors' table is refused (`handlers.UnknownRunMessage`), never guessed at.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

R = TypeVar("R", covariant=True)


class RunMessage(Generic[R]):
    """A message to one run's actor, answered with an `R`."""

    __slots__ = ()


@dataclass(frozen=True)
class Refused:
    """A message's error the sender expects (a `Rejection`, a `LedgerError`, a `RunRefusal`), answered rather than
    raised so the run's actor lives on; `Runs.ask` raises it in the sender."""

    error: Exception


class RunRefusal(Exception):
    """Base of the errors a run's handler raises for its sender, not as a fault of the actor (an unknown run,
    a run that kept moving): the actor answers them `Refused` and lives on."""
