"""Spec, recall-format.md: "When a view stalls" and "How a run answers": each stall kind the sandbox can be made
to show on any machine (time and crash need 20 tries of 10 seconds), the stalled run's detail in fixed words,
the other views going on, and a corrected version rebuilding."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.conformance.helpers import fresh_id, problem
from tests.conformance.recall.documents import (
    REBUILDS,
    caught_up,
    others_go_on_and_a_correction_rebuilds,
    output_of,
    publish,
    recall,
    run,
    saved,
    stall_with,
    stalled,
)


def test_a_raising_fold_stalls_its_view_until_a_correction(client: httpx.Client, playbook: str) -> None:
    name, standing, at = stall_with(client, playbook, "    raise ValueError('no ' + event['id'])\n")
    kind = standing["stalled"]["event"]["type"]
    assert standing["stalled"]["kind"] == "raised"
    assert standing["stalled"]["error"] == "ValueError: no boom"
    assert standing["stalled"]["line"] == 12
    refused = problem(run(client, playbook, name), 409, "conflict", "stalled")
    assert refused["detail"] == (
        f'The view of "{name}" is stalled at the {kind} event recorded at {at}: the fold raised an error, '
        f"line 12. {REBUILDS}"
    )
    run_id = str(uuid.uuid4())
    again = run(client, playbook, name, run_id=run_id)
    assert "retry-after" not in {key.lower() for key in again.headers}
    recorded = client.get(f"{playbook}/runs/{run_id}").json()
    assert recorded["status"] == "rejected"
    assert recorded["record"]["view"]["folded"] == 1
    assert recorded["record"]["view"]["last_event"]["id"] == "fine"
    others_go_on_and_a_correction_rebuilds(client, playbook, name, kind)


@pytest.mark.parametrize(
    ("body", "kind", "words", "error"),
    [
        ("    while True:\n        pass\n", "work", "a call used up its 250,000,000 units of work", None),
        ("    return {1: 2}\n", "unfit", "the fold returned a view that cannot be written as JSON", None),
        ("    return 'x' * 600000\n", "size", "the view grew past 524,288 bytes of JSON", None),
    ],
)
def test_each_bound_stalls_without_a_line(
    client: httpx.Client, playbook: str, body: str, kind: str, words: str, error: str | None
) -> None:
    name, standing, at = stall_with(client, playbook, body)
    assert standing["stalled"]["kind"] == kind
    assert standing["stalled"]["line"] is None
    event_type = standing["stalled"]["event"]["type"]
    refused = problem(run(client, playbook, name), 409, "conflict", "stalled")
    assert (
        refused["detail"]
        == f'The view of "{name}" is stalled at the {event_type} event recorded at {at}: {words}. {REBUILDS}'
    )


def test_a_view_schema_refusal_stalls_with_its_issue(client: httpx.Client, playbook: str) -> None:
    name, standing, at = stall_with(client, playbook, "    return {'no': 'list'}\n", "  schema: { type: array }\n")
    assert standing["stalled"]["kind"] == "schema"
    assert standing["stalled"]["line"] is None
    assert "expected a list" in standing["stalled"]["error"]
    event_type = standing["stalled"]["event"]["type"]
    refused = problem(run(client, playbook, name), 409, "conflict", "stalled")
    assert refused["detail"] == (
        f'The view of "{name}" is stalled at the {event_type} event recorded at {at}: '
        f"the view no longer matches view.schema. {REBUILDS}"
    )


def test_memory_error_raised_stalls_with_its_line(client: httpx.Client, playbook: str) -> None:
    _name, standing, _at = stall_with(client, playbook, "    raise MemoryError('full')\n")
    assert standing["stalled"]["kind"] == "memory"
    assert standing["stalled"]["line"] == 12


def test_a_fold_that_fills_a_sandbox_s_heap_goes_on_in_a_fresh_one(client: httpx.Client, playbook: str) -> None:
    """Each fold allocates 20 MiB and nothing is collected: twelve of them pass the 240 MiB heap, so the runtime
    starts a new sandbox when less than 64 MiB is free, and every fold succeeds, as the first fold of a page would.

    (What to verify 3 names 60 and 70 MiB; on the pinned artifact allocating 60 MiB costs about 298,000,000
    units, past a fold's 250,000,000, so those sizes stall with `work` before the allocation bound is reached.)"""
    kind = fresh_id("com.acme.twenty")
    name = fresh_id("twenty")
    module = (
        "def fold(view, event):\n"
        "    block = bytearray(20 * 1024 * 1024)\n"
        "    return view + len(block) // (1024 * 1024)\n"
    )
    saved(client, playbook, name, recall(f"source:\n  events:\n    - type: {kind}\nview:\n  initial: 0\n", module))
    for _ in range(12):
        publish(client, playbook, kind)
    caught_up(client, playbook, name, 12)
    assert output_of(run(client, playbook, name)) == 240


def test_a_module_that_does_not_load_stalls_its_view_as_refused(client: httpx.Client, playbook: str) -> None:
    """A module whose top level raises in the sandbox (a constant divided by zero passes every save-time rule)
    does not load: the view stalls at the first event it would fold (`refused`), with no line."""
    kind = fresh_id("com.acme.refused")
    name = fresh_id("refused")
    module = "RATE = 1 / 0\n\ndef fold(view, event):\n    return view\n"
    saved(client, playbook, name, recall(f"source:\n  events:\n    - type: {kind}\n", module))
    published = publish(client, playbook, kind, None)
    standing = stalled(client, playbook, name)
    assert standing["stalled"]["kind"] == "refused"
    assert standing["stalled"]["error"].startswith("ZeroDivisionError")
    assert standing["stalled"]["line"] is None
    assert standing["stalled"]["event"]["id"] == published["id"]
    body = problem(run(client, playbook, name), 409, "conflict", "stalled")
    assert body["detail"].endswith(
        ": the module does not load in this server's sandbox. Saving a corrected version rebuilds it from the start "
        "of the playbook's history"
    )
