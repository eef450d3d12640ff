"""The run actors' table of handlers: one handler per message type, filled at start by each type's host.

A handler gets the run's writer and the message and answers the message's reply. It may call the writer more
than once (a run that finishes within its request records its start, its tool calls and its ending), but it
never appends to the run's stream any other way. The table is keyed by the message's exact type, as
temporalio's workflow instance keys its jobs: an unknown type is refused, and a type is handled once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from auto_runtime.runs.messages import RunMessage, RunRefusal
from auto_runtime.runs.writer import RunWriter

M = TypeVar("M", bound=RunMessage[Any])

Handler = Callable[[RunWriter, Any], Awaitable[Any]]


class UnknownRunMessage(RunRefusal, TypeError):
    """A message of a type no handler was added for."""


class RunHandlers:
    """Message type → handler."""

    def __init__(self) -> None:
        self._table: dict[type[RunMessage[Any]], Handler] = {}

    def add(self, message_type: type[M], handler: Callable[[RunWriter, M], Awaitable[Any]]) -> None:
        """Handle `message_type` with `handler`; a type is handled once."""
        if message_type in self._table:
            raise ValueError(f"the run message {message_type.__name__} has a handler already")
        self._table[message_type] = handler

    def handler_for(self, message: RunMessage[Any]) -> Handler:
        handler = self._table.get(type(message))
        if handler is None:
            raise UnknownRunMessage(f"no handler takes the run message {type(message).__name__}")
        return handler
