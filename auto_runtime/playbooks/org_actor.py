"""The org actor: the one writer, in this process, of an org's playbook stream `org/<org>/playbooks`.

Why an org actor and not the playbook actor: creating, updating and retiring a playbook all append to the org's
one stream, whose version guards every such change. Were these commands owned by each playbook's actor, two
playbooks of one org changed at once would clash on that version and retry (the storm the actors are meant to
remove); one actor per org makes them meet one after the other. The stream's expected version stays the guard
between servers, and the retry (the ledger's `decide_and_append`) is only for a change another server made.

State: the org's playbooks folded from its stream and the stream version they stand for. Each command reads
the stream version first (one indexed row): when another server moved it, the stream is read again; when not,
the command decides from memory. On a sole-writer ledger (`Ledger.sole_writer`) there is no other server, so
after its first read the actor decides from memory without reading the version. A command's own append is
folded in without a read.

Concurrency rules: the actor handles one command at a time (its mailbox is bounded; a full one refuses the
command with `MailboxFull`). A `Rejection` decided by a command is its answer (returned, not raised), so a
refused command does not end the actor's life; any other error does, and the registry starts the next life
from the ledger.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from auto_runtime.actors import Actor
from auto_runtime.ledger import Folded, Ledger, NewRecord, Record, decide_and_append
from auto_runtime.playbooks.playbook_facts import Playbook, fold_playbooks, folded_further, registry_stream
from auto_runtime.problems import Rejection, changed_at_the_same_moment


@dataclass(frozen=True)
class ChangePlaybooks:
    """Decide from the org's current playbooks what to append (nothing when the change changes nothing)."""

    decide: Callable[[dict[str, Playbook]], list[NewRecord]]


@dataclass(frozen=True)
class PlaybooksChanged:
    """What a `ChangePlaybooks` appended, and the org's playbooks after it."""

    appended: list[Record]
    playbooks: dict[str, Playbook]


class OrgActor(Actor[ChangePlaybooks, PlaybooksChanged | Rejection]):
    """One life of the org's actor; a new life reads the org's stream again on its first command."""

    def __init__(self, ledger: Ledger, org: str) -> None:
        self.ledger = ledger
        self.stream = registry_stream(org)
        self._playbooks: dict[str, Playbook] = {}
        self._version = -1
        """The stream version `_playbooks` stands for; -1 before the first read."""

    async def _refresh(self) -> None:
        if self._version >= 0 and self.ledger.sole_writer:
            return  # nothing but this actor appends to the stream
        if await self.ledger.stream_version(self.stream) != self._version:
            history = await self.ledger.read_stream(self.stream)
            self._playbooks = fold_playbooks(history)
            self._version = len(history)

    async def _loaded(self) -> Folded[dict[str, Playbook]]:
        await self._refresh()
        return Folded(self._playbooks, self._version)

    def _forget(self) -> None:
        """Another server appended: the next load reads the stream again."""
        self._version = -1

    async def receive(self, message: ChangePlaybooks) -> PlaybooksChanged | Rejection:
        try:
            decided = await decide_and_append(
                self.ledger,
                self.stream,
                self._loaded,
                message.decide,
                clashed=changed_at_the_same_moment,
                forget=self._forget,
            )
        except Rejection as rejection:
            return rejection
        if decided.appended:
            self._playbooks = folded_further(dict(self._playbooks), decided.appended)
            self._version = decided.version + len(decided.appended)
        return PlaybooksChanged(decided.appended, dict(self._playbooks))
