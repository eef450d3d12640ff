"""Spec, recall-format.md: "How the view is kept": a server killed (SIGKILL) while a view folds a long history
resumes, after its restart, from the checkpoint the view had written, and folds no event twice: a fold that
counts its events and keeps their ids shows each published event exactly once, in the order recorded.

SQLite only: what is tested is a server process killed mid-fold, whose ledger file must hold the checkpoint it
had committed; PostgreSQL keeps what a killed client committed whatever the client does. The checkpoint row's
statements on both ledgers are `tests/ledger/test_recall_views.py`'s, and a view resuming from its checkpoint
without folding an event twice, on both ledgers, is `tests/recall_host/test_view_actors.py`'s."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conformance.helpers import fresh_id, new_playbook
from tests.conformance.recall.documents import caught_up, output_of, publish, recall, run, saved, standing_until
from tests.conformance.recall.own_server import OwnServer, own_server

EVENTS = 150
ROUNDS = 2_500
"""The fold's work: each event reads the clock `ROUNDS` times ten (about 53 million units, well within a call's
250 million, and about 40 ms on the quiet 2-core machine), so the history takes about three pages of 2 seconds to
fold and the kill lands after the first page's checkpoint and well before the end. The clock is read because a
call of the host costs the most time for its units: a loop of `pass` folds a call's whole 250 million units in
about 15 ms since the sandbox's calls went through Wasmtime's C API, and 300 events of 100,000 rounds then folded
within the first page, leaving no checkpoint to kill after."""
COUNTING = (
    "import time\n"
    "def fold(view, event):\n"
    "    now = time.time_ns\n"
    f"    for _ in range({ROUNDS}):\n" + "        now()\n" * 10 + '    view["count"] += 1\n'
    '    view["ids"].append(event["id"])\n'
    "    return view\n"
)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[OwnServer]:
    with own_server(tmp_path / "server", "sqlite") as own:
        yield own


@pytest.mark.slow(seconds=22)
def test_a_killed_server_resumes_its_views_from_their_checkpoints(server: OwnServer) -> None:
    first = server.start()
    kind = fresh_id("com.acme.long")
    with first.client() as client:
        playbook = new_playbook(client)
        ids = [publish(client, playbook, kind, {"n": index}, id=f"e-{index:05d}")["id"] for index in range(EVENTS)]
        source = recall(f"source:\n  events:\n    - type: {kind}\nview:\n  initial: {{count: 0, ids: []}}\n", COUNTING)
        saved(client, playbook, "long-count", source)
        before = standing_until(
            client,
            playbook,
            "long-count",
            lambda standing: standing["folded"] > 0 and standing["state"] == "rebuilding",
        )
    assert before["folded"] < EVENTS
    server.kill(first)
    again = server.start()
    with again.client() as client:
        resumed = client.get(f"{playbook}/definitions/recall/long-count").json()["standing"]
        assert resumed["folded"] >= before["folded"]
        assert resumed["version"] == 1
        done = caught_up(client, playbook, "long-count", EVENTS)
        assert done["folded"] == EVENTS
        view = output_of(run(client, playbook, "long-count"))
        assert view["count"] == EVENTS
        assert view["ids"] == ids
    assert again.stop() == 0
