"""Errors that senders of actor messages see."""

from __future__ import annotations


class MailboxFull(Exception):
    """The actor's bounded mailbox is full: the message was not accepted (retry later)."""

    def __init__(self, actor: str, capacity: int) -> None:
        super().__init__(f"actor {actor!r} is overloaded: its mailbox holds {capacity} messages already")
        self.actor = actor
        self.capacity = capacity


class ActorStoppedError(Exception):
    """The actor's address is closed, or it stopped before answering the message."""

    def __init__(self, actor: str, detail: str = "is stopped") -> None:
        super().__init__(f"actor {actor!r} {detail}")
        self.actor = actor


class AskTimeoutError(TimeoutError):
    """No reply within the ask's timeout. The message may still be handled later."""

    def __init__(self, actor: str, timeout: float) -> None:
        super().__init__(f"actor {actor!r} did not reply within {timeout}s")
        self.actor = actor
        self.timeout = timeout


class ActorCrashedError(Exception):
    """An actor's handler raised; the life ends with this error (the asker gets the original one)."""

    def __init__(self, actor: str, error: BaseException) -> None:
        super().__init__(f"actor {actor!r} crashed: {error!r}")
        self.actor = actor
        self.error = error
