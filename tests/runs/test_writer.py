"""The run's one writer on both ledgers: a clash makes it read the run and decide again, the state it keeps
between two messages spares a read, a decision that holds only on a fresh state is made again on one, and a run
that keeps moving ends in the caller's error with nothing appended. Another server is played by appending to the
run's stream directly, as a second process on the same ledger would."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from auto_runtime.ledger import DueEntry, DueKey, DueWorkChanges, Ledger, NewRecord, PlaybookScope, Record, StreamWrite
from auto_runtime.problems import Rejection, conflict
from auto_runtime.runs import ATTEMPTS, Decision, HistoryDecider, Loaded, RunHistory, RunKeptMoving, RunWriter
from auto_runtime.runs.facts import run_stream
from tests.runs.conftest import MOMENT, SCOPE

RUN = "0193e0a0-0000-7000-8000-0000000000aa"


@dataclass(frozen=True)
class Note:
    text: str


@dataclass
class Noting(HistoryDecider[Note, int]):
    """Appends one `noted` record; answers the version it decided on. `others` appends (as another server) that
    many records before each of its first decisions, so each of those decisions' appends clashes."""

    ledger: Ledger
    others: int = 0
    loads: int = 0
    decided_on: list[int] = field(default_factory=list)
    fresh_only: bool = False

    async def load(self, ledger: Ledger, scope: PlaybookScope, run_id: str) -> Loaded[RunHistory]:
        self.loads += 1
        return await super().load(ledger, scope, run_id)

    async def decide(self, loaded: Loaded[RunHistory], message: Note) -> Decision[int]:
        self.decided_on.append(loaded.version)
        if self.others:
            self.others -= 1
            stream = run_stream(SCOPE, RUN)
            now = len(await self.ledger.read_stream(stream))
            await self.ledger.append([StreamWrite(stream, now, [NewRecord("elsewhere", {}, {})])])
        if self.fresh_only:
            return Decision(loaded.version, fresh_only=True)
        return Decision(loaded.version, [NewRecord("noted", {"text": message.text}, {})])

    def evolve(self, loaded: Loaded[RunHistory], appended: Sequence[Record]) -> Loaded[RunHistory]:
        return super().evolve(loaded, appended)


async def kinds(ledger: Ledger) -> list[str]:
    return [r.type for r in await ledger.read_stream(run_stream(SCOPE, RUN))]


async def test_a_clash_makes_the_writer_read_the_run_and_decide_again(ledger: Ledger) -> None:
    decider = Noting(ledger, others=2)
    written = await RunWriter(ledger, SCOPE, RUN).write(decider, Note("a"))
    assert decider.decided_on == [0, 1, 2], "each decision read the run as the other server left it"
    assert written.reply == 2 and [r.type for r in written.appended] == ["noted"]
    assert await kinds(ledger) == ["elsewhere", "elsewhere", "noted"]


async def test_the_state_kept_between_two_messages_spares_a_read(ledger: Ledger) -> None:
    decider, writer = Noting(ledger), RunWriter(ledger, SCOPE, RUN)
    await writer.write(decider, Note("a"))
    second = await writer.write(decider, Note("b"))
    assert decider.loads == 1 and second.reply == 1
    kept = writer.kept(decider.kind)
    assert kept is not None and [r.type for r in kept.state.records] == ["noted", "noted"]
    writer.forget()
    await writer.write(decider, Note("c"))
    assert decider.loads == 2 and await kinds(ledger) == ["noted", "noted", "noted"]


async def test_a_kept_state_the_run_moved_past_costs_one_clash_then_a_read(ledger: Ledger) -> None:
    decider, writer = Noting(ledger), RunWriter(ledger, SCOPE, RUN)
    await writer.write(decider, Note("a"))
    await ledger.append([StreamWrite(run_stream(SCOPE, RUN), 1, [NewRecord("elsewhere", {}, {})])])
    written = await writer.write(decider, Note("b"))
    assert decider.decided_on == [0, 1, 2] and written.reply == 2
    assert await kinds(ledger) == ["noted", "elsewhere", "noted"]


