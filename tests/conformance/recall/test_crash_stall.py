"""Spec, recall-format.md, "When a view stalls": `crash`. A fold whose sandbox traps for a reason that is neither
work nor time (here comparing lists nested 5,000 deep overflows the sandbox's stack inside MicroPython) costs its
view a try at each sweep; the 20th stalls it with fixed words and no line, while another view goes on. On a
server of the tests' own whose sweep comes every 50 ms, so that 20 tries take about a second, on each ledger."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conformance.helpers import new_playbook, problem
from tests.conformance.recall.documents import (
    REBUILDS,
    others_go_on_and_a_correction_rebuilds,
    run,
    stall_with,
)
from tests.conformance.recall.own_server import OwnServer, own_server

OVERFLOWS = (
    "    a = []\n    b = []\n    for i in range(5000):\n        a = [a]\n        b = [b]\n    return view + [a == b]\n"
)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnServer]:
    folder = Path(tmp_path_factory.mktemp(f"recall-crash-{request.param}"))
    with own_server(folder, request.param) as own:
        yield own


@pytest.mark.slow(seconds=9)
def test_a_fold_whose_sandbox_traps_stalls_on_its_twentieth_try(server: OwnServer) -> None:
    live = server.start(WORKFLOW_SWEEP_INTERVAL="PT0.05S")
    with live.client() as client:
        playbook = new_playbook(client)
        name, standing, at = stall_with(client, playbook, OVERFLOWS)
        event_type = standing["stalled"]["event"]["type"]
        assert standing["stalled"]["kind"] == "crash"
        assert standing["stalled"]["error"] == "the sandbox failed on 20 tries"
        assert standing["stalled"]["line"] is None
        refused = problem(run(client, playbook, name), 409, "conflict", "stalled")
        assert refused["detail"] == (
            f'The view of "{name}" is stalled at the {event_type} event recorded at {at}: '
            f"the sandbox failed on 20 tries. {REBUILDS}"
        )
        others_go_on_and_a_correction_rebuilds(client, playbook, name, event_type)
    assert live.stop() == 0
