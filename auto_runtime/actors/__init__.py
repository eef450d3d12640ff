"""Actors: Trio-task actors with bounded mailboxes, pykka thread actors bridged to Trio, keyed registries."""

from auto_runtime.actors.errors import ActorCrashedError, ActorStoppedError, AskTimeoutError, MailboxFull
from auto_runtime.actors.registry import KeyedRef, Registry, RegistryFailedError
from auto_runtime.actors.thread_actor import STACK_SIZE_LOCK, THREAD_STACK_SIZE, ThreadActor, ThreadActorRef
from auto_runtime.actors.trio_actor import (
    DEFAULT_ASK_TIMEOUT,
    DEFAULT_MAILBOX_CAPACITY,
    Actor,
    ActorRef,
    LifeEnd,
)

__all__ = [
    "DEFAULT_ASK_TIMEOUT",
    "DEFAULT_MAILBOX_CAPACITY",
    "STACK_SIZE_LOCK",
    "THREAD_STACK_SIZE",
    "Actor",
    "ActorCrashedError",
    "ActorRef",
    "ActorStoppedError",
    "AskTimeoutError",
    "KeyedRef",
    "LifeEnd",
    "MailboxFull",
    "Registry",
    "RegistryFailedError",
    "ThreadActor",
    "ThreadActorRef",
]
