"""`runs_begun` (issue 33): a server that began runs it was handed names them (`Ledger.tell_runs_begun`), and a
server waiting for one of them is woken by its name, not by every append; on PostgreSQL through `LISTEN/NOTIFY`
(to every server sharing the database, this one too), elsewhere in the process. Waits are for events, bounded."""

from __future__ import annotations

import pytest
import trio

from auto_runtime.ledger import Ledger, uuid7
from auto_runtime.ledger.feed import KeyedSignal
from auto_runtime.ledger.postgres.notifier import MAX_PAYLOAD, payloads

from .conftest import Target


def test_a_keyed_signal_wakes_only_the_keys_told_and_keeps_nothing_once_told_or_forgotten() -> None:
    signal = KeyedSignal()
    first, second = signal.watch("a"), signal.watch("b")
    assert signal.watch("a") is first  # waiters of one key share its event
    signal.notify(["a", "c"])
    assert first.is_set() and not second.is_set()
    assert signal.watch("a") is not first  # told: the next watch waits for the next name
    signal.forget("a", first)  # an event told already is not the key's any more: nothing happens
    assert len(signal) == 2
    signal.forget("a", signal.watch("a"))
    signal.forget("b", second)
    assert len(signal) == 0


def test_run_ids_go_in_payloads_under_postgresqls_limit_and_nothing_else_is_written() -> None:
    run_ids = [uuid7() for _ in range(500)]
    sent = list(payloads(run_ids))
    assert len(sent) > 1 and all(len(payload) <= MAX_PAYLOAD for payload in sent)
    assert [run_id for payload in sent for run_id in payload.split(",")] == run_ids
    assert list(payloads([])) == []
    with pytest.raises(ValueError, match="not a run id"):
        list(payloads(["x'; DROP TABLE ledger_streams; --"]))


async def test_a_run_told_begun_wakes_its_waiter_on_every_store(ledger: Ledger) -> None:
    run_id, other = uuid7(), uuid7()
    told, untold = ledger.runs_begun.watch(run_id), ledger.runs_begun.watch(other)
    await ledger.tell_runs_begun([run_id])
    with trio.fail_after(30):
        await told.wait()  # on PostgreSQL once this process heard its own notification back
    assert not untold.is_set()


@pytest.mark.postgres
async def test_runs_told_begun_by_another_server_wake_this_ones_waiters(postgres_url: str) -> None:
    target = Target("postgres", None, postgres_url)
    async with target.open() as waiting, target.open() as other:
        run_ids = [uuid7() for _ in range(300)]  # more than one notification's payload holds
        told = [waiting.runs_begun.watch(run_id) for run_id in run_ids]
        await other.tell_runs_begun(run_ids)
        with trio.fail_after(30):
            for event in told:
                await event.wait()
