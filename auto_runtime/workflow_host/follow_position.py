"""Where the reactions follower has read the ledger's feed to, for one partition, kept durably in the due-work table.

The reactions to a playbook's records are carried by the holder of the playbook's partition (issue 33), so each
partition has a position of its own: how far the records of its playbooks were all reacted to. The ledger has no
key-value table, and projections change only with appends, so a position is kept as due-work *tombstones* (rows
in state `cancelled`, which never come due and sit outside the armed index): each saved position is one row
whose key spells it, `feed:<commit order>:<global position>`, both zero-padded to 20 digits so the greatest key
is the furthest position. The rows of partition `n` belong to the pseudo-runs `reactions-feed-<n>-a` and
`reactions-feed-<n>-b` of the org scope `_runtime` (an underscore no org id may have).

Releases before partitions kept one position for the whole feed, in the pseudo-runs `reactions-feed-a` and
`reactions-feed-b` (`PSEUDO_RUNS`, with `FollowPosition(ledger)`, partition None): the single follower had
reacted to every record up to it, so a partition with no position of its own yet starts from there.

Invariants:

- `load` answers the furthest position saved in either pseudo-run of the partition, else the one position of
  earlier releases, else None (read from the feed's start). A position is saved only after every reaction to
  the partition's records up to it was appended, so a server that takes the partition over resumes after the
  last fully handled record and misses nothing; records after it may be handled twice, which is harmless
  (deterministic run ids and due keys; offers guarded, see `listeners`).
- Saves are fenced by the partition's lease: a server that lost the partition cannot move its position
  (`LeaseLost`).
- Rotation bounds the rows: once the pseudo-run being written holds `ROTATE_AFTER` rows, the next save goes
  to the other one first and only then forgets the full one. A crash between the two leaves both, and `load`
  still takes the furthest. So at every moment the furthest saved position is kept.
"""

from __future__ import annotations

from typing import Final

from auto_runtime.ledger import DueKey, FeedPosition, LeaseFence, Ledger, OrgScope

POSITION_SCOPE: Final = OrgScope("_runtime")
PSEUDO_RUNS: Final = ("reactions-feed-a", "reactions-feed-b")
"""The one position of releases before partitions (read, never written, by a partition's first load)."""
ROTATE_AFTER: Final = 512
_PREFIX: Final = "feed:"


def position_key(position: FeedPosition) -> str:
    return f"{_PREFIX}{position.commit_order:020d}:{position.global_position:020d}"


def parse_position_key(key: str) -> FeedPosition | None:
    if not key.startswith(_PREFIX):
        return None
    parts = key[len(_PREFIX) :].split(":")
    if len(parts) != 2 or not all(part.isdigit() for part in parts):
        return None
    return FeedPosition(int(parts[0]), int(parts[1]))


def pseudo_runs(partition: int | None) -> tuple[str, str]:
    """The two pseudo-runs a partition's positions rotate between (`PSEUDO_RUNS` for None)."""
    if partition is None:
        return PSEUDO_RUNS
    return (f"reactions-feed-{partition}-a", f"reactions-feed-{partition}-b")


class FollowPosition:
    """Loads and saves one partition's feed position (see the module's invariants); `partition` None is the one
    position of the whole feed (earlier releases, and a follower under one lease). One writer at a time: the
    partition's holder's follower; `load` after each claim of the partition, then `save` as the follower moves."""

    def __init__(self, ledger: Ledger, partition: int | None = None) -> None:
        self.ledger = ledger
        self.runs = pseudo_runs(partition)
        self._partition = partition
        self._writing = 0
        self._rows = 0

    async def _furthest(self, runs: tuple[str, str]) -> tuple[tuple[FeedPosition, int] | None, list[int]]:
        best: tuple[FeedPosition, int] | None = None
        counts = []
        for index, run in enumerate(runs):
            rows = await self.ledger.due_work.entries_of_run(POSITION_SCOPE, run)
            counts.append(len(rows))
            for row in rows:
                found = parse_position_key(row.key)
                if found is not None and (best is None or found > best[0]):
                    best = (found, index)
        return best, counts

    async def load(self) -> FeedPosition | None:
        best, counts = await self._furthest(self.runs)
        if best is None:
            self._writing, self._rows = 0, counts[0]
            if self._partition is None:
                return None
            earlier, _ = await self._furthest(PSEUDO_RUNS)
            return None if earlier is None else earlier[0]
        self._writing, self._rows = best[1], counts[best[1]]
        return best[0]

    async def save(self, position: FeedPosition, fence: LeaseFence | None) -> None:
        if self._rows < ROTATE_AFTER:
            run = self.runs[self._writing]
            await self.ledger.due_work.cancel([DueKey(POSITION_SCOPE, run, position_key(position))], fence=fence)
            self._rows += 1
            return
        full = self.runs[self._writing]
        self._writing = 1 - self._writing
        run = self.runs[self._writing]
        await self.ledger.due_work.cancel([DueKey(POSITION_SCOPE, run, position_key(position))], fence=fence)
        await self.ledger.due_work.forget_run(POSITION_SCOPE, full, fence=fence)
        self._rows = len(await self.ledger.due_work.entries_of_run(POSITION_SCOPE, run))
