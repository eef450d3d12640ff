"""The ledger's command loop (`decide_and_append`): load, decide, append at the version loaded, and the retry on a
version clash, on each store. The competing writer is a real append to the same stream, made while the command
decides."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import trio

from auto_runtime.ledger import (
    Folded,
    Ledger,
    NewRecord,
    PlaybookScope,
    Record,
    StreamWrite,
    decide_and_append,
    folding_reader,
)
from auto_runtime.ledger.commands import ATTEMPTS

STREAM = PlaybookScope("acme", "finance").stream("events", "counted")


class KeptMoving(Exception):
    """The error these tests choose for a stream that kept moving."""


def counts(history: Sequence[Record]) -> list[str]:
    return [record.data["by"] for record in history]


def counted(by: str) -> NewRecord:
    return NewRecord("counted", {"by": by})


async def cut_in(ledger: Ledger, by: str) -> None:
    """Another writer's append, at the stream's current version."""
    await ledger.append([StreamWrite(STREAM, await ledger.stream_version(STREAM), [counted(by)])])


async def test_a_clash_makes_the_command_read_and_decide_again(ledger: Ledger) -> None:
    seen: list[list[str]] = []
    forgotten: list[int] = []

    async def decide(state: list[str]) -> list[NewRecord]:
        seen.append(state)
        if len(seen) == 1:
            await cut_in(ledger, "other")  # lands between this command's read and its append
        return [counted("command")]

    decided = await decide_and_append(
        ledger,
        STREAM,
        folding_reader(ledger, STREAM, counts),
        decide,
        clashed=KeptMoving,
        forget=lambda: forgotten.append(len(seen)),
    )

    assert seen == [[], ["other"]]
    assert forgotten == [1]
    assert (decided.state, decided.version) == (["other"], 1)
    assert [(r.position, r.data["by"]) for r in decided.appended] == [(2, "command")]
    assert counts(await ledger.read_stream(STREAM)) == ["other", "command"]


async def test_a_stream_that_keeps_moving_raises_the_callers_error_and_appends_nothing_of_the_command(
    ledger: Ledger,
) -> None:
    decisions: list[int] = []

    async def decide(state: list[str]) -> list[NewRecord]:
        decisions.append(len(state))
        await cut_in(ledger, f"other {len(decisions)}")
        return [counted("command")]

    with pytest.raises(KeptMoving):
        await decide_and_append(ledger, STREAM, folding_reader(ledger, STREAM, counts), decide, clashed=KeptMoving)
    assert decisions == list(range(ATTEMPTS))
    assert counts(await ledger.read_stream(STREAM)) == [f"other {n}" for n in range(1, ATTEMPTS + 1)]

    decisions.clear()
    with pytest.raises(KeptMoving):
        await decide_and_append(
            ledger, STREAM, folding_reader(ledger, STREAM, counts), decide, clashed=KeptMoving, attempts=2
        )
    assert decisions == [ATTEMPTS, ATTEMPTS + 1]
    assert "command" not in counts(await ledger.read_stream(STREAM))


async def test_a_decision_with_no_records_appends_nothing(ledger: Ledger) -> None:
    async def nothing(state: list[str]) -> list[NewRecord]:
        return []

    decided = await decide_and_append(
        ledger, STREAM, folding_reader(ledger, STREAM, counts), nothing, clashed=KeptMoving
    )
    assert (decided.state, decided.version, decided.appended) == ([], 0, [])
    assert await ledger.stream_version(STREAM) == 0

    await cut_in(ledger, "other")
    decided = await decide_and_append(
        ledger, STREAM, folding_reader(ledger, STREAM, counts), lambda state: [], clashed=KeptMoving
    )
    assert (decided.state, decided.version, decided.appended) == (["other"], 1, [])
    assert counts(await ledger.read_stream(STREAM)) == ["other"]


async def test_a_rejection_decided_leaves_the_loop_and_appends_nothing(ledger: Ledger) -> None:
    def refuse(state: list[str]) -> list[NewRecord]:
        raise LookupError("refused")

    with pytest.raises(LookupError, match="refused"):
        await decide_and_append(ledger, STREAM, folding_reader(ledger, STREAM, counts), refuse, clashed=KeptMoving)
    assert await ledger.stream_version(STREAM) == 0


async def test_a_state_kept_in_memory_is_decided_on_at_its_version_and_forgotten_on_a_clash(ledger: Ledger) -> None:
    """An actor's way: `load` answers from memory until `forget` drops it, then reads."""
    kept: list[Folded[list[str]]] = [Folded([], 0)]
    reads: list[int] = []

    async def load() -> Folded[list[str]]:
        if not kept:
            history = await ledger.read_stream(STREAM)
            reads.append(len(history))
            kept.append(Folded(counts(history), len(history)))
        return kept[0]

    await cut_in(ledger, "other")  # the kept state is stale: its append clashes
    decided = await decide_and_append(
        ledger, STREAM, load, lambda state: [counted("command")], clashed=KeptMoving, forget=kept.clear
    )
    assert reads == [1]
    assert (decided.state, decided.version) == (["other"], 1)
    assert counts(await ledger.read_stream(STREAM)) == ["other", "command"]


async def test_commands_at_once_each_land_once_on_the_state_they_read(ledger: Ledger) -> None:
    """Sixteen commands at once, each appending the count it read: every clash costs one decision, and each
    command loses at most once to each other, so sixteen decisions are enough for all to land."""
    tasks = 16

    async def command(by: int) -> None:
        await decide_and_append(
            ledger,
            STREAM,
            folding_reader(ledger, STREAM, len),
            lambda seen: [NewRecord("counted", {"by": by, "seen": seen})],
            clashed=KeptMoving,
            attempts=tasks,
        )

    async with trio.open_nursery() as nursery:
        for by in range(tasks):
            nursery.start_soon(command, by)
    history = await ledger.read_stream(STREAM)
    assert sorted(r.data["by"] for r in history) == list(range(tasks))
    assert [r.data["seen"] for r in history] == list(range(tasks))
