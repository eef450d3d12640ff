"""The timer loop's firing slots: with every slot held by one org's runs and more of them waiting, a slot that
frees goes to another org's waiting run before the busy org's, whatever order they came in."""

from __future__ import annotations

import trio
import trio.testing

from auto_runtime.ledger import OrgScope, PlaybookScope
from auto_runtime.sandbox.fair_queue import JobOwner
from auto_runtime.workflow_host.fair_firing import FairSlots, owner_of

BUSY = JobOwner("org-a", "loops")
OTHER = JobOwner("org-b", "simple")


async def test_a_freed_slot_goes_to_the_org_that_waits_behind_a_busy_one() -> None:
    slots = FairSlots(2)
    order: list[str] = []
    release = {name: trio.Event() for name in ("a1", "a2", "a3", "a4", "b1")}

    async def hold(name: str, owner: JobOwner) -> None:
        async with slots.held(owner):
            order.append(name)
            await release[name].wait()

    async with trio.open_nursery() as nursery:
        for name, owner in (("a1", BUSY), ("a2", BUSY), ("a3", BUSY), ("a4", BUSY), ("b1", OTHER)):
            nursery.start_soon(hold, name, owner)
            await trio.testing.wait_all_tasks_blocked()
        assert order == ["a1", "a2"] and slots.waiting == 3
        release["a1"].set()
        await trio.testing.wait_all_tasks_blocked()
        assert order == ["a1", "a2", "b1"]
        for name in ("a2", "b1", "a3", "a4"):
            release[name].set()
            await trio.testing.wait_all_tasks_blocked()
    assert order == ["a1", "a2", "b1", "a3", "a4"]
    assert slots.free == 2 and slots.waiting == 0


async def test_a_waiter_cancelled_after_it_was_handed_a_slot_passes_it_on() -> None:
    slots = FairSlots(1)
    got: list[str] = []
    first_done = trio.Event()

    async def first() -> None:
        async with slots.held(BUSY):
            await first_done.wait()

    async def second(cancel_scope: trio.CancelScope) -> None:
        with cancel_scope:
            async with slots.held(OTHER):
                got.append("second")

    async def third() -> None:
        async with slots.held(BUSY):
            got.append("third")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(first)
        await trio.testing.wait_all_tasks_blocked()
        scope = trio.CancelScope()
        nursery.start_soon(second, scope)
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(third)
        await trio.testing.wait_all_tasks_blocked()
        first_done.set()
        scope.cancel()  # the slot was handed to `second` and is passed on before `second` runs again
    assert got in (["third"], ["second", "third"])
    assert slots.free == 1 and slots.waiting == 0


def test_an_entry_takes_the_turn_of_its_playbook_and_an_orgs_own_entry_of_its_org() -> None:
    assert owner_of(PlaybookScope("acme", "finance")) == JobOwner("acme", "finance")
    assert owner_of(OrgScope("acme")) == JobOwner("acme", "")
