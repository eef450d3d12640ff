"""Spec, recall-format.md: "How a run answers": the input, the view as it stands (rebuilding, live), `answer`
and its endings, the output schema, the record, and the clock `answer` reads."""

from __future__ import annotations

import re
from datetime import datetime

import httpx

from tests.conformance.helpers import fresh_id, pointers, problem
from tests.conformance.recall.documents import caught_up, output_of, publish, recall, run, saved

NOT_BEGUN = r'The view of "{name}" version 1 has not started building yet; try again shortly'
BUILDING = (
    r'The view of "{name}" version 1 is being built: \d+ events folded so far, '
    r"(less than a second|\d+ (day|hour|minute|second)s?) behind the playbook's newest record; try again shortly"
)


def answering(client: httpx.Client, playbook: str, module: str, front: str = "") -> str:
    """A live view of one published event `{"n": 4}`, whose module is `module`."""
    kind = fresh_id("com.acme.answer")
    name = fresh_id("answer")
    saved(
        client, playbook, name, recall(f"source:\n  events:\n    - type: {kind}\nview:\n  initial: 0\n{front}", module)
    )
    publish(client, playbook, kind, {"n": 4})
    caught_up(client, playbook, name, 1)
    return name


FOLD = "def fold(view, event):\n    return view + event['data']['n']\n"


def test_a_view_being_built_answers_rebuilding_with_its_own_problem_type(client: httpx.Client, playbook: str) -> None:
    kind = fresh_id("com.acme.slow")
    for index in range(30):
        publish(client, playbook, kind, {"n": index})
    name = fresh_id("slow")
    module = "def fold(view, event):\n    for _ in range(100000):\n        pass\n    return view + 1\n"
    saved(client, playbook, name, recall(f"source:\n  events:\n    - type: {kind}\nview:\n  initial: 0\n", module))
    response = run(client, playbook, name)
    body = problem(response, 503, "unavailable", "rebuilding")
    assert body["type"] == "https://on.auto/problems/rebuilding"
    assert body["title"] == "Rebuilding"
    assert response.headers["retry-after"] == "5"
    assert re.fullmatch(NOT_BEGUN.format(name=name), body["detail"]) or re.fullmatch(
        BUILDING.format(name=name), body["detail"]
    ), body["detail"]
    caught_up(client, playbook, name, 30)
    assert output_of(run(client, playbook, name)) == 30


def test_input_is_checked_and_defaults_to_an_empty_object(client: httpx.Client, playbook: str) -> None:
    module = FOLD + "def answer(view, input):\n    return [view, input]\n"
    front = "input:\n  schema: { type: object, properties: { k: { type: integer } } }\n"
    name = answering(client, playbook, module, front)
    assert output_of(run(client, playbook, name)) == [4, {}]
    assert output_of(run(client, playbook, name, {"k": 2})) == [4, {"k": 2}]
    refused = problem(run(client, playbook, name, {"k": "two"}), 422, "invalid_input")
    assert pointers(refused) == ["/input/k"]


def test_without_answer_the_view_is_the_output_with_no_work(client: httpx.Client, playbook: str) -> None:
    name = answering(client, playbook, FOLD)
    ran = run(client, playbook, name)
    assert output_of(ran) == 4
    record = client.get(f"{playbook}/runs/{ran.json()['run_id']}").json()["record"]
    assert record["work"] == 0
    assert record["view"]["folded"] == 1
    assert record["view"]["version"] == 1


def test_answer_reads_the_moment_the_run_started(client: httpx.Client, playbook: str) -> None:
    name = answering(client, playbook, "import time\n" + FOLD + "def answer(view, input):\n    return time.time()\n")
    ran = run(client, playbook, name)
    started = client.get(f"{playbook}/runs/{ran.json()['run_id']}").json()["started_at"]
    moment = datetime.fromisoformat(started.replace("Z", "+00:00")).timestamp()
    assert abs(output_of(ran) - moment) < 0.001


def test_answer_endings_are_unworkable_in_the_computation_words(client: httpx.Client, playbook: str) -> None:
    raising = answering(client, playbook, FOLD + "\ndef answer(view, input):\n    raise ValueError('gone')\n")
    body = problem(run(client, playbook, raising), 409, "conflict", "unworkable")
    assert body["detail"] == "Line 13 of answer raised ValueError: gone"
    looping = answering(client, playbook, FOLD + "def answer(view, input):\n    while True:\n        pass\n")
    body = problem(run(client, playbook, looping), 409, "conflict", "unworkable")
    assert body["detail"] == "answer used up its 250,000,000 units of work and was stopped"
    unwritable = answering(client, playbook, FOLD + "def answer(view, input):\n    return {1, 2}\n")
    body = problem(run(client, playbook, unwritable), 409, "conflict", "unworkable")
    assert body["detail"] == "The output cannot be written as JSON: a value of type set at the top"
    large = answering(client, playbook, FOLD + "def answer(view, input):\n    return 'x' * 1046527\n")
    body = problem(run(client, playbook, large), 409, "conflict", "unworkable")
    assert body["detail"] == "The output is larger than the 1,046,528 bytes of JSON a run may return"
    schema = answering(client, playbook, FOLD, "output:\n  schema: { type: string }\n")
    body = problem(run(client, playbook, schema), 409, "conflict", "unworkable")
    assert body["detail"].startswith("The output does not match the output schema: ")
