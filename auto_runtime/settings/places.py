"""Where a value was written, for the line that refuses it.

A key path is the chain of mapping keys and list indexes from a setting down to one value. A place
turns a key path into the start of an error line: ``file:line:column: key.path`` for the
configuration file, ``VARIABLE: key.path`` for the environment. Neither ever shows a value.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

KeyPath = tuple[str | int, ...]


def dotted(path: KeyPath) -> str:
    """``("tool_servers", "graph", "args", 0)`` as ``tool_servers.graph.args[0]``."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text


class Place(Protocol):
    def where(self, path: KeyPath, *, at_key: bool = False) -> str:
        """The start of the error line for the value at ``path`` (or, with ``at_key``, its key)."""
        ...


@dataclass(frozen=True, slots=True)
class Position:
    """A 1-based line and column."""

    line: int
    column: int


@dataclass(frozen=True, slots=True)
class FilePlace:
    """Places in the configuration file; paths start with the file's top-level key."""

    file_name: str
    value_positions: Mapping[KeyPath, Position]
    key_positions: Mapping[KeyPath, Position] = field(default_factory=dict)

    def where(self, path: KeyPath, *, at_key: bool = False) -> str:
        position = self._position(path, at_key)
        return f"{self.file_name}:{position.line}:{position.column}: {dotted(path)}"

    def _position(self, path: KeyPath, at_key: bool) -> Position:
        if at_key and path in self.key_positions:
            return self.key_positions[path]
        for length in range(len(path), -1, -1):
            position = self.value_positions.get(path[:length])
            if position is not None:
                return position
        return Position(1, 1)


@dataclass(frozen=True, slots=True)
class EnvironmentPlace:
    """Places inside the JSON value of one environment variable; paths start inside the value.

    Paths may also start with the file key of the same name, as file paths do; it is dropped.
    """

    variable: str

    def where(self, path: KeyPath, *, at_key: bool = False) -> str:
        if path and path[0] == self.variable.lower():
            path = path[1:]
        return f"{self.variable}: {dotted(path)}" if path else self.variable
