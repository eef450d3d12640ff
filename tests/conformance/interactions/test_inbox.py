"""Asking a party in the inbox, end to end over HTTP (interaction-format §3, §6, §7, §8, §10)."""

from __future__ import annotations

import uuid

import httpx

from tests.conformance.helpers import new_playbook, pointers, problem
from tests.conformance.interactions.conftest import OPEN_REQUESTS
from tests.conformance.interactions.documents import (
    NOTIFICATION,
    QUESTION,
    answer,
    ask,
    defined,
    ended,
    history_types,
    open_requests,
    run_of,
)

LEAD = {"lead": "ana@example.com", "service": "billing"}


def test_a_question_waits_in_the_inbox_and_takes_its_answer(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    defined(client, playbook, "deploy", QUESTION)
    run_id = str(uuid.uuid4())
    response = ask(client, playbook, "deploy", LEAD, run_id)
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "started"
    listed = open_requests(client, playbook)
    assert listed["has_more"] is False and listed["next_cursor"] is None
    [item] = listed["interactions"]
    assert item["run_id"] == run_id
    assert item["type"] == "interaction" and item["function"] == "deploy" and item["version"] == 1
    assert item["to"] == "ana@example.com"
    assert item["delivery"] is None
    assert item["message"] == "May **billing** go out tonight? Reply go or hold.\n"
    assert item["takes_answer"] is True
    assert item["answer_schema"]["required"] == ["decision"]
    assert item["attempts"] == 0 and item["conversation"] is None and item["reply_refusals"] == 0
    assert item["standing"] == "in_inbox"
    assert item["requested_at"] < item["expires_at"]
    assert ask(client, playbook, "deploy", LEAD, run_id).json()["status"] == "started"

    answered = answer(client, playbook, run_id, {"decision": "go"}, claimed_for="the on-call lead")
    assert answered.status_code == 200, answered.text
    fact = answered.json()
    assert fact["run_id"] == run_id and fact["answer"] == {"decision": "go"}
    assert fact["claimed_for"] == "the on-call lead" and fact["answered_by"] and fact["answered_at"]
    again = answer(client, playbook, run_id, {"decision": "go"}, claimed_for="the on-call lead")
    assert again.status_code == 200 and again.json()["answer_id"] == fact["answer_id"]
    assert open_requests(client, playbook)["interactions"] == []
    run = ended(client, playbook, run_id)
    assert run["status"] == "succeeded" and run["output"] == {"decision": "go"}
    assert run["record"]["answered_by"] == fact["answered_by"]
    assert run["record"]["claimed_for"] == "the on-call lead"
    assert answer(client, playbook, run_id, {"decision": "go"}).json()["answer_id"] == fact["answer_id"]
    problem(answer(client, playbook, run_id, {"decision": "hold"}), 409, "conflict")
    types = history_types(client, playbook, run_id)
    assert types == ["run_started", "interaction_requested", "request_answered", "run_succeeded"]
    assert ask(client, playbook, "deploy", LEAD, run_id).json()["output"] == {"decision": "go"}


def test_answers_that_do_not_fit_are_refused_and_the_request_stays_open(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    defined(client, playbook, "deploy", QUESTION)
    run_id = str(uuid.uuid4())
    assert ask(client, playbook, "deploy", LEAD, run_id).status_code == 200
    body = problem(answer(client, playbook, run_id, {"decision": "maybe"}), 422, "invalid_input")
    assert pointers(body) == ["/answer/decision"]
    big = {"decision": "go", "reason": "x" * (65 * 1024)}
    assert "/answer" in pointers(problem(answer(client, playbook, run_id, big), 422, "invalid_input"))
    long_claim = answer(client, playbook, run_id, {"decision": "go"}, claimed_for="é" * 200)
    assert pointers(problem(long_claim, 422, "invalid_input")) == ["/claimed_for"]
    assert [i["run_id"] for i in open_requests(client, playbook)["interactions"]] == [run_id]
    problem(answer(client, playbook, str(uuid.uuid4()), {"decision": "go"}), 404, "not_found")


def test_a_notification_to_the_inbox_ends_at_once_and_takes_no_answer(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    defined(client, playbook, "shipped", NOTIFICATION)
    run_id = str(uuid.uuid4())
    response = ask(client, playbook, "shipped", LEAD, run_id)
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "succeeded" and response.json()["output"] == {}
    record = run_of(client, playbook, run_id)["record"]
    assert record["to"] == "ana@example.com" and record["message"] == "billing went out.\n"
    assert set(record) == {"to", "message", "expires_at", "requested_at"}
    assert open_requests(client, playbook)["interactions"] == []
    problem(answer(client, playbook, run_id, {}), 409, "conflict")


def test_cancelling_a_request_ends_it_cancelled_and_refuses_answers(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    defined(client, playbook, "deploy", QUESTION)
    run_id = str(uuid.uuid4())
    assert ask(client, playbook, "deploy", LEAD, run_id).status_code == 200
    cancelled = client.post(f"{playbook}/runs/{run_id}/cancel", json={"reason": "the change was withdrawn"})
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["status"] in ("started", "rejected")
    problem(answer(client, playbook, run_id, {"decision": "go"}), 409, "conflict")
    run = ended(client, playbook, run_id)
    assert run["status"] == "rejected"
    assert run["rejection"]["reason"] == "cancelled" and run["rejection"]["kind"] == "requested"
    assert run["rejection"]["detail"] == "the change was withdrawn"
    assert open_requests(client, playbook)["interactions"] == []
    problem(client.post(f"{playbook}/runs/{run_id}/cancel", json={}), 409, "conflict")
    problem(ask(client, playbook, "deploy", LEAD, run_id), 409, "cancelled", "requested")
    assert history_types(client, playbook, run_id)[-2:] == ["run_cancel_requested", "run_rejected"]


def test_the_inbox_lists_newest_first_with_filters_and_pages(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    defined(client, playbook, "deploy", QUESTION)
    defined(client, playbook, "other", QUESTION)
    asked = []
    for index, (name, lead) in enumerate([("deploy", "ana"), ("other", "bo"), ("deploy", "bo")]):
        run_id = str(uuid.uuid4())
        assert ask(client, playbook, name, {"lead": lead, "service": f"s{index}"}, run_id).status_code == 200
        asked.append(run_id)
    newest_first = [item["run_id"] for item in open_requests(client, playbook)["interactions"]]
    assert newest_first == list(reversed(asked))
    first = open_requests(client, playbook, limit=2)
    assert first["has_more"] is True and len(first["interactions"]) == 2
    second = open_requests(client, playbook, limit=2, cursor=first["next_cursor"])
    assert [i["run_id"] for i in second["interactions"]] == [asked[0]] and second["has_more"] is False
    assert {i["run_id"] for i in open_requests(client, playbook, to="bo")["interactions"]} == set(asked[1:])
    assert [i["run_id"] for i in open_requests(client, playbook, function="other")["interactions"]] == [asked[1]]
    assert len(open_requests(client, playbook, type="interaction")["interactions"]) == 3
    assert open_requests(client, playbook, type="prediction")["interactions"] == []
    problem(client.get(f"{playbook}/interactions", params={"limit": 0}), 422, "invalid_input")


def test_past_the_bound_of_open_requests_a_request_is_refused_requests_full(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    defined(client, playbook, "deploy", QUESTION)
    for _ in range(OPEN_REQUESTS):
        assert ask(client, playbook, "deploy", LEAD).status_code == 200
    run_id = str(uuid.uuid4())
    full = ask(client, playbook, "deploy", LEAD, run_id)
    problem(full, 503, "unavailable", "requests_full")
    assert full.headers["retry-after"] == "5"
    oldest = open_requests(client, playbook)["interactions"][-1]["run_id"]
    assert answer(client, playbook, oldest, {"decision": "hold"}).status_code == 200
    ended(client, playbook, oldest)
    assert ask(client, playbook, "deploy", LEAD, run_id).json()["status"] == "started"


def test_a_request_the_function_cannot_render_is_unworkable(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    source = QUESTION.replace("to: '{{ input.lead }}'", "to: '{{ input.lead }}{{ input.lead }}'")
    defined(client, playbook, "deploy", source)
    long_party = {"lead": "x" * 200, "service": "billing"}
    body = problem(ask(client, playbook, "deploy", long_party), 409, "conflict", "unworkable")
    assert "256" in body["detail"]
    missing = problem(ask(client, playbook, "deploy", {"lead": "ana"}), 422, "invalid_input")
    assert pointers(missing) == ["/input"] or "/input/service" in pointers(missing)


def test_history_shows_the_request_without_its_message(client: httpx.Client) -> None:
    playbook = new_playbook(client)
    source = QUESTION.replace("to: '{{ input.lead }}'", "to: '{{ input.lead }}'\nfrom: 'boss'")
    defined(client, playbook, "deploy", source)
    run_id = str(uuid.uuid4())
    assert ask(client, playbook, "deploy", LEAD, run_id).status_code == 200
    events = client.get(f"{playbook}/runs/{run_id}/history").json()["events"]
    started, requested = events
    assert started["data"]["finishes_later"] is True
    assert requested["type"] == "interaction_requested"
    assert requested["summary"] == "The run of the interaction definition deploy asks ana@example.com."
    assert requested["data"] == {
        "delivery": None,
        "to": "ana@example.com",
        "message_bytes": len(b"May **billing** go out tonight? Reply go or hold.\n"),
        "takes_answer": True,
        "expires_at": requested["data"]["expires_at"],
        "answerer": "boss",
    }
    assert requested["metadata"]["causation_id"] == started["id"]
    kept = client.get(f"{playbook}/events/{requested['id']}").json()
    assert kept["data"]["message"] == "May **billing** go out tonight? Reply go or hold.\n"
    answered = answer(client, playbook, run_id, {"decision": "hold", "reason": "freeze"})
    assert answered.status_code == 200
    ending = ended(client, playbook, run_id)
    assert ending["output"] == {"decision": "hold", "reason": "freeze"}
    events = client.get(f"{playbook}/runs/{run_id}/history").json()["events"]
    assert events[2]["metadata"]["causation_id"] == requested["id"]
    assert events[3]["type"] == "run_succeeded"
