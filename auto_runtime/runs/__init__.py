"""The runs room: every change to a run's stream is a typed message to the run's actor, its one writer.

Senders (HTTP and MCP handlers, the timer loop, deliveries, reply reads, prediction due handlers, cancel requests)
ask `Runs`; each type's host adds a handler per message type to `Runs.handlers`; a handler decides through its
type's pure `RunDecider` and the run's `RunWriter` appends. No module outside this room appends to a run's
stream or retries a version clash (`tests/architecture/test_run_writers.py` keeps it so).
"""

from auto_runtime.runs.actor import RunActor, RunKey
from auto_runtime.runs.deciders import HistoryDecider, RunDecider, RunHistory
from auto_runtime.runs.decision import NO_DUE_WORK, Decision, Loaded, Written
from auto_runtime.runs.handlers import RunHandlers, UnknownRunMessage
from auto_runtime.runs.messages import Refused, RunMessage, RunRefusal
from auto_runtime.runs.registry import RUN_ACTORS_INTENSITY, RunRegistries, RunRegistry, Runs, run_actors
from auto_runtime.runs.writer import ATTEMPTS, RunKeptMoving, RunWriter

__all__ = [
    "ATTEMPTS",
    "NO_DUE_WORK",
    "RUN_ACTORS_INTENSITY",
    "Decision",
    "HistoryDecider",
    "Loaded",
    "Refused",
    "RunActor",
    "RunDecider",
    "RunHandlers",
    "RunHistory",
    "RunKeptMoving",
    "RunKey",
    "RunMessage",
    "RunRefusal",
    "RunRegistries",
    "RunRegistry",
    "RunWriter",
    "Runs",
    "UnknownRunMessage",
    "Written",
    "run_actors",
]
