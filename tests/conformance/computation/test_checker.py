"""Spec, computation-format.md: "The checker" (and settled point 13): the check's 2 seconds, a checker busy
with other saves, and checkers started again after a check that ran out of time. On a server of its own.

A check is made slow from outside with a small front matter whose schema refers to itself through YAML
aliases: every level multiplies the subschemas the first pass must check as JSON Schemas.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.conformance.computation.documents import HEAD, save, saved
from tests.conformance.helpers import new_playbook, problem
from tests.e2e.server_process import ServerProcess, start_server

TIMED_OUT = "The check of the program did not finish within 2 seconds; make the program smaller or simpler"
MAIN = "def main(input):\n    return input\n"


def slow_to_check(levels: int = 6, fan: int = 10) -> str:
    """A valid document of a few hundred bytes whose schema holds `fan ** levels` subschemas by alias: its
    first pass alone takes minutes."""
    lines = ["---", "language: python", "input:", "  schema:", "    $defs:", "      l0: &l0 {type: string}"]
    for level in range(1, levels + 1):
        references = ", ".join([f"*l{level - 1}"] * fan)
        lines.append(f"      l{level}: &l{level} {{allOf: [{references}]}}")
    return "\n".join([*lines, "---", MAIN])


@pytest.fixture(scope="module")
def own_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = start_server(Path(tmp_path_factory.mktemp("checker-server")))
    yield server
    assert server.stop() == 0, server.log()


@dataclass
class BusyCheckers:
    slow: list[httpx.Response]
    while_busy: httpx.Response
    after: httpx.Response
    playbook: str


@pytest.fixture(scope="module")
def busy(own_server: ServerProcess) -> BusyCheckers:
    """Two slow saves at once take both checkers; a third save is sent while they check; once both have
    answered, the third is sent again."""
    with own_server.client() as client:
        playbook = new_playbook(client)
        slow: list[httpx.Response | None] = [None, None]

        def send(index: int) -> None:
            with own_server.client() as own:
                slow[index] = save(own, playbook, f"slow-{index}", slow_to_check())

        threads = [threading.Thread(target=send, args=(index,)) for index in range(2)]
        for thread in threads:
            thread.start()
        time.sleep(0.5)
        while_busy = save(client, playbook, "quick", HEAD + MAIN)
        for thread in threads:
            thread.join()
        after = save(client, playbook, "quick", HEAD + MAIN)
    return BusyCheckers([response for response in slow if response is not None], while_busy, after, playbook)


@pytest.mark.slow
def test_a_check_past_2_seconds_is_invalid_input_without_a_line(own_server: ServerProcess, busy: BusyCheckers) -> None:
    """The checker does not finish within 2 seconds: `invalid_input` (422), one error at `/source` without a
    line. Nothing is saved. The check is stopped in whichever pass it is, so the answer comes at its 2 seconds
    (this document's first pass alone would take minutes), never asserted as a time."""
    assert len(busy.slow) == 2
    for index, response in enumerate(busy.slow):
        body = problem(response, 422, "invalid_input")
        assert body["errors"] == [{"detail": TIMED_OUT, "pointer": "/source"}]
        with own_server.client() as client:
            problem(client.get(f"{busy.playbook}/definitions/computation/slow-{index}"), 404, "not_found")


@pytest.mark.slow
def test_a_save_that_finds_no_checker_ready_is_unavailable(busy: BusyCheckers) -> None:
    """The checkers are busy with other saves: `unavailable` (503) with `Retry-After: 1`."""
    problem(busy.while_busy, 503, "unavailable")
    assert busy.while_busy.headers.get("retry-after") == "1"


@pytest.mark.slow
def test_the_same_save_may_be_sent_again_and_checkers_start_again(busy: BusyCheckers) -> None:
    """The same call may be sent again; a checker is started again after a check that ran out of time."""
    assert busy.after.status_code == 201, busy.after.text


def test_a_checker_answers_saves_one_after_another(own_server: ServerProcess) -> None:
    """Each save takes a checker for its own check only: many saves in a row are all checked."""
    with own_server.client() as client:
        playbook = new_playbook(client)
        for index in range(10):
            saved(client, playbook, f"quick-{index}", HEAD + MAIN)
