"""Record encoding, JSON text and `?` placeholders, shared by both stores (no store needed)."""

from __future__ import annotations

import uuid

import pytest

from auto_runtime.ledger import json_text, uuid7
from auto_runtime.ledger.placeholders import to_numbered


@pytest.mark.parametrize(
    "value",
    ["a\x00b", "\ud800", "\udfff\ud800", "é€😀", {"k\x00": ["\ud83d"]}, [1.5, -0, 2**63, None, True]],
)
def test_json_text_round_trips_and_is_valid_utf8_without_nul(value: object) -> None:
    text = json_text.dumps(value)
    text.encode("utf-8")
    assert "\x00" not in text
    assert json_text.loads(text) == value


def test_json_text_refuses_what_json_cannot_say() -> None:
    with pytest.raises(ValueError):
        json_text.dumps(float("nan"))
    with pytest.raises(TypeError):
        json_text.dumps({1, 2})


def test_uuid7_ids_are_version_7_and_sort_by_time() -> None:
    ids = [uuid7() for _ in range(50)]
    assert all(uuid.UUID(i).version == 7 for i in ids)
    assert len(set(ids)) == 50
    assert [i[:13] for i in ids] == sorted(i[:13] for i in ids)


def test_placeholders_are_numbered_outside_quoted_text() -> None:
    assert to_numbered("SELECT ? , ?") == "SELECT $1 , $2"
    assert to_numbered("SELECT '?', \"a?\" FROM t WHERE a = ? AND b = 'it''s ?'") == (
        "SELECT '?', \"a?\" FROM t WHERE a = $1 AND b = 'it''s ?'"
    )
