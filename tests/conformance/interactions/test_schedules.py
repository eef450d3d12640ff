"""interaction-format §4.1 and §5.1 end to end: a delivery's attempts at once, then 1, 2, 4 and 8 minutes after the
previous one ended (a longer `Retry-After` instead), and a conversation's reads 5 s after its last activity, then
10, 20, 40 s and 60 s; through the real server on each ledger, the fake MCP tool server a real process, and the
server's clock a test's (`tests/e2e/moved_clock.py`), moved to each due time instead of waited for.

Each move goes to the latest time the schedule allows (the previous attempt's recorded end plus its wait; for a
read, a moment read from the server after the previous read plus the cadence's wait). The clock runs on between
moves, so an attempt or read armed later than the schedule says by more than the poll's bound never comes in
time and the test fails; one armed sooner shows in the recorded times (an attempt's start is never before the
previous end plus the wait) or as a call the fake took before the move. The in-process tests
(`tests/interaction_host/test_*_on_a_clock.py`) check the moment just short of each due time exactly."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from auto_runtime.functions.interaction.conversations import cadence
from auto_runtime.functions.interaction.delivery_decisions import next_attempt_wait
from tests.conformance.helpers import new_playbook
from tests.conformance.interactions.conftest import ledger_settings
from tests.conformance.interactions.documents import defined, ended, open_requests
from tests.conformance.interactions.schedules import (
    attempts_on_schedule,
    history,
    moment_of,
    of_type,
    until,
)
from tests.e2e.moved_clock import now, set_to
from tests.e2e.server_process import ServerProcess, start_server
from tests.fakes.gateway_process import McpToolServerProcess, start_mcp_tool_server

NOTIFICATION = """---
to: ana
expires: P1D
deliver:
  server: desk
  tool: TOOL
  with: { text: '{{ message }}', to: '{{ to }}', retry_after: 150 }
---
Shipped.
"""
QUESTION = """---
to: ana
expires: P1D
deliver:
  server: desk
  tool: say
  with: { text: '{"message": {"room": "ROOM", "key": "KEY"}}' }
  sent: { conversation: /message/room, id: /message/key }
replies:
  tool: replies
  with: { who: zed, parent: '{{ sent.id }}', words: ship, since: '{{ since }}', count: 1 }
  read: { list: /items, order: oldest_first, each: { id: /key, sender: /author, text: /body, to: /parent } }
reply:
  decision: { from: word, words: { go: [ship] } }
output:
  schema:
    type: object
    required: [decision]
    properties: { decision: { type: string, enum: [go, hold] } }
---
May it go out?
"""


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpToolServerProcess]:
    process = start_mcp_tool_server(Path(tmp_path_factory.mktemp("desk")), "--interaction-tools")
    yield process
    process.stop()


@pytest.fixture(scope="module")
def server(
    ledger_kind: str, tmp_path_factory: pytest.TempPathFactory, desk: McpToolServerProcess
) -> Iterator[ServerProcess]:
    with ExitStack() as stack:
        settings = ledger_settings(stack, ledger_kind)
        settings["TOOL_SERVERS"] = json.dumps({"desk": {"url": desk.url, "org": "acme"}})
        process = start_server(Path(tmp_path_factory.mktemp(f"schedules-{ledger_kind}")), settings)
        yield process
        assert process.stop() == 0, process.log()


def notified(client: httpx.Client, tool: str) -> tuple[str, str]:
    playbook = new_playbook(client, "acme")
    defined(client, playbook, "shipped", NOTIFICATION.replace("TOOL", tool))
    run_id = str(uuid.uuid4())
    response = client.post(f"{playbook}/definitions/interaction/shipped/run", json={"input": {}, "run_id": run_id})
    assert response.status_code == 200, response.text
    return playbook, run_id


def test_a_failing_delivery_is_attempted_five_times_at_1_2_4_and_8_minutes_then_spent(
    client: httpx.Client, desk: McpToolServerProcess
) -> None:
    playbook, run_id = notified(client, "crash")
    attempts_on_schedule(client, playbook, run_id, None)
    run = ended(client, playbook, run_id)
    assert (run["status"], run["rejection"]["reason"], run["rejection"]["kind"]) == (
        "rejected",
        "unanswered",
        "undelivered",
    )
    events = history(client, playbook, run_id)
    assert [event["data"]["number"] for event in of_type(events, "delivery_started")] == [1, 2, 3, 4, 5]
    assert {event["data"]["because"] for event in of_type(events, "delivery_failed")} == {"server_failure"}
    set_to(client, now(client) + timedelta(days=1))
    calls = [call for call in desk.calls() if call["meta"].get("auto.on/run_id") == run_id]
    assert [call["meta"]["auto.on/delivery_id"] for call in calls] == [f"{run_id}:{n}" for n in range(1, 6)]


def test_a_retry_after_longer_than_the_schedule_sets_each_next_attempt(client: httpx.Client) -> None:
    """The fake's `swamped` answers 429 with the `retry_after` it is given: 150 s, past the 1st and 2nd waits of
    the schedule and short of the 3rd and 4th, which it does not shorten."""
    assert next_attempt_wait(1, 150_000) == timedelta(seconds=150) > next_attempt_wait(1, None)
    assert next_attempt_wait(3, 150_000) == next_attempt_wait(3, None) == timedelta(minutes=4)
    playbook, run_id = notified(client, "swamped")
    attempts_on_schedule(client, playbook, run_id, 150_000)
    run = ended(client, playbook, run_id)
    assert (run["rejection"]["reason"], run["rejection"]["kind"]) == ("unanswered", "undelivered")
    assert open_requests(client, playbook)["interactions"] == []


def test_a_conversation_is_read_5_s_after_the_delivery_then_at_10_20_40_and_60_s(
    client: httpx.Client, desk: McpToolServerProcess
) -> None:
    """The reply comes from `zed`, who is not asked: the first read records it, taken by nobody, and the later
    reads find nothing new (the fake answers nothing past the cursor), so the question stays open."""
    playbook = new_playbook(client, "acme")
    key = f"m-{uuid.uuid4()}"
    defined(client, playbook, "deploy", QUESTION.replace("ROOM", f"r-{key}").replace("KEY", key))
    run_id = str(uuid.uuid4())
    response = client.post(f"{playbook}/definitions/interaction/deploy/run", json={"input": {}, "run_id": run_id})
    assert response.status_code == 200, response.text

    def reads() -> int:
        return len([c for c in desk.calls() if c["name"] == "replies" and c["arguments"].get("parent") == key])

    until(lambda: bool(of_type(history(client, playbook, run_id), "delivery_succeeded")), "not delivered")
    moment = moment_of(of_type(history(client, playbook, run_id), "delivery_succeeded")[0])
    for count in range(5):
        assert reads() == count  # nothing before its time
        set_to(client, max(moment + cadence(count), now(client)))
        until(lambda: reads() > count, f"read {count + 1} of the conversation {key} was not made")  # noqa: B023
        assert reads() == count + 1
        moment = now(client)  # the read was made before this moment: the next is due a cadence after it
    assert of_type(history(client, playbook, run_id), "request_answered") == []
