"""Exponential back-off between restarts of the same child."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Backoff:
    """Delay before the n-th consecutive restart of a child: `initial * factor ** (n - 1)`, capped.

    A child that ran at least `reset_after` seconds before failing starts again from `initial`.
    """

    initial: float = 0.1
    factor: float = 2.0
    maximum: float = 10.0
    reset_after: float = 10.0

    def __post_init__(self) -> None:
        if self.initial < 0 or self.maximum < 0:
            raise ValueError("back-off delays must be >= 0")
        if self.factor < 1:
            raise ValueError("back-off factor must be >= 1")

    def delay(self, consecutive_failures: int) -> float:
        """Seconds to wait before restart number `consecutive_failures` (1 for the first)."""
        if consecutive_failures <= 0:
            return 0.0
        exponent = min(consecutive_failures - 1, 64)
        return min(self.maximum, self.initial * self.factor**exponent)


NO_BACKOFF = Backoff(initial=0.0, maximum=0.0)
