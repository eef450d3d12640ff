"""Spec recall-format.md, "How the view is kept": the server passes a playbook when it appends a record to it, and
at each sweep every playbook that keeps views; `RECALL_PLAYBOOKS_AT_ONCE` bounds the passes that run at once."""

from __future__ import annotations

from auto_runtime.ledger import PlaybookScope
from tests.recall_host.conftest import Host, Passes

BILLING = PlaybookScope("acme", "billing")
SHIPPING = PlaybookScope("acme", "shipping")


async def test_an_append_passes_only_the_playbook_it_was_appended_to(host: Host, passes: Passes) -> None:
    await host.define(BILLING, "ticks")
    await host.define(SHIPPING, "ticks")
    async with host.keeping():
        await host.row_until(BILLING, "ticks", lambda row: row.state == "live")
        await host.row_until(SHIPPING, "ticks", lambda row: row.state == "live")
        shipping_passes = passes.started(SHIPPING)
        assert shipping_passes >= 1
        for number in range(3):
            await host.tick(BILLING, f"billing-{number}")
            await host.row_until(BILLING, "ticks", lambda row, seen=number + 1: row.folded == seen)
        assert passes.started(SHIPPING) == shipping_passes
        await host.tick(SHIPPING, "shipping-0")
        await host.row_until(SHIPPING, "ticks", lambda row: row.folded == 1)
    assert passes.started(SHIPPING) > shipping_passes


async def test_with_one_playbook_at_once_two_playbooks_passes_never_overlap(host: Host, passes: Passes) -> None:
    await host.define(BILLING, "ticks")
    await host.define(SHIPPING, "ticks")
    for number in range(20):
        await host.tick(BILLING, f"billing-{number}")
        await host.tick(SHIPPING, f"shipping-{number}")
    async with host.keeping(playbooks_at_once=1):
        await host.row_until(BILLING, "ticks", lambda row: row.state == "live" and row.folded == 20)
        await host.row_until(SHIPPING, "ticks", lambda row: row.state == "live" and row.folded == 20)
        for number in range(20, 23):
            await host.tick(BILLING, f"billing-{number}")
            await host.tick(SHIPPING, f"shipping-{number}")
        await host.row_until(BILLING, "ticks", lambda row: row.folded == 23)
        await host.row_until(SHIPPING, "ticks", lambda row: row.folded == 23)
    lines = list(passes.lines)
    assert {key for _line, key in lines} == {(BILLING.org, BILLING.playbook), (SHIPPING.org, SHIPPING.playbook)}
    in_flight: tuple[str, str] | None = None
    for line, key in lines:
        if line == "recall_pass_started":
            assert in_flight is None, f"{key} started while {in_flight} was being passed"
            in_flight = key
        else:
            assert in_flight == key
            in_flight = None


async def test_a_playbook_remembered_to_keep_no_views_is_passed_as_soon_as_it_gets_a_recall_function(
    host: Host, passes: Passes
) -> None:
    """The keeper remembers a playbook it found to keep no views, so its appends read nothing; saving a recall
    function there forgets that at once: its views are passed without waiting for the sweep (a day away)."""
    await host.define(SHIPPING, "ticks")
    async with host.keeping():
        await host.row_until(SHIPPING, "ticks", lambda row: row.state == "live")
        await host.tick(BILLING, "billing-0")
        await host.tick(SHIPPING, "shipping-0")
        # the keeper took BILLING's wake no later than SHIPPING's, so it has found BILLING keeps no views
        await host.row_until(SHIPPING, "ticks", lambda row: row.folded == 1)
        await host.tick(BILLING, "billing-1")
        await host.tick(SHIPPING, "shipping-1")
        await host.row_until(SHIPPING, "ticks", lambda row: row.folded == 2)
        assert passes.started(BILLING) == 0
        await host.define(BILLING, "ticks")
        row = await host.row_until(BILLING, "ticks", lambda row: row.state == "live" and row.folded == 2)
    assert row.folded == 2 and passes.started(BILLING) >= 1
