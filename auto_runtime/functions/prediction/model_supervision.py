"""How the `model-processes` supervisor keeps its actors, as data (OTP's child spec and supervisor flags).

- Restart type `permanent`: an actor always comes back, whether its life crashed (its process ended with a job)
  or returned; the pool always has `PREDICTION_PROCESSES` actors.
- Back-off: 0.5 s before an actor's first restart, doubling to 10 s; a life must run 60 s before the next
  failure starts again from 0.5 s. So an actor whose every job ends its process (a model that runs out of
  memory, a caller that keeps cancelling) is restarted about 9 times a minute at most (0.5 + 1 + 2 + 4 + 8 s,
  then every 10 s), and the supervisor restarts one child at a time.
- Intensity: 12 restarts a process a minute. What a model or a caller does to its process stays below it (see
  the back-off); past it the supervisor stops every actor and fails to its parent (in the server, the root),
  as OTP's rules say.
- Shutdown: a job in flight gets 2 s to finish when the supervisor stops its actor, then the life is cancelled
  (its caller gets `failed_to_run`) and the process killed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from auto_runtime.supervision import Backoff, Restart, RestartIntensity

RESTARTS_A_PROCESS_A_MINUTE: Final = 12
MODEL_PROCESS_BACKOFF: Final = Backoff(initial=0.5, factor=2.0, maximum=10.0, reset_after=60.0)
STOP_SECONDS: Final = 2.0


@dataclass(frozen=True)
class ModelProcessesSupervision:
    """The restart type and stop budget of each actor's child spec, and the supervisor's intensity and
    back-off."""

    restart: Restart
    intensity: RestartIntensity
    backoff: Backoff
    shutdown: float = STOP_SECONDS

    @classmethod
    def for_processes(cls, processes: int) -> ModelProcessesSupervision:
        """The server's: see the module."""
        return cls(
            restart=Restart.PERMANENT,
            intensity=RestartIntensity(max_restarts=RESTARTS_A_PROCESS_A_MINUTE * processes, period=60.0),
            backoff=MODEL_PROCESS_BACKOFF,
        )
