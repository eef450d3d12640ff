"""Issue 32 point 4: a playbook's run slots, claimed through its actor one claim at a time (on each ledger store):
a slot is refused while another run is starting with it or while its recorded holder has not ended."""

from __future__ import annotations

import trio

from auto_runtime.ledger import Ledger, NewRecord, StreamWrite
from auto_runtime.playbooks.playbook_host import PlaybookActors
from auto_runtime.playbooks.run_slots import (
    ClaimRunSlot,
    RunSlot,
    SlotClaims,
    SlotGranted,
    SlotHeld,
    read_slot,
    slot_claim,
)
from auto_runtime.runs.facts import RUN_REJECTED, RUN_STARTED, run_stream
from tests.playbooks.conftest import SCOPE

SLOT = RunSlot("prediction-build", "units")
RUNS = [f"0190a6f0-0000-7000-8000-{n:012d}" for n in range(1, 21)]


async def record_holder(ledger: Ledger, run_id: str, *, ended: bool) -> None:
    """A run that claimed the slot in its first append, as a build's start records it; `ended` ends it."""
    reading = await read_slot(ledger, SCOPE, SLOT)
    started = NewRecord(RUN_STARTED, {"input": {"build": {}}, "waits": True}, {"by": "tester"})
    await ledger.append(
        [StreamWrite(run_stream(SCOPE, run_id), 0, [started]), slot_claim(SCOPE, SLOT, reading, run_id, "tester")]
    )
    if ended:
        await end(ledger, run_id)


async def end(ledger: Ledger, run_id: str) -> None:
    ending = NewRecord(RUN_REJECTED, {"reason": "cancelled"}, {"by": "tester"})
    await ledger.append([StreamWrite(run_stream(SCOPE, run_id), 1, [ending])])


async def test_twenty_claims_at_once_grant_the_slot_to_one_run(ledger: Ledger) -> None:
    actors = PlaybookActors(ledger, {})
    answers: dict[str, object] = {}

    async def claim(run_id: str) -> None:
        answers[run_id] = await actors.ask((SCOPE.org, SCOPE.playbook), ClaimRunSlot(SLOT, run_id))

    async with actors.serving(), trio.open_nursery() as nursery:
        for run_id in RUNS:
            nursery.start_soon(claim, run_id)
    granted = [run_id for run_id, answer in answers.items() if isinstance(answer, SlotGranted)]
    assert len(granted) == 1
    assert all(answers[run_id] == SlotHeld(granted[0]) for run_id in RUNS if run_id not in granted)


async def test_a_slot_is_free_again_once_its_start_released_it_without_recording(ledger: Ledger) -> None:
    actors = PlaybookActors(ledger, {})
    claims = SlotClaims(actors)
    async with actors.serving():
        assert await claims.claim(SCOPE, SLOT, RUNS[0]) is None
        assert await claims.claim(SCOPE, SLOT, RUNS[1]) == RUNS[0]
        assert await claims.claim(SCOPE, RunSlot("prediction-build", "other"), RUNS[1]) is None
        claims.release(SCOPE, SLOT, RUNS[1])  # not the holder: changes nothing
        assert await claims.claim(SCOPE, SLOT, RUNS[2]) == RUNS[0]
        claims.release(SCOPE, SLOT, RUNS[0])
        assert await claims.claim(SCOPE, SLOT, RUNS[2]) is None


async def test_a_recorded_holder_holds_the_slot_until_its_run_ends(ledger: Ledger) -> None:
    actors = PlaybookActors(ledger, {})
    claims = SlotClaims(actors)
    async with actors.serving():
        assert await claims.claim(SCOPE, SLOT, RUNS[0]) is None
        await record_holder(ledger, RUNS[0], ended=False)
        claims.release(SCOPE, SLOT, RUNS[0])
        assert await claims.claim(SCOPE, SLOT, RUNS[1]) == RUNS[0]
        await end(ledger, RUNS[0])
        assert await claims.claim(SCOPE, SLOT, RUNS[1]) is None
    reading = await read_slot(ledger, SCOPE, SLOT)
    assert (reading.version, reading.holder, reading.going_on) == (1, RUNS[0], False)


async def test_a_new_life_of_the_actor_reads_the_holder_from_the_ledger(ledger: Ledger) -> None:
    await record_holder(ledger, RUNS[0], ended=True)
    await record_holder(ledger, RUNS[1], ended=False)
    actors = PlaybookActors(ledger, {})
    async with actors.serving():
        assert await SlotClaims(actors).claim(SCOPE, SLOT, RUNS[2]) == RUNS[1]
    reading = await read_slot(ledger, SCOPE, SLOT)
    assert (reading.version, reading.holder, reading.going_on) == (2, RUNS[1], True)
