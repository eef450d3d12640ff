"""New run ids placed in a server's partitions (`runs.ids.run_id_in`, issue 33): valid UUIDv7s in canonical form,
each in one of the partitions asked for, all distinct (their random bits are drawn afresh, never counted), and
none drawn when there is nowhere to place them."""

from __future__ import annotations

import uuid

from auto_runtime.ledger import partition_of
from auto_runtime.runs.ids import canonical_run_id, is_run_id, run_id_in

PARTITIONS = 64


def test_drawn_ids_are_distinct_uuid7s_in_the_partitions_asked_for() -> None:
    held = frozenset({3, 17, 40})
    drawn = [run_id_in(held, PARTITIONS, draws=10_000) for _ in range(300)]
    ids = [run_id for run_id in drawn if run_id is not None]
    assert len(ids) == 300
    assert len(set(ids)) == 300
    for run_id in ids:
        assert is_run_id(run_id) and canonical_run_id(run_id) == run_id
        parsed = uuid.UUID(run_id)
        assert (parsed.version, parsed.variant) == (7, uuid.RFC_4122)
        assert partition_of(run_id, PARTITIONS) in held
    assert len({partition_of(run_id, PARTITIONS) for run_id in ids}) == len(held)  # every one of them is used
    random_bits = {uuid.UUID(run_id).int & ((1 << 62) - 1) for run_id in ids}
    assert len(random_bits) == 300


def test_one_partition_among_few_is_found_and_every_partition_takes_any_first_draw() -> None:
    assert partition_of(run_id_in({1}, 2) or "", 2) == 1
    assert run_id_in(frozenset(range(PARTITIONS)), PARTITIONS, draws=1) is not None


def test_nothing_is_drawn_without_a_partition_and_a_bound_that_finds_none_answers_none() -> None:
    assert run_id_in(frozenset(), PARTITIONS) is None
    assert run_id_in({5}, PARTITIONS, draws=0) is None
