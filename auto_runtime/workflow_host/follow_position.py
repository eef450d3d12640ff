"""Where the reactions follower has read the ledger's feed to, kept durably in the due-work table.

The ledger has no key-value table, and projections change only with appends, so the position is kept as
due-work *tombstones* (rows in state `cancelled`, which never come due and sit outside the armed index): each
saved position is one row whose key spells it, `feed:<commit order>:<global position>`, both zero-padded to 20
digits so the greatest key is the furthest position. The rows belong to the pseudo-runs `reactions-feed-a` and
`reactions-feed-b` of the org scope `_runtime` (an underscore no org id may have).

Invariants:

- `load` answers the furthest position saved in either pseudo-run (None before the first save: read from
  the feed's start). A position is saved only after every reaction to the records up to it was appended,
  so a server that takes over resumes after the last fully handled record and misses nothing; records
  after it may be handled twice, which is harmless (deterministic run ids; offers guarded, see `listeners`).
- Saves are fenced: a server that lost the lease cannot move the position (`LeaseLost`).
- Rotation bounds the rows: once the pseudo-run being written holds `ROTATE_AFTER` rows, the next save goes
  to the other one first and only then forgets the full one. A crash between the two leaves both, and `load`
  still takes the furthest. So at every moment the furthest saved position is kept.
"""

from __future__ import annotations

from typing import Final

from auto_runtime.ledger import DueKey, FeedPosition, LeaseFence, Ledger, OrgScope

POSITION_SCOPE: Final = OrgScope("_runtime")
PSEUDO_RUNS: Final = ("reactions-feed-a", "reactions-feed-b")
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


class FollowPosition:
    """Loads and saves the follower's feed position (see the module's invariants). One writer at a time:
    the lease holder's follower; `load` after each claim of the lease, then `save` as the follower moves."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._writing = 0
        self._rows = 0

    async def load(self) -> FeedPosition | None:
        best: tuple[FeedPosition, int] | None = None
        counts = []
        for index, run in enumerate(PSEUDO_RUNS):
            rows = await self.ledger.due_work.entries_of_run(POSITION_SCOPE, run)
            counts.append(len(rows))
            for row in rows:
                found = parse_position_key(row.key)
                if found is not None and (best is None or found > best[0]):
                    best = (found, index)
        if best is None:
            self._writing, self._rows = 0, counts[0]
            return None
        self._writing, self._rows = best[1], counts[best[1]]
        return best[0]

    async def save(self, position: FeedPosition, fence: LeaseFence | None) -> None:
        if self._rows < ROTATE_AFTER:
            run = PSEUDO_RUNS[self._writing]
            await self.ledger.due_work.cancel([DueKey(POSITION_SCOPE, run, position_key(position))], fence=fence)
            self._rows += 1
            return
        full = PSEUDO_RUNS[self._writing]
        self._writing = 1 - self._writing
        run = PSEUDO_RUNS[self._writing]
        await self.ledger.due_work.cancel([DueKey(POSITION_SCOPE, run, position_key(position))], fence=fence)
        await self.ledger.due_work.forget_run(POSITION_SCOPE, full, fence=fence)
        self._rows = len(await self.ledger.due_work.entries_of_run(POSITION_SCOPE, run))
