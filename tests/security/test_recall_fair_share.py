"""One playbook's slow recall view takes no more than its share of the sandbox workers (issue 37, item 7; spec
README, settled point 4: recall folds in at most half of the workers).

A server of its own with `COMPUTATION_WORKERS=2`, so folds hold at most one worker, on each ledger. Playbook A
keeps a view of about 500 KB, written and read back as JSON around every fold, and is sent `SLOW_EVENTS` events:
a backlog that keeps its view folding page after page (about 3.5 events a second at that size on the machine
measured). Once A's view is folding, playbook B of the same org runs a trivial computation `QUICK_RUNS` times
and publishes `QUICK_EVENTS` events to its small view. The evidence is order and accounting, never time:

- B's runs all succeed (none waits out its 10 s for a worker) and B's view catches up with its events while A's
  view has still not folded its backlog;
- the pool's own accounting, one `debug` line each time it hands a worker to a job (`workers.WorkerPool`), shows
  that A's folds never held more than one worker, that folds never held more than their limit, and that B's
  folds and runs were handed workers while A's backlog lasted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from tests.conformance.computation.documents import HEAD
from tests.conformance.computation.documents import output_of as run_output
from tests.conformance.computation.documents import run as run_computation
from tests.conformance.computation.documents import saved as saved_computation
from tests.conformance.recall.documents import caught_up, counting, publish, recall, saved, standing_of, standing_until
from tests.e2e.server_process import ServerProcess, start_server
from tests.postgres_support import fresh_database, server_on

WORKERS = 2
ORG = "acme"
SLOW, QUICK = "slow-view", "quick-view"
SLOW_EVENTS = 120
QUICK_EVENTS = 5
QUICK_RUNS = 5
SLOW_TYPE, QUICK_TYPE = "com.acme.bench.slow", "com.acme.bench.quick"
LARGE_VIEW = recall(
    f"source:\n  events:\n    - type: {SLOW_TYPE}\nview:\n  initial: {{n: 0}}\n",
    'PAD = 500000\n\ndef fold(view, event):\n    if "pad" not in view:\n        view["pad"] = "x" * PAD\n'
    '    view["n"] += 1\n    return view\n',
)
"""A view of about 500 KB from its first fold on, which every later fold receives and returns whole."""


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def two_workers(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder = Path(tmp_path_factory.mktemp(f"recall-fair-share-{request.param}"))
    settings = {"COMPUTATION_WORKERS": str(WORKERS), "LOG_LEVEL": "debug", "LOG_FORMAT": "json"}
    with ExitStack() as stack:
        if request.param == "postgres":
            settings.update(server_on(stack.enter_context(fresh_database("recall_fair_share"))))
        server = start_server(folder, settings)
        yield server
        assert server.stop() == 0, server.log()


def worker_takes(server: ServerProcess) -> list[dict[str, Any]]:
    """The sandbox pool's lines for each worker it handed to a job, in the order it handed them."""
    takes = []
    for line in server.log().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("pool") == "sandbox" and "owner_holds" in entry:
            takes.append(entry)
    return takes


@pytest.mark.slow(seconds=10)
def test_a_slow_view_leaves_the_other_playbook_its_runs_and_its_view(two_workers: ServerProcess) -> None:
    with two_workers.client() as client:
        slow, quick = (f"/v1/orgs/{ORG}/playbooks/{name}" for name in (SLOW, QUICK))
        for name in (SLOW, QUICK):
            created = client.post(f"/v1/orgs/{ORG}/playbooks", json={"playbook": name, "name": name})
            assert created.status_code == 201, created.text
        saved(client, slow, "large", LARGE_VIEW)
        saved(client, quick, "small", counting(QUICK_TYPE))
        saved_computation(client, quick, "echo", HEAD + "def main(input):\n    return input\n")

        for index in range(SLOW_EVENTS):
            publish(client, slow, SLOW_TYPE, {"index": index})
        standing_until(client, slow, "large", lambda standing: standing["folded"] >= 1)

        for index in range(QUICK_RUNS):
            assert run_output(run_computation(client, quick, "echo", index)) == index
        for index in range(QUICK_EVENTS):
            publish(client, quick, QUICK_TYPE, {"index": index})
        assert caught_up(client, quick, "small", QUICK_EVENTS)["folded"] == QUICK_EVENTS
        behind = standing_of(client, slow, "large")
        assert behind["folded"] < SLOW_EVENTS, "the slow view was still folding its backlog meanwhile"

    takes = worker_takes(two_workers)
    slow_folds = [t for t in takes if t["playbook"] == SLOW and t["kind"] == "fold"]
    quick_folds = [t for t in takes if t["playbook"] == QUICK and t["kind"] == "fold"]
    quick_runs = [t for t in takes if t["playbook"] == QUICK and t["kind"] == "run"]
    assert slow_folds and quick_folds and len(quick_runs) >= QUICK_RUNS
    assert all(t["fold_limit"] == WORKERS // 2 and t["folds"] <= t["fold_limit"] for t in takes)
    assert max(t["owner_holds"] for t in slow_folds) == 1, "A's folds never held more than one worker"
    first_quick = min(takes.index(t) for t in quick_folds + quick_runs)
    assert any(takes.index(t) < first_quick for t in slow_folds), "A's view was folding before B asked"
