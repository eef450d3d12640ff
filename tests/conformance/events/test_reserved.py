"""Seeds, "What the runtime keeps for itself": reserved types, sources and attributes, each at its pointer."""

from __future__ import annotations

import pytest

from tests.conformance.events.publishing import new_playbook, pointers_of, publish, published_events
from tests.e2e.server_process import ServerProcess

RESERVED_TYPES = [
    "run_started",
    "run_deferred",
    "run_succeeded",
    "run_rejected",
    "run_failed",
    "run_cancel_requested",
    "tool_call_started",
    "tool_call_answered",
    "tool_call_failed",
    "request_answered",
    "delivery_started",
    "delivery_succeeded",
    "delivery_failed",
    "delivery_refused",
    "reply_refused",
    "telling_started",
    "telling_succeeded",
    "telling_failed",
    "replies_read",
    "reading_failed",
    "interaction_requested",
    "dataset_assembled",
    "candidate_uploaded",
    "candidate_refused",
    "candidate_scored",
    "candidate_disqualified",
    "baseline_scored",
    "baseline_not_walked",
    "version_built",
    "shadow_predicted",
    "shadow_graded",
    "shadow_passed",
    "shadow_failed",
    "version_activated",
    "activation_refused",
    "build_asked",
    "build_ended",
    "definition_created",
    "definition_updated",
    "definition_retired",
    "event_published",
    "workflow_input_applied",
    "step_started",
    "step_waiting",
    "step_finished",
    "step_failed",
    "step_skipped",
    "reaction_refused",
]
RESERVED_ATTRIBUTES = [
    "causationid",
    "correlationid",
    "caller",
    "definitionversion",
    "depth",
    "calldepth",
    "calledby",
    "triggerkind",
    "triggerreference",
]
EVENT = {"source": "/ledger/eu", "type": "com.acme.ledger.month-closed", "id": "2026-09"}


def test_the_seeds_list_48_reserved_types() -> None:
    assert len(RESERVED_TYPES) == len(set(RESERVED_TYPES)) == 48


def test_every_reserved_type_is_refused_at_event_type(local_server: ServerProcess) -> None:
    playbook = new_playbook(local_server)
    for reserved in RESERVED_TYPES:
        response = publish(local_server, playbook, {**EVENT, "type": reserved})
        assert pointers_of(response) == ["/event/type"], reserved
        assert reserved in response.json()["detail"]
    assert published_events(local_server, playbook) == []


def test_types_that_only_look_like_reserved_ones_are_taken(local_server: ServerProcess) -> None:
    playbook = new_playbook(local_server)
    for number, kind in enumerate(("Run_Started", "run_started2", "com.acme.run_started", " run_started")):
        assert publish(local_server, playbook, {**EVENT, "id": str(number), "type": kind}).status_code == 200, kind


@pytest.mark.parametrize("source", ["/runs/0199a3c4", "/runs/", "/definitions/reasoning/triage", "/callers/local"])
def test_reserved_sources_are_refused_at_event_source(local_server: ServerProcess, source: str) -> None:
    """Sources "beginning `/runs/`, `/definitions/` or `/callers/`"."""
    playbook = new_playbook(local_server)
    response = publish(local_server, playbook, {**EVENT, "source": source})
    assert pointers_of(response) == ["/event/source"]


def test_sources_that_do_not_begin_so_are_taken(local_server: ServerProcess) -> None:
    playbook = new_playbook(local_server)
    for number, source in enumerate(("/runs", "/run/x", "runs/x", "/ledger/runs/x", "https://acme.example/runs/x")):
        assert publish(local_server, playbook, {**EVENT, "id": str(number), "source": source}).status_code == 200


@pytest.mark.parametrize("attribute", RESERVED_ATTRIBUTES)
def test_reserved_attributes_are_refused_at_their_name(local_server: ServerProcess, attribute: str) -> None:
    """ "So a published event cannot claim a cause, a caller or a depth it does not have"."""
    playbook = new_playbook(local_server)
    for value in ("x", 1, True):
        response = publish(local_server, playbook, {**EVENT, attribute: value})
        assert pointers_of(response) == [f"/event/{attribute}"]
