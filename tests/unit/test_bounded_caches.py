"""The bounded caches on `cachetools.LRUCache`: each keeps its bound, least recently used going first.

`DefinitionDocuments` parses with the real reasoning type (a parse needs no model); `KnownRows` is plain.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auto_runtime.functions.reasoning.reasoning_type import ReasoningType
from auto_runtime.functions.registry import function_types
from auto_runtime.models import ModelDirectory
from auto_runtime.playbooks.definition_documents import DefinitionDocuments
from auto_runtime.playbooks.known_rows import KnownRows
from auto_runtime.settings import load_settings

SOURCE = "---\nmodel: fake/m\n---\nHello {{ input.name }}\n"
FIRST = ("acme", "first")
SECOND = ("acme", "second")


@pytest.fixture
def documents(tmp_path: Path) -> DefinitionDocuments:
    settings = load_settings({"HOST": "127.0.0.1"}, tmp_path, mode="image").settings
    types = function_types(ReasoningType(ModelDirectory.from_settings(settings), None, 2_000_000))
    return DefinitionDocuments(types, max_entries=2)


async def test_definition_documents_keep_their_bound_and_forget_the_least_recently_used(
    documents: DefinitionDocuments,
) -> None:
    await documents.parsed(FIRST, "reasoning", "a", 1, SOURCE)
    await documents.parsed(SECOND, "reasoning", "b", 1, SOURCE)
    await documents.parsed(FIRST, "reasoning", "a", 1, SOURCE)  # a hit: `a` is now the most recently used
    assert documents.parses == 2
    await documents.parsed(FIRST, "reasoning", "c", 1, SOURCE)
    assert len(documents) == 2
    assert documents.holds(SECOND) == 0, "the evicted document left its playbook's set too"
    assert documents.holds(FIRST) == 2
    await documents.parsed(FIRST, "reasoning", "a", 1, SOURCE)
    assert documents.parses == 3, "`a` was kept"
    await documents.parsed(SECOND, "reasoning", "b", 1, SOURCE)
    assert documents.parses == 4, "`b` was parsed again"


async def test_definition_documents_forget_a_playbook(documents: DefinitionDocuments) -> None:
    await documents.parsed(FIRST, "reasoning", "a", 1, SOURCE)
    await documents.parsed(SECOND, "reasoning", "b", 1, SOURCE)
    documents.forget(FIRST)
    assert len(documents) == 1 and documents.holds(FIRST) == 0 and documents.holds(SECOND) == 1


def test_known_rows_keep_their_capacity_least_recently_used_first() -> None:
    rows: KnownRows[str, int] = KnownRows(2)
    rows.changed("a", 1)
    rows.changed("b", 2)
    assert rows.get("a") == 1
    rows.changed("c", 3)
    assert len(rows) == 2
    assert rows.get("b") is None
    assert (rows.get("a"), rows.get("c")) == (1, 3)


def test_known_rows_refuse_a_fill_read_before_a_change() -> None:
    rows: KnownRows[str, int] = KnownRows(2)
    ticket = rows.ticket()
    rows.changed("a", 2)
    rows.fill("a", 1, ticket)
    assert rows.get("a") == 2
    rows.forget("a")
    rows.fill("a", 1, ticket)
    assert rows.get("a") is None
    rows.fill("a", 3, rows.ticket())
    assert rows.get("a") == 3
