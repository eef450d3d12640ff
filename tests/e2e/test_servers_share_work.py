"""Several servers on one PostgreSQL database share the work (issue 33's acceptance; design §3, settled point 28).

Two and three real servers on one fresh database take a mixed load, each request sent to a server picked at
random (`tests/e2e/mixed_load.py`): workflows with timers and a computation call, interaction answers, events
sent to listening runs, events published to the playbook and folded by a recall view, and a prediction build.
Every workflow start is taken where it arrives (no `unavailable`), every run ends exactly once, the view folds
each event once, and the partitions are spread over every server (`GET /v1/status`). Then the servers leave
and come back: a server stopped cleanly hands its partitions to the others, and one started again takes its
share back (`test_a_server_leaving_or_joining_hands_partitions_over`).

PostgreSQL only: partitions are leased on PostgreSQL, and a SQLite ledger is one server's file (one server holds
every partition there; `tests/e2e/test_workflow_crashes.py` covers it). Nothing here is timed: every wait polls
within a generous bound for what the servers answer.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from auto_runtime.ledger import partition_of, playbook_key
from tests.e2e.mixed_load import MixedLoad, prepare
from tests.e2e.shared_servers import SWEEP, Status, shared_servers, status_of

pytestmark = [pytest.mark.postgres, pytest.mark.slow]
ROUNDS = 6
PARTITIONS = 64
"""The default partition count (`WORKFLOW_PARTITIONS`): the servers here leave it unset."""


def held(statuses: list[Status]) -> dict[str, set[int]]:
    """Each server's partitions, as it says itself."""
    return {status.server: set(status.partitions) for status in statuses}


def run_load(load: MixedLoad) -> None:
    """The rounds, the build through three servers, the answers and sent events, then every run ended."""
    build = load.start_build()
    for _ in range(ROUNDS):
        load.round()
    load.finish_build(build)
    load.drive_all()
    load.wait_ended()


def applied_by_reaction(load: MixedLoad, holders: dict[str, set[int]], reacting: str) -> dict[str, int]:
    """How many of the runs the playbook's trigger started were in the reacting server's partitions (applied
    there) and how many in another server's (handed over to it)."""
    mine = holders[reacting]
    runs = load.reacting()
    here = sum(1 for run_id in runs if partition_of(run_id, PARTITIONS) in mine)
    return {"applied there": here, "handed over": len(runs) - here}


def applied_by(load: MixedLoad, holders: dict[str, set[int]]) -> dict[str, int]:
    """How many of the load's workflow runs each server applied: those of the partitions it held throughout."""
    counts = dict.fromkeys(holders, 0)
    for run_id in [*load.ticking, *load.asking, *load.listening, *load.hearing, *load.reacting()]:
        (holder,) = [server for server, numbers in holders.items() if partition_of(run_id, PARTITIONS) in numbers]
        counts[holder] += 1
    return counts


@pytest.mark.parametrize("count", [2, 3])
def test_servers_share_a_mixed_load_and_end_each_run_once(tmp_path: Path, count: int) -> None:
    """Runs are placed so that every server holds some (`MixedLoad.place`); since no partition moved during the
    load (the statuses before and after agree), each server applied the inputs of the runs of its partitions."""
    with shared_servers(tmp_path, count) as servers:
        before = held(servers.wait_balanced(PARTITIONS))
        assert len(before) == count, before
        load = prepare(servers)
        load.place(list(before.values()), PARTITIONS)
        run_load(load)
        with servers.any_alive().client() as client:
            load.check(client)
        assert held(servers.wait_balanced(PARTITIONS)) == before, "partitions moved under the load alone"
        applied = applied_by(load, before)
        print(f"\n{count} servers: workflow runs applied by each {sorted(applied.values())}, refused {load.refused}")
        assert all(applied.values()), applied
        org, playbook = load.playbook.split("/")[3], load.playbook.split("/")[5]
        home = partition_of(playbook_key(org, playbook), PARTITIONS)
        (reacting,) = [server for server, numbers in before.items() if home in numbers]
        handed = applied_by_reaction(load, before, reacting)
        print(f"the playbook's reactions on {reacting}: triggered runs applied there and handed over {handed}")
        assert sum(handed.values()) == len(load.published), handed  # (which ones are handed over is by chance:
        # tests/workflow_host/test_reactions_spread.py makes sure of both kinds)
        assert load.refused["start"] == 0, f"workflow starts refused where they arrived: {load.refused}"
        for index in range(count):
            servers.stop(index)


def test_a_server_leaving_or_joining_hands_partitions_over(tmp_path: Path) -> None:
    """Scale down: of three servers one stops cleanly and its partitions go to the two left, which take new
    load; scale up: it starts again and the three share the partitions again. Runs started before the stop
    and waiting on it end once. How long each hand-over took is printed (measured, never asserted)."""
    with shared_servers(tmp_path, 3) as servers:
        servers.wait_balanced(PARTITIONS)
        load = prepare(servers)
        build = load.start_build()
        for _ in range(ROUNDS):
            load.round()

        leaving = servers.slots[2].process
        assert leaving is not None
        leaving_id = status_of(leaving).server
        stopping = time.monotonic()
        servers.stop(2)
        after_stop = servers.wait_balanced(PARTITIONS)
        handed_over = time.monotonic() - stopping
        assert len(after_stop) == 2, after_stop
        assert all(len(status.servers) == 2 for status in after_stop), after_stop
        for _ in range(ROUNDS):
            load.round()

        servers.start(2)
        joining = time.monotonic()
        after_start = servers.wait_balanced(PARTITIONS)
        shared_again = time.monotonic() - joining
        print(
            f"\nhanded over {handed_over:.1f} s after SIGTERM (the stop included), shared again {shared_again:.1f} s"
            f" after the new server answered /health; sweep {SWEEP}"
        )
        assert len(after_start) == 3, after_start
        assert leaving_id not in {status.server for status in after_start}, "a server's id is one life's"
        load.finish_build(build)
        load.drive_all()
        load.wait_ended()
        with servers.any_alive().client() as client:
            load.check(client)
        assert load.refused["start"] == 0, f"workflow starts refused where they arrived: {load.refused}"
        for index in range(3):
            servers.stop(index)
