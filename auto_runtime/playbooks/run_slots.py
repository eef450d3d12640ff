"""Run slots: at most one run of a playbook going on per slot (one build at a time per prediction function).

A slot (`RunSlot`: a kind and a name, such as `prediction-build` and a function's name) is held by the run that
claimed it last, until that run ends. Two guards keep it, one per place a race can happen:

- In this process, the playbook's actor (`playbook_actor`) takes `ClaimRunSlot` one message at a time. It
  refuses (`SlotHeld`) while another run it granted the slot to is still starting (granted, not yet released
  by `ReleaseRunSlot`), or while the slot's recorded holder has not ended (read from the ledger at every claim,
  `read_slot`); otherwise it grants the slot (`SlotGranted`) and counts the run as starting until released. A
  new life of the actor starts with no starting run: its previous life's were cancelled with it, or have
  recorded what they recorded.
- Across servers (PostgreSQL), the claiming run's first append records `run_slot_claimed` on the slot's
  stream (`slot_claim`) at the version its decision read, in the same transaction as the run's first facts:
  of two servers' claims at once one commits and the other's expected version clashes, so its run's writer
  reads the slot again and finds the first holder going on. Never a read followed by an unguarded write.

The slot's stream, `org/<org>/run-slots/<playbook>/<kind>/<name>`, is the runtime's own bookkeeping: it lies in
the org's scope, so no read of the playbook (its events, a run's history, the recall views' fold) shows it, and
the claiming run's own stream holds exactly what it held before slots existed.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Protocol

from auto_runtime.actors import ActorStoppedError, MailboxFull
from auto_runtime.ledger import Ledger, NewRecord, OrgScope, PlaybookScope, StreamName, StreamWrite
from auto_runtime.runs.facts import run_stream
from auto_runtime.runs.view import fold_run

SLOT_CLAIMED = "run_slot_claimed"
"""A run claimed the slot: `{ run_id }`, by the run's caller."""


@dataclass(frozen=True)
class RunSlot:
    """A slot of a playbook: `kind` says what it bounds, `name` which one (each a stream-name segment)."""

    kind: str
    name: str

    def stream(self, scope: PlaybookScope) -> StreamName:
        return OrgScope(scope.org).stream("run-slots", scope.playbook, self.kind, self.name)


@dataclass(frozen=True)
class SlotReading:
    """The slot as the ledger holds it: its stream's version, the run that claimed it last, and whether that run
    is going on (recorded and not ended)."""

    version: int
    holder: str | None = None
    going_on: bool = False

    def held_against(self, run_id: str) -> str | None:
        """The run holding the slot against `run_id`, or None when `run_id` may claim it."""
        return self.holder if self.going_on and self.holder != run_id else None


async def read_slot(ledger: Ledger, scope: PlaybookScope, slot: RunSlot) -> SlotReading:
    """The slot's last claim and whether its run is going on (the claim's position, then its run's stream)."""
    stream = slot.stream(scope)
    version = await ledger.stream_version(stream)
    if version == 0:
        return SlotReading(0)
    (last,) = await ledger.read_stream(stream, from_position=version, limit=1)
    holder = str(last.data["run_id"])
    run = fold_run(holder, await ledger.read_stream(run_stream(scope, holder)))
    return SlotReading(version, holder, run is not None and run.status == "started")


def slot_claim(scope: PlaybookScope, slot: RunSlot, reading: SlotReading, run_id: str, by: str) -> StreamWrite:
    """The write that records `run_id`'s claim, expecting the slot's stream at the version `reading` read: it goes
    in the claiming run's first append."""
    record = NewRecord(SLOT_CLAIMED, {"run_id": run_id}, {"by": by})
    return StreamWrite(slot.stream(scope), reading.version, [record])


@dataclass(frozen=True)
class ClaimRunSlot:
    """Claim `slot` for the run `run_id`, which is starting (a command to the playbook's actor)."""

    slot: RunSlot
    run_id: str


@dataclass(frozen=True)
class ReleaseRunSlot:
    """The start of `run_id` ended, its first facts recorded or not: the slot is no longer held for it in this
    process (the ledger says from now on whether it holds it)."""

    slot: RunSlot
    run_id: str


@dataclass(frozen=True)
class SlotGranted:
    """The run may start; it records its claim in its first append."""


@dataclass(frozen=True)
class SlotHeld:
    """Another run holds the slot: `holder` is starting in this process, or recorded and going on."""

    holder: str


SlotCommand = ClaimRunSlot | ReleaseRunSlot
SlotAnswer = SlotGranted | SlotHeld | None


class RunSlots:
    """The slots of one playbook as one life of its actor keeps them: the runs it granted a slot to that are still
    starting. Everything else is read from the ledger at each claim."""

    def __init__(self, ledger: Ledger, scope: PlaybookScope) -> None:
        self.ledger = ledger
        self.scope = scope
        self._starting: dict[RunSlot, str] = {}
        """Slot → the run granted it, until released: at most one entry per start in progress."""

    async def handle(self, command: SlotCommand) -> SlotAnswer:
        match command:
            case ClaimRunSlot():
                return await self._claim(command)
            case ReleaseRunSlot():
                if self._starting.get(command.slot) == command.run_id:
                    del self._starting[command.slot]
                return None

    async def _claim(self, command: ClaimRunSlot) -> SlotGranted | SlotHeld:
        starting = self._starting.get(command.slot)
        if starting is not None and starting != command.run_id:
            return SlotHeld(starting)
        holder = (await read_slot(self.ledger, self.scope, command.slot)).held_against(command.run_id)
        if holder is not None:
            return SlotHeld(holder)
        self._starting[command.slot] = command.run_id
        return SlotGranted()


class SlotHost(Protocol):
    """Where the playbooks' actors take slot commands (`playbook_host.PlaybookActors`)."""

    async def ask(self, key: tuple[str, str], message: SlotCommand, *, timeout: float | None = ...) -> object: ...

    def tell(self, key: tuple[str, str], message: SlotCommand) -> None: ...


class SlotClaims:
    """A starting run's view of its playbook's slots: claim before the start's checks, release once it ended."""

    def __init__(self, host: SlotHost) -> None:
        self.host = host

    async def claim(self, scope: PlaybookScope, slot: RunSlot, run_id: str) -> str | None:
        """None when `run_id` may start; else the run holding the slot."""
        answer = await self.host.ask((scope.org, scope.playbook), ClaimRunSlot(slot, run_id))
        if isinstance(answer, SlotHeld):
            return answer.holder
        assert isinstance(answer, SlotGranted), answer
        return None

    def release(self, scope: PlaybookScope, slot: RunSlot, run_id: str) -> None:
        """Tell the playbook's actor the start ended, without waiting (so a start cancelled at its end still tells
        it). An actor that is stopping drops its starting runs anyway; a mailbox full to the brim leaves the run
        counted as starting for the rest of the actor's life (refusing the slot's next claims in this process
        until the actor passivates), which a full mailbox of a playbook's actor means only under overload."""
        with contextlib.suppress(MailboxFull, ActorStoppedError):
            self.host.tell((scope.org, scope.playbook), ReleaseRunSlot(slot, run_id))
