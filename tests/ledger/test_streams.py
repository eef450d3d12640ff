"""Stream names come only from scopes, and no segment can reach another tenant (no store needed)."""

from __future__ import annotations

import pytest

from auto_runtime.ledger import OrgScope, PlaybookScope
from auto_runtime.ledger.streams import scope_key_of


def test_scopes_build_the_stream_names_the_runtime_uses() -> None:
    playbook = PlaybookScope("acme", "finance")
    assert OrgScope("acme").stream("playbooks") == "org/acme/playbooks"
    assert playbook.stream("definitions", "workflow") == "playbook/acme/finance/definitions/workflow"
    assert playbook.stream("runs", "0199a3c4-7d2e") == "playbook/acme/finance/runs/0199a3c4-7d2e"
    assert playbook.stream("events", "order.paid:v1") == "playbook/acme/finance/events/order.paid:v1"
    assert playbook.key == "playbook/acme/finance"
    assert OrgScope("acme").key == "org/acme"


@pytest.mark.parametrize(
    "segment", ["", "a/b", "..", ".", "../other", "a b", "é", "a\x00", "x" * 65, "a%2Fb", "*", "a\\b"]
)
def test_a_segment_that_could_escape_or_confuse_is_refused(segment: str) -> None:
    with pytest.raises(ValueError):
        PlaybookScope("acme", "finance").stream("runs", segment)
    with pytest.raises(ValueError):
        PlaybookScope("acme", segment)
    with pytest.raises(ValueError):
        OrgScope(segment)


def test_a_stream_needs_a_segment_and_a_bounded_length() -> None:
    with pytest.raises(ValueError):
        OrgScope("acme").stream()
    with pytest.raises(ValueError):
        PlaybookScope("acme", "finance").stream(*["x" * 64] * 4)
    PlaybookScope("acme", "finance").stream(*["x" * 64] * 3)


def test_a_stream_names_its_scope() -> None:
    assert scope_key_of("playbook/acme/finance/runs/r1") == "playbook/acme/finance"
    assert scope_key_of("org/acme/playbooks") == "org/acme"
    for bad in ["org/acme", "playbook/acme/finance", "tenant/a/b", "org/a/../b", "playbook/a//b/c"]:
        with pytest.raises(ValueError):
            scope_key_of(bad)
