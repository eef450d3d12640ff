"""Fair model processes, end to end (prediction-format §12–§13, issue 37 item 10): with every model process busy
on one org's slow questions and more of them waiting, another org's trivial question is served by the next
process that frees, before the busy org's waiting questions; and a question whose model runs past its 10 seconds
answers that its model ran too long, however long it waited for its process first.

A server of its own with `PREDICTION_PROCESSES=2` and `PREDICTION_BUILDS_AT_ONCE=1`, on SQLite, whose one writer
gives every record its place in one order (`global_position`). Org A and org B each build the same version: a
linear model that loops 250,000 steps (about a second on the machine measured) for each unit its largest history
value passes 11.5, and answers at once below it. Org A sends `SLOW_QUESTIONS` questions about the series `slow`
(12.5: one unit past) all at once; once every one is recorded as started (each then holds a process or waits for
one), org B asks about the series `quick` (below the gate). The evidence is the ledger's order, not a time: how
many of A's questions recorded their ending between B's `run_started` and B's ending. A fair queue hands B the
first of the two busy processes that frees, so at most one of A's questions per process ends in between, and one
more at most that freed its process in the instant between B's start being recorded and B joining the queue; a
queue in arrival order would first serve every one of A's questions queued before B.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conformance.helpers import new_playbook, problem
from tests.conformance.prediction.seeding import TRAINER
from tests.conformance.prediction.test_builds import _build, _function
from tests.conformance.prediction.test_candidates import _upload
from tests.conformance.prediction.test_full_cycle import _ended, _inbox
from tests.e2e.server_process import ServerProcess, start_server
from tests.functions.prediction.onnx_models import slow_past

PROCESSES = 2
SLOW_QUESTIONS = 10
SLOW = slow_past(2, [[-1], [2]], 0.5, 11.5, 250_000)
DATA = (
    "period,series,units\n"
    + "".join(f"2025-{month:02d},a,{month}\n" for month in range(1, 13))
    + "2025-11,slow,11\n2025-12,slow,12.5\n"
    + "2025-11,quick,1\n2025-12,quick,2\n"
    + "2025-11,stuck,11\n2025-12,stuck,1000000000\n"
).encode()
RAN_TOO_LONG = "The model ran longer than 10 seconds; its process is ended."
NO_PROCESS_FREE = "No model process was free within 10 seconds; ask again shortly."
POLLS = 3000
"""How often to look for A's questions to be recorded as started before giving up (a liveness bound)."""


@pytest.fixture(scope="module")
def two_processes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder = Path(tmp_path_factory.mktemp("fair-model-processes"))
    server = start_server(
        folder,
        {
            "LEDGER_FILE": str(folder / "data" / "ledger.db"),
            "PREDICTION_PROCESSES": str(PROCESSES),
            "PREDICTION_BUILDS_AT_ONCE": "1",
            "PREDICTION_CACHE_DIR": str(folder / "cache"),
        },
    )
    yield server
    assert server.stop() == 0, server.log()


def _active(client: httpx.Client, org: str) -> tuple[str, str, str]:
    """A playbook of `org` whose function `units` has the slow version active: its URL, the function's and the
    build's run id."""
    playbook = new_playbook(client, org)
    trainer = client.post(f"{playbook}/definitions/interaction", json={"name": "train-forecasts", "source": TRAINER})
    assert trainer.status_code == 201, trainer.text
    function = _function(client, playbook, DATA)
    run_id = _build(client, function).json()["run_id"]
    digest = _upload(client, playbook, run_id, SLOW).json()["candidate"]
    _inbox(client, playbook, run_id, {"candidates": [digest]})
    assert _ended(client, playbook, run_id)["output"]["state"] == "active"
    return playbook, function, run_id


def _ask(client: httpx.Client, function: str, series: str) -> httpx.Response:
    return client.post(f"{function}/run", json={"input": {"series": series}})


