"""The decider's tables of handlers: a handler found by the exact type of what it handles, never by a name.

Every table is closed: a value of a type the table does not hold (a task run of an unknown kind, an input the
engine does not take) is an engine fault, refused at once with `NoHandler` rather than skipped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

H = TypeVar("H")


class NoHandler(TypeError):
    """The engine has no handler for a value of this type."""


def handler_for(table: Mapping[type, H], value: object, what: str) -> H:
    """The handler `table` holds for the type of `value` (`what` names what the table handles)."""
    found = table.get(type(value))
    if found is None:
        known = ", ".join(sorted(kind.__name__ for kind in table))
        raise NoHandler(
            f"the workflow engine has no handler for the {what} {type(value).__name__} (it handles {known})"
        )
    return found
