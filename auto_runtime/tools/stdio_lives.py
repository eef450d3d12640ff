"""How the lives of a stdio tool server's process ended, and the words of a server that did not answer.

A server whose process fails to start is told apart from one that cannot be reached (issue 30.7): `search`,
`introspect` and `execute` say that its process exited with its status before it answered, with the last line
it wrote to stderr (scrubbed, cut at `STDERR_WORDS` characters); that its command could not be run; or that it
started but did not answer within the connect limit.

`WatchedChild` is a `ProcessChild` that remembers, from its own `run`, how its newest life ended and whether
the newest spawn failed; it adds nothing else. Concurrency rules: everything on the Trio thread.
"""

from __future__ import annotations

from dataclasses import dataclass

from auto_runtime.supervision import ChildContext, ProcessChild, ProcessExitedError

STDERR_WORDS = 200
"""The characters of the last stderr line the words of a server that did not answer show."""


@dataclass(frozen=True)
class LifeEnd:
    """The life (1 for the first process) that ended, and its exit status (negative: the signal that ended it)."""

    life: int
    status: int


class WatchedChild(ProcessChild):
    """A `ProcessChild` that keeps how its newest life ended (`last_end`) and its newest spawn's failure."""

    last_end: LifeEnd | None = None
    _spawn_error: tuple[int, OSError] | None = None

    async def run(self, ctx: ChildContext) -> None:
        before = self.starts
        try:
            await super().run(ctx)
        except ProcessExitedError as exited:
            self.last_end = LifeEnd(self.starts, exited.returncode)
            raise
        except OSError as error:
            if self.starts == before:  # the process was never spawned
                self._spawn_error = (before, error)
            raise
        if self.starts > before:
            self.last_end = LifeEnd(self.starts, 0)

    @property
    def spawn_failure(self) -> OSError | None:
        """Why the newest spawn failed, when it did (no process was spawned since)."""
        found = self._spawn_error
        return found[1] if found is not None and found[0] == self.starts else None


def could_not_start(name: str, error: OSError) -> str:
    if isinstance(error, FileNotFoundError):
        why = "its command was not found"
    elif isinstance(error, PermissionError):
        why = "its command may not be run"
    else:
        why = f"its command could not be run ({error.strerror or type(error).__name__})"
    return f"The tool server {name} could not be started: {why}."


def ended_before_answering(name: str, status: int, last_line: str) -> str:
    how = f"exited with status {status}" if status >= 0 else f"was ended by signal {-status}"
    return f"The tool server {name} {how} before it answered{_last(last_line)}"


def did_not_answer(name: str, seconds: float, last_line: str) -> str:
    return f"The tool server {name} started, but did not answer within {seconds:g} seconds{_last(last_line)}"


def _last(line: str) -> str:
    """`: <line>` cut at `STDERR_WORDS` characters (the line comes scrubbed), or `.` when there is none."""
    return f": {line[:STDERR_WORDS]}" if line else "."