def _positions(client: httpx.Client, playbook: str, event_type: str) -> dict[str, int]:
    """Each run's `event_type` event's place in the ledger's one order, by run id."""
    response = client.get(f"{playbook}/events", params={"type": event_type, "limit": 100})
    assert response.status_code == 200, response.text
    return {event["metadata"]["run_id"]: event["metadata"]["global_position"] for event in response.json()["events"]}


def _questions(client: httpx.Client, playbook: str, build: str) -> set[str]:
    """The run ids of the function's questions (its runs but its build)."""
    response = client.get(f"{playbook}/runs", params={"name": "units", "limit": 100})
    assert response.status_code == 200, response.text
    return {run["run_id"] for run in response.json()["runs"]} - {build}


def test_another_orgs_question_is_served_before_the_busy_orgs_waiting_questions(
    two_processes: ServerProcess,
) -> None:
    with two_processes.client() as client:
        playbook_a, function_a, build_a = _active(client, "org-a")
        playbook_b, function_b, _ = _active(client, "org-b")
        assert _ask(client, function_b, "quick").status_code == 200

        answers: list[httpx.Response] = []
        lock = threading.Lock()
        barrier = threading.Barrier(SLOW_QUESTIONS)

        def send() -> None:
            with two_processes.client() as own:
                barrier.wait()
                answer = _ask(own, function_a, "slow")
            with lock:
                answers.append(answer)

        senders = [threading.Thread(target=send) for _ in range(SLOW_QUESTIONS)]
        for sender in senders:
            sender.start()
        for _ in range(POLLS):
            if len(_questions(client, playbook_a, build_a)) == SLOW_QUESTIONS:
                break
            time.sleep(0.01)
        asked_a = _questions(client, playbook_a, build_a)
        assert len(asked_a) == SLOW_QUESTIONS, "org A's questions were never all started"
        answer_b = _ask(client, function_b, "quick")
        for sender in senders:
            sender.join()

        assert answer_b.status_code == 200, answer_b.text
        run_b = answer_b.json()["run_id"]
        b_started = _positions(client, playbook_b, "run_started")[run_b]
        b_ended = _positions(client, playbook_b, "run_succeeded")[run_b]
        a_started = {
            run_id: at for run_id, at in _positions(client, playbook_a, "run_started").items() if run_id in asked_a
        }
        a_ended = {
            run_id: at
            for kind in ("run_succeeded", "run_rejected")
            for run_id, at in _positions(client, playbook_a, kind).items()
            if run_id in a_started
        }

    assert len(a_started) == len(a_ended) == SLOW_QUESTIONS
    in_between = sorted(run_id for run_id, at in a_ended.items() if b_started < at < b_ended)
    queued_before_b = [run_id for run_id, at in a_started.items() if at < b_started and a_ended[run_id] > b_started]
    assert len(queued_before_b) >= PROCESSES + 4, (
        f"only {len(queued_before_b)} of A's questions were still holding or waiting for a process when B's "
        "question started: too few for the order to show"
    )
    assert len(in_between) <= PROCESSES + 1, (
        f"{len(in_between)} of org A's questions ended between B's question starting and ending; a fair queue lets "
        f"at most one per process ({PROCESSES}) end first, and one that freed its process before B joined the queue"
    )
    assert b_ended < max(a_ended.values()), "B's question was answered only after every one of A's"
    assert len(answers) == SLOW_QUESTIONS
    for answer in answers:
        if answer.status_code == 200:
            assert answer.json()["output"]["lines"][1]["points"][0]["value"] == 14
        else:
            assert problem(answer, 503, "unavailable")["detail"] in {NO_PROCESS_FREE, RAN_TOO_LONG}
            assert answer.headers["retry-after"] == "1"


@pytest.mark.slow(seconds=12)
def test_a_model_past_its_time_answers_that_it_ran_too_long(two_processes: ServerProcess) -> None:
    with two_processes.client() as client:
        _, function, _ = _active(client, "org-c")
        slow = _ask(client, function, "stuck")
        body = problem(slow, 503, "unavailable")
        assert body["detail"] == RAN_TOO_LONG and "kind" not in body, body
        assert slow.headers["retry-after"] == "1"
        assert _ask(client, function, "quick").status_code == 200
