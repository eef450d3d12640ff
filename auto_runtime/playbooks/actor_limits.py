"""The bounds every keyed actor of the playbooks supervisor is kept within (settings `PLAYBOOK_IDLE_TIME`,
`PLAYBOOK_ACTORS_LIVE` and `ACTOR_MAILBOX_CAPACITY`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from auto_runtime.actors import DEFAULT_MAILBOX_CAPACITY
from auto_runtime.supervision import RestartIntensity

DEFAULT_IDLE_SECONDS = 60.0
DEFAULT_MAX_LIVE = 10_000
DEFAULT_INTENSITY = RestartIntensity(max_restarts=10, period=10.0)
"""Crashed or failed actor lives one registry takes in 10 s before it fails for its supervisor to restart
(OTP's 1 in 5 s is a bound for one child; a registry restarts thousands of keys' actors)."""


@dataclass(frozen=True)
class ActorLimits:
    """`idle_seconds`: an actor with nothing queued and nothing in flight passivates after this long.
    `max_live`: the soft bound on live actors of one registry (the least recently used idle ones go first).
    `capacity`: each actor's mailbox; a message past it is refused at once (`MailboxFull` → `unavailable`).
    `intensity`: the registry's restart intensity, past which it fails to its supervisor."""

    idle_seconds: float = DEFAULT_IDLE_SECONDS
    max_live: int = DEFAULT_MAX_LIVE
    capacity: int = DEFAULT_MAILBOX_CAPACITY
    intensity: RestartIntensity = field(default=DEFAULT_INTENSITY)
