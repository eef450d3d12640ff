"""Restart intensity: how many restarts a supervisor allows in a sliding time window."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RestartIntensity:
    """At most `max_restarts` restarts within any `period` seconds (Erlang's intensity and period).

    The default, 1 restart in 5 s, is OTP's: a second failure within 5 s makes the supervisor fail.
    """

    max_restarts: int = 1
    period: float = 5.0

    def __post_init__(self) -> None:
        if self.max_restarts < 0:
            raise ValueError("max_restarts must be >= 0")
        if self.period <= 0:
            raise ValueError("period must be > 0 seconds")


class RestartWindow:
    """The restart times a supervisor has made, kept only as long as the window needs them."""

    __slots__ = ("_intensity", "_times")

    def __init__(self, intensity: RestartIntensity) -> None:
        self._intensity = intensity
        self._times: deque[float] = deque()

    def admit(self, now: float) -> bool:
        """Record a restart at `now`; False when it would exceed the intensity (nothing is recorded)."""
        horizon = now - self._intensity.period
        while self._times and self._times[0] <= horizon:
            self._times.popleft()
        if len(self._times) >= self._intensity.max_restarts:
            return False
        self._times.append(now)
        return True

    def clear(self) -> None:
        self._times.clear()
