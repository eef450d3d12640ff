"""The query objects over the ledger's own tables, on both stores: the armed due-work entries of a key
(`queries.due_work`) and the digest a content scope keeps (`queries.content`). The query objects over projections
are exercised by their rooms' tests (prediction, interactions, playbooks), which register those projections."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

from auto_runtime.ledger import DueEntry, Ledger, PlaybookScope
from auto_runtime.ledger.queries.due_work import ARMED_WITH_KEY
from tests.stored_rows import stored_rows

from .conftest import Target

ACME = PlaybookScope("acme", "finance")
GLOBEX = PlaybookScope("globex", "ops")
T0 = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)


def entry(scope: PlaybookScope, run: str, key: str) -> DueEntry:
    return DueEntry(scope, run, key, T0 + timedelta(seconds=len(run)), {"run": run})


async def test_the_armed_entries_of_a_key_are_counted_in_every_scope_and_run(ledger: Ledger) -> None:
    count = ledger.queries.due_work.armed_with_key
    assert await count("prediction:score") == 0
    await ledger.due_work.arm(
        [
            entry(ACME, "b1", "prediction:score"),
            entry(ACME, "b2", "prediction:score"),
            entry(GLOBEX, "b3", "prediction:score"),
            entry(ACME, "b4", "prediction:score"),
            entry(ACME, "b1", "prediction:expire"),
        ]
    )
    assert await count("prediction:score") == 4
    await ledger.due_work.mark_fired([entry(ACME, "b2", "prediction:score").due_key])
    await ledger.due_work.cancel([entry(ACME, "b4", "prediction:score").due_key])
    assert await count("prediction:score") == 2  # fired and cancelled entries are not waiting
    assert await count("prediction:expire") == 1
    assert await count("prediction") == 0  # a key, not a prefix


async def test_the_armed_count_reads_the_index_of_armed_entries_on_sqlite(tmp_path: Path) -> None:
    """`state = 'armed'` is written out in the statement, so SQLite reads the partial index of armed entries (one
    step), never the whole table of fired entries and tombstones."""
    async with Target("sqlite", tmp_path / "ledger.db", None).open() as ledger:
        await ledger.due_work.arm([entry(ACME, f"r{n}", f"k{n % 3}") for n in range(30)])
        plan = await stored_rows(ledger, "EXPLAIN QUERY PLAN " + ARMED_WITH_KEY, ["k1"])
        steps = [str(row["detail"]) for row in plan]
        assert len(steps) == 1 and "USING" in steps[0] and "INDEX ledger_due_work_armed" in steps[0], steps


async def test_the_digest_a_content_scope_keeps(ledger: Ledger) -> None:
    summary = f"{ACME.key}/datasets/{'0' * 64}"
    assert await ledger.queries.content.digest(summary) is None
    data = b'{"rows": 12}'
    kept = await ledger.content.put(summary, data)
    assert kept == hashlib.sha256(data).hexdigest()
    assert await ledger.queries.content.digest(summary) == kept
    assert await ledger.queries.content.digest(f"{GLOBEX.key}/datasets/{'0' * 64}") is None
    assert await ledger.queries.content.digest(ACME.key) is None  # a scope key is matched whole
