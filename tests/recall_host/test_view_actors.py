"""Issue 19, "Views as actors": each recall view is an actor under its playbook's views actor; a crash of one
view's actor restarts it from its checkpoint row while the playbook's other views go on, and no event is folded
twice (a fold that records every event id it takes)."""

from __future__ import annotations

import json

from auto_runtime.ledger import PlaybookScope
from tests.recall_host.conftest import Faults, Host

BILLING = PlaybookScope("acme", "billing")


async def test_a_crashed_view_actor_resumes_from_its_checkpoint_and_folds_no_event_twice(
    host: Host, faults: Faults
) -> None:
    await host.define(BILLING, "steady")
    await host.define(BILLING, "fragile")
    ids = [f"tick-{number}" for number in range(8)]
    async with host.keeping() as keeper:
        for event_id in ids[:3]:
            await host.tick(BILLING, event_id)
        await host.row_until(BILLING, "fragile", lambda row: row.state == "live" and row.folded == 3)
        await host.row_until(BILLING, "steady", lambda row: row.state == "live" and row.folded == 3)
        children = keeper.actors.hosted((BILLING.org, BILLING.playbook))
        assert children is not None
        assert children.views.restarts == 0

        await faults.fail_writes_of("fragile")
        for event_id in ids[3:7]:
            await host.tick(BILLING, event_id)
        await host.row_until(BILLING, "steady", lambda row: row.folded == 7)
        await host.until(lambda: children.views.restarts >= 1)
        held = await host.ledger.recall_views.one(BILLING.org, BILLING.playbook, "fragile")
        assert held is not None and held.folded == 3 and held.state == "live"

        await faults.heal()
        await host.tick(BILLING, ids[7])
        fragile = await host.row_until(BILLING, "fragile", lambda row: row.folded == 8)
        steady = await host.row_until(BILLING, "steady", lambda row: row.folded == 8)
    assert json.loads(fragile.view) == {"count": 8, "seen": ids}
    assert json.loads(steady.view) == {"count": 8, "seen": ids}
    assert fragile.state == steady.state == "live"