async def test_a_decision_that_holds_only_on_a_fresh_state_is_made_again_on_one(ledger: Ledger) -> None:
    writer = RunWriter(ledger, SCOPE, RUN)
    await writer.write(Noting(ledger), Note("a"))
    await ledger.append([StreamWrite(run_stream(SCOPE, RUN), 1, [NewRecord("elsewhere", {}, {})])])
    fresh = Noting(ledger, fresh_only=True)
    written = await writer.write(fresh, Note("b"))
    assert fresh.decided_on == [1, 2], "decided on the kept state, then on the run as the ledger holds it"
    assert written.reply == 2 and written.appended == []


async def test_a_run_that_keeps_moving_ends_in_the_caller_s_error_with_nothing_appended(ledger: Ledger) -> None:
    with pytest.raises(RunKeptMoving):
        await RunWriter(ledger, SCOPE, RUN).write(Noting(ledger, others=ATTEMPTS), Note("a"))
    assert await kinds(ledger) == ["elsewhere"] * ATTEMPTS

    def moved() -> Exception:
        return conflict("Another change was made at the same moment; send the request again.")

    with pytest.raises(Rejection) as refused:
        await RunWriter(ledger, SCOPE, RUN).write(Noting(ledger, others=2), Note("b"), kept_moving=moved, attempts=2)
    assert refused.value.reason == "conflict"
    assert "noted" not in await kinds(ledger)


async def test_a_decision_on_a_given_first_state_reads_nothing_until_it_clashes(ledger: Ledger) -> None:
    decider = Noting(ledger)
    empty = Loaded(RunHistory(SCOPE, RUN, ()), 0)
    await RunWriter(ledger, SCOPE, RUN).write(decider, Note("a"), first=empty)
    assert decider.loads == 0
    other = Noting(ledger)
    written = await RunWriter(ledger, SCOPE, RUN).write(other, Note("b"), first=empty)
    assert other.loads == 1 and other.decided_on == [0, 1] and written.reply == 1


@dataclass(frozen=True)
class MarkOnly:
    """A decision that records nothing and marks a due entry fired (a delivery attempt that found its run ended)."""

    key: str


class Marking(HistoryDecider[MarkOnly, None]):
    def decide(self, loaded: Loaded[RunHistory], message: MarkOnly) -> Decision[None]:
        history = loaded.state
        return Decision(None, due_work=DueWorkChanges(fire=[DueKey(history.scope, history.run_id, message.key)]))


async def test_a_decision_of_due_work_alone_changes_the_table_and_moves_no_stream(ledger: Ledger) -> None:
    entry = DueEntry(SCOPE, RUN, "interaction:attempt:1", MOMENT, {})
    await ledger.due_work.arm([entry])
    written = await RunWriter(ledger, SCOPE, RUN).write(Marking(), MarkOnly(entry.key))
    assert written.appended == [] and await kinds(ledger) == []
    (row,) = await ledger.due_work.entries_of_run(SCOPE, RUN)
    assert row.state == "fired"


async def test_the_writer_knows_the_stream_through_its_own_appends_and_forgets_it_when_another_writer_moved_it(
    ledger: Ledger,
) -> None:
    """`known_records` is the run's whole stream while every append since the last read was the writer's own, at
    the version it knew; an append by another server makes it unknown until a decision reads the run again."""
    decider, writer = Noting(ledger), RunWriter(ledger, SCOPE, RUN)
    assert writer.known_records() is None
    await writer.write(decider, Note("a"), first=Loaded(RunHistory(SCOPE, RUN, ()), 0))
    await writer.write(decider, Note("b"))
    known = writer.known_records()
    assert known is not None and list(known) == await ledger.read_stream(run_stream(SCOPE, RUN))
    await ledger.append([StreamWrite(run_stream(SCOPE, RUN), 2, [NewRecord("elsewhere", {}, {})])])
    assert writer.known_records() == known, "what it knew, as of its last append"
    await writer.write(decider, Note("c"))  # decided on its kept state: clashes, reads, decides again
    after = writer.known_records()
    assert after is not None and [r.type for r in after] == ["noted", "noted", "elsewhere", "noted"]
    assert list(after) == await ledger.read_stream(run_stream(SCOPE, RUN))
    with pytest.raises(RunKeptMoving):  # another server moves it before the writer's append: a clash
        await writer.write(Noting(ledger, others=1), Note("d"), attempts=1)
    assert writer.known_records() is None
    await writer.write(decider, Note("e"))
    assert writer.known_records() is not None
    writer.forget()
    assert writer.known_records() is None
