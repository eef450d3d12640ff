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

EVENTS = 300
ROUNDS = 100_000
"""The fold's work: each event costs `ROUNDS` rounds of a loop, so the history takes seconds to fold, many
times a page's 2 seconds, and the kill lands after the first checkpoint and well before the end. The work is
the one of 1,500 events at 20,000 rounds, with a fifth of the events to publish, each one a request and a
ledger write (measured on a loaded 2-core machine: the kill came at 65 events folded of 300)."""
COUNTING = (
    "def fold(view, event):\n"
    f"    for _ in range({ROUNDS}):\n"
    "        pass\n"
    '    view["count"] += 1\n'
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
