"""The server freezes what its start made, so the collector's full passes no longer walk it."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from auto_runtime.server import freeze_startup_heap


@pytest.fixture
def frozen() -> Iterator[None]:
    freeze_startup_heap()
    try:
        yield
    finally:
        gc.unfreeze()


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_the_objects_of_the_start_leave_the_collector_s_generations(frozen: None) -> None:
    frozen_count = gc.get_freeze_count()
    assert frozen_count > 100_000, "the imports of the server alone leave well over 100,000 objects"
    assert len(gc.get_objects()) < frozen_count // 100, "a full pass walks only what was made after the start"


def test_a_cycle_made_after_the_start_is_still_collected(frozen: None) -> None:
    first, second = _Node(), _Node()
    first.other, second.other = second, first
    ids = {id(first), id(second)}
    del first, second
    assert gc.collect() >= 2
    assert not ids & {id(found) for found in gc.get_objects() if isinstance(found, _Node)}
