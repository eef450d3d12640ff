"""Spec, recall-format.md: "Settings and workers": `RECALL_MAX_FUNCTIONS` (the refusal, and what lowering it
does) and `RECALL_MAX_REBUILDS` (the views past it wait, in the order their versions were saved), on a server of
the tests' own.

SQLite only: the settings are applied by the recall host and the definitions' actors, the same code on either
ledger. What the ledger does for them runs on both ledgers elsewhere: the views' rows
(`tests/ledger/test_recall_views.py`), passes one playbook at a time (`tests/recall_host/test_keeper.py`), views
resumed from their rows (`tests/recall_host/test_view_actors.py`), and views read from a playbook's recall
functions on the shared server of each ledger (`test_views.py`, `test_saving.py`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conformance.helpers import fresh_id, new_playbook, problem
from tests.conformance.recall.documents import (
    caught_up,
    counting,
    output_of,
    publish,
    recall,
    run,
    save,
    saved,
    standing_of,
    standing_until,
    update,
)
from tests.conformance.recall.own_server import OwnServer, own_server

WAITS = 'The view of "{name}" version 1 waits for other views of this playbook to finish building; try again shortly'


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnServer]:
    folder = Path(tmp_path_factory.mktemp("recall-settings"))
    with own_server(folder, "sqlite") as own:
        yield own


def test_the_most_recall_functions_and_what_lowering_it_does(server: OwnServer) -> None:
    kind = fresh_id("com.acme.kept")
    first = server.start(RECALL_MAX_FUNCTIONS="2")
    with first.client() as client:
        playbook = new_playbook(client)
        saved(client, playbook, "kept-a", counting(kind))
        saved(client, playbook, "kept-b", counting(kind))
        refused = problem(save(client, playbook, "kept-c", counting(kind)), 409, "conflict")
        assert refused["detail"] == (
            "This playbook keeps 2 active recall functions and may keep at most 2; retire one first"
        )
        update(client, playbook, "kept-a", counting(kind).replace("+= 1", "+= 2"))
        assert client.post(f"{playbook}/definitions/recall/kept-b/retire").status_code == 200
        saved(client, playbook, "kept-c", counting(kind))
        other = new_playbook(client)
        saved(client, other, "kept-a", counting(kind))
    assert first.stop() == 0
    lowered = server.start(RECALL_MAX_FUNCTIONS="1")
    try:
        with lowered.client() as client:
            refused = problem(save(client, playbook, "kept-d", counting(kind)), 409, "conflict")
            assert refused["detail"] == (
                "This playbook keeps 2 active recall functions and may keep at most 1; retire one first"
            )
            update(client, playbook, "kept-c", counting(kind).replace("+= 1", "+= 3"))
            publish(client, playbook, kind, None)
            caught_up(client, playbook, "kept-a", 1)
            caught_up(client, playbook, "kept-c", 1)
            assert output_of(run(client, playbook, "kept-a"))["count"] == 2
            assert output_of(run(client, playbook, "kept-c"))["count"] == 3
            assert client.post(f"{playbook}/definitions/recall/kept-a/retire").status_code == 200
            problem(save(client, playbook, "kept-e", counting(kind)), 409, "conflict")
    finally:
        assert lowered.stop() == 0


def slow_view(kind: str, loops: int) -> str:
    """A view of `kind` whose fold spends `loops` empty iterations before counting (1,154 units each on the pinned
    snapshot: 200,000 of them take 231 million of a fold's 250 million units)."""
    return recall(
        f"source:\n  events:\n    - type: {kind}\nview:\n  initial: 0\n",
        f"def fold(view, event):\n    for _ in range({loops}):\n        pass\n    return view + 1\n",
    )


@pytest.mark.slow(seconds=14)
def test_views_past_the_most_rebuilds_wait_their_turn(server: OwnServer) -> None:
    """Which views rebuild is decided when a pass reads the definitions, so both functions are saved while the
    keeper is busy with another playbook's pass (one playbook at once, about 3.4 s of folding, seen after its
    first page of 2 s): the pass that then reads them sees both, and the second waits for the first, whose folds
    keep it rebuilding for about 2 s."""
    live = server.start(RECALL_MAX_REBUILDS="1", RECALL_PLAYBOOKS_AT_ONCE="1")
    try:
        with live.client() as client:
            busy, playbook = new_playbook(client), new_playbook(client)
            kind = fresh_id("com.acme.turn")
            for index in range(200):
                publish(client, busy, kind, {"n": index})
            for index in range(120):
                publish(client, playbook, kind, {"n": index})
            saved(client, busy, "keeps-the-keeper-busy", slow_view(kind, 200_000))
            busy_standing = standing_until(client, busy, "keeps-the-keeper-busy", lambda s: s["checkpoint"] is not None)
            assert busy_standing["state"] == "rebuilding", "the busy playbook's pass must still be going on"
            saved(client, playbook, "turn-first", slow_view(kind, 200_000))
            saved(client, playbook, "turn-second", slow_view(kind, 1))
            waiting = standing_until(
                client, playbook, "turn-second", lambda s: s["checkpoint"] is not None or s["state"] == "waiting"
            )
            assert waiting["state"] == "waiting"
            assert standing_of(client, playbook, "turn-first")["state"] == "rebuilding"
            refused = problem(run(client, playbook, "turn-second"), 503, "unavailable", "rebuilding")
            assert refused["detail"] == WAITS.format(name="turn-second")
            assert caught_up(client, playbook, "turn-first", 120)["folded"] == 120
            assert caught_up(client, playbook, "turn-second", 120)["folded"] == 120
    finally:
        assert live.stop() == 0


def test_with_one_playbook_at_once_two_playbooks_passes_never_overlap(server: OwnServer) -> None:
    """`RECALL_PLAYBOOKS_AT_ONCE` at 1: the server's own log of its passes (`recall_pass_started` and
    `recall_pass_ended`, at debug) shows two playbooks' passes one after the other, never one inside another."""
    live = server.start(RECALL_PLAYBOOKS_AT_ONCE="1", LOG_FORMAT="json", LOG_LEVEL="debug")
    try:
        with live.client() as client:
            kind = fresh_id("com.acme.one-at-once")
            playbooks = [new_playbook(client), new_playbook(client)]
            for playbook in playbooks:
                for index in range(30):
                    publish(client, playbook, kind, {"n": index})
            for playbook in playbooks:
                saved(client, playbook, "at-once", counting(kind))
            for index in range(30, 33):
                for playbook in playbooks:
                    publish(client, playbook, kind, {"n": index})
            for playbook in playbooks:
                assert caught_up(client, playbook, "at-once", 33)["folded"] == 33
    finally:
        assert live.stop() == 0
    entries = [json.loads(line) for line in live.log().splitlines() if line.startswith("{")]
    lines = [
        (entry["message"], entry["playbook"])
        for entry in entries
        if entry["message"] in ("recall_pass_started", "recall_pass_ended")
    ]
    names = {playbook.rsplit("/", 1)[-1] for playbook in playbooks}
    assert names <= {name for _message, name in lines}
    in_flight: str | None = None
    for message, name in lines:
        if message == "recall_pass_started":
            assert in_flight is None, f"{name} was passed while {in_flight} was"
            in_flight = name
        else:
            assert in_flight == name
            in_flight = None
