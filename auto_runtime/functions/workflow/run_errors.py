"""What applying an input to a workflow run can end in besides a transition."""

from __future__ import annotations

from auto_runtime.runs import RunRefusal


class RunStoreConflict(RunRefusal):
    """Other appliers kept winning the run's stream; nothing of this input was appended."""


class TransitionTooLarge(ValueError):
    """The input recorded more facts than one append takes (`MAX_RECORDS_PER_APPEND`); nothing was appended.

    The engine moves up to `TASKS_PER_INPUT` (100) tasks per input, each with a step event, while an append
    takes at most 64 records: until the two limits agree, an input that moves more than about 60 tasks
    cannot be recorded, and the run stays where it was."""


class UnknownRun(RunRefusal, LookupError):
    """The playbook has no workflow run under this id."""
