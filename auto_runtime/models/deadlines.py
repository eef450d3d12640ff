"""Deadlines and retries of one model call (reasoning-format §4.6)."""

from __future__ import annotations

from dataclasses import dataclass

BASE_DEADLINE_SECONDS = 60.0
SECONDS_PER_OUTPUT_TOKEN = 0.025
LONGEST_HONOURED_RETRY_AFTER = 60.0


def call_deadline_seconds(max_output_tokens: int) -> float:
    """60 s + 25 ms per output token (85.6 s at the default 1,024); it covers the call's retries."""
    return BASE_DEADLINE_SECONDS + SECONDS_PER_OUTPUT_TOKEN * max_output_tokens


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Up to two more attempts after a retried failure, after 2 s then 4 s.

    A provider's ``retry-after-ms``/``retry-after`` under 60 s replaces that wait. Tests may shorten the
    waits; the rule of what is retried does not change.
    """

    waits: tuple[float, ...] = (2.0, 4.0)

    def wait_before(self, attempt: int, asked: float | None) -> float | None:
        """The wait before attempt ``attempt`` (2 for the first retry), or None when no attempt is left."""
        index = attempt - 2
        if index < 0 or index >= len(self.waits):
            return None
        if asked is not None and asked < LONGEST_HONOURED_RETRY_AFTER:
            return asked
        return self.waits[index]
