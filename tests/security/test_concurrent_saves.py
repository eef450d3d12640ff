"""Concurrent saves on one playbook: distinct names never conflict, one name is created once.

Fifty clients, each on a connection of its own, are released together by a barrier and save through the real
server. Saves of one playbook share a ledger stream per type (and playbook changes share the org's stream),
so before saves went one at a time inside the process, about one in five answered 409 "Another change was
made at the same moment".
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable

import httpx

from tests.client_tls import tls_context
from tests.conformance.helpers import new_playbook, problem
from tests.e2e.server_process import ServerProcess
from tests.security.liveness import PROBE_TIMEOUT_SECONDS

CLIENTS = 50
SOURCE = "---\nmodel: anthropic/claude-x\n---\nSay {n} to {{{{ input.who }}}}.\n"
"""A reasoning document: its save check runs on the server itself, not on the two save-time checkers a
computation's save waits for (README settled point 13), so fifty at once measure the saves alone."""


def _together(server: ServerProcess, request: Callable[[httpx.Client, int], httpx.Response]) -> list[httpx.Response]:
    """`request(client, i)` from `CLIENTS` threads at once, each with a client and connection of its own."""
    answers: list[httpx.Response | BaseException | None] = [None] * CLIENTS
    clients = [
        httpx.Client(base_url=server.base_url, timeout=PROBE_TIMEOUT_SECONDS, verify=tls_context())
        for _ in range(CLIENTS)
    ]
    for client in clients:
        assert client.get("/health").status_code == 200  # opens each client's connection before the barrier
    barrier = threading.Barrier(CLIENTS)

    def one(index: int) -> None:
        try:
            barrier.wait()
            answers[index] = request(clients[index], index)
        except BaseException as error:
            answers[index] = error

    threads = [threading.Thread(target=one, args=(i,)) for i in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for client in clients:
        client.close()
    failures = [answer for answer in answers if not isinstance(answer, httpx.Response)]
    assert not failures, failures
    return [answer for answer in answers if isinstance(answer, httpx.Response)]


def test_concurrent_definitions_with_distinct_names_are_all_created(
    server: ServerProcess, client: httpx.Client
) -> None:
    playbook = new_playbook(client)
    names = [f"def-{index:02d}" for index in range(CLIENTS)]

    def create(each: httpx.Client, index: int) -> httpx.Response:
        body = {"name": names[index], "source": SOURCE.format(n=index)}
        return each.post(f"{playbook}/definitions/reasoning", json=body)

    answers = _together(server, create)
    assert [answer.status_code for answer in answers] == [201] * CLIENTS, [a.text for a in answers]
    assert [answer.json()["name"] for answer in answers] == names
    assert all(answer.json()["version"] == 1 for answer in answers)
    listed = client.get(f"{playbook}/definitions/reasoning")
    assert listed.status_code == 200, listed.text
    assert sorted(d["name"] for d in listed.json()["definitions"]) == names


def test_concurrent_creations_of_one_name_create_it_once(server: ServerProcess, client: httpx.Client) -> None:
    playbook = new_playbook(client)

    def create(each: httpx.Client, index: int) -> httpx.Response:
        return each.post(f"{playbook}/definitions/reasoning", json={"name": "same", "source": SOURCE.format(n=index)})

    answers = _together(server, create)
    created = [answer for answer in answers if answer.status_code == 201]
    assert len(created) == 1, [a.text for a in answers if a.status_code != 409]
    for answer in answers:
        if answer.status_code != 201:
            body = problem(answer, 409, "conflict")
            assert body["detail"] == (
                "The playbook already has or had a reasoning definition same; a name is never reused."
            )
    got = client.get(f"{playbook}/definitions/reasoning/same")
    assert got.status_code == 200 and got.json()["version"] == 1
    assert got.json()["source"] == created[0].json()["source"]


def test_concurrent_updates_of_distinct_definitions_all_make_a_version(
    server: ServerProcess, client: httpx.Client
) -> None:
    playbook = new_playbook(client)
    names = [f"def-{index:02d}" for index in range(CLIENTS)]
    for index, name in enumerate(names):
        saved = client.post(f"{playbook}/definitions/reasoning", json={"name": name, "source": SOURCE.format(n=index)})
        assert saved.status_code == 201, saved.text

    def update(each: httpx.Client, index: int) -> httpx.Response:
        url = f"{playbook}/definitions/reasoning/{names[index]}"
        if index % 2:
            return each.post(f"{url}/retire")
        return each.put(url, json={"source": SOURCE.format(n=index + 1000)})

    answers = _together(server, update)
    assert [answer.status_code for answer in answers] == [200] * CLIENTS, [a.text for a in answers]
    listed = client.get(f"{playbook}/definitions/reasoning", params={"include_retired": "true"}).json()
    shown = {d["name"]: (d["status"], d["version"]) for d in listed["definitions"]}
    assert shown == {name: ("retired", 1) if index % 2 else ("active", 2) for index, name in enumerate(names)}


def test_concurrent_playbooks_of_one_org_are_all_created(server: ServerProcess, client: httpx.Client) -> None:
    org = f"org-{uuid.uuid4().hex[:8]}"
    ids = [f"pb-{index:02d}" for index in range(CLIENTS)]

    def create(each: httpx.Client, index: int) -> httpx.Response:
        return each.post(f"/v1/orgs/{org}/playbooks", json={"playbook": ids[index], "name": f"Playbook {index}"})

    answers = _together(server, create)
    assert [answer.status_code for answer in answers] == [201] * CLIENTS, [a.text for a in answers]
    listed = client.get(f"/v1/orgs/{org}/playbooks")
    assert listed.status_code == 200, listed.text
    assert sorted(p["id"] for p in listed.json()["playbooks"]) == ids
