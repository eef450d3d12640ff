"""Spec, computation-format.md: "The checker" (and settled point 13): saves share two checkers of their own, a
save that finds none ready is `unavailable`, and a checker answers save after save. On a server of its own.

Every pass of a check is bounded now (YAML nesting, schema rules, parse depth, the compile pass's fuel), so no
document keeps a checker past its 2 seconds on an idle machine; the 2-second rule itself is tested on the
checkers (`tests/functions/computation/test_check.py`). Here the checkers are kept busy by many saves at once:
the test waits for the event (a save answered 503), never for a time.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conformance.computation.documents import HEAD, save, saved
from tests.conformance.helpers import new_playbook, problem
from tests.e2e.server_process import ServerProcess, start_server

MAIN = "def main(input):\n    return input\n"
SENDERS = 8
SAVES_EACH = 60
"""Enough saves for eight senders to find both checkers busy many times over; they stop at the first 503."""


def costly_to_check(index: int) -> str:
    """A valid program of about 40 KB: each save keeps a checker for its three passes."""
    body = "".join(f"    total = total + {value} * input\n" for value in range(1500))
    return HEAD + f"LABEL = {index}\ndef main(input):\n    total = 0\n{body}    return total\n"


@pytest.fixture(scope="module")
def own_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = start_server(Path(tmp_path_factory.mktemp("checker-server")))
    yield server
    assert server.stop() == 0, server.log()


def test_a_save_that_finds_no_checker_ready_is_unavailable_and_may_be_sent_again(own_server: ServerProcess) -> None:
    """Saves at once find both checkers busy: `unavailable` (503) with `Retry-After: 1`, nothing saved; the same
    call sent again once the others are answered is saved."""
    with own_server.client() as client:
        playbook = new_playbook(client)
    refused: list[tuple[str, httpx.Response]] = []
    others: list[httpx.Response] = []
    seen = threading.Event()
    lock = threading.Lock()

    def sender(number: int) -> None:
        with own_server.client() as own:
            for attempt in range(SAVES_EACH):
                if seen.is_set():
                    return
                name = f"costly-{number}-{attempt}"
                response = save(own, playbook, name, costly_to_check(attempt))
                with lock:
                    if response.status_code == 503:
                        refused.append((name, response))
                        seen.set()
                    else:
                        others.append(response)

    threads = [threading.Thread(target=sender, args=(number,)) for number in range(SENDERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert refused, "no save found both checkers busy"
    assert all(response.status_code == 201 for response in others), [r.text for r in others if r.status_code != 201]
    name, response = refused[0]
    problem(response, 503, "unavailable")
    assert response.headers.get("retry-after") == "1"
    with own_server.client() as client:
        problem(client.get(f"{playbook}/definitions/computation/{name}"), 404, "not_found")
        assert save(client, playbook, name, costly_to_check(0)).status_code == 201


def test_a_checker_answers_saves_one_after_another(own_server: ServerProcess) -> None:
    """Each save takes a checker for its own check only: many saves in a row are all checked."""
    with own_server.client() as client:
        playbook = new_playbook(client)
        for index in range(10):
            saved(client, playbook, f"quick-{index}", HEAD + MAIN)
