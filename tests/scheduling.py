"""The order in which `make pytest`'s workers are handed the test modules: the heaviest first.

`pytest-xdist` with `--dist loadfile` hands each idle worker the next whole module of its queue, in the order the
workers collected them (with `--no-loadscope-reorder`; by default it orders them by their count of tests, which
put the modules of one long test, such as schemathesis's run, last, where each alone was the run's tail). A module
handed out last that takes a minute keeps one worker busy for that minute while the others have nothing left:
handing the longest first (the longest-processing-time rule) leaves the short ones to fill in at the end.

A module's weight is the sum of its tests' estimates: the `seconds` a test's `slow` mark gives (about what it
takes alone on a quiet machine, `@pytest.mark.slow(seconds=40)`), `SLOW_SECONDS` for a `slow` mark without
them, `TEST_SECONDS` for any other test. The estimates only order the queue: a wrong one costs time, never a
result.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

SLOW_SECONDS = 5.0
"""The estimate of a test marked `slow` without `seconds`."""
TEST_SECONDS = 0.2
"""The estimate of a test not marked `slow`: about the median test's time in a whole run."""


def estimate(item: pytest.Item) -> float:
    """About how many seconds `item` takes (see the module)."""
    slow = item.get_closest_marker("slow")
    if slow is None:
        return TEST_SECONDS
    return float(slow.kwargs.get("seconds", SLOW_SECONDS))


def heaviest_modules_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """`items` with whole modules in the order of their weights, heaviest first; the tests of a module keep
    their order, and modules of equal weight keep theirs."""
    weights: dict[str, float] = defaultdict(float)
    for item in items:
        weights[item.nodeid.split("::", 1)[0]] += estimate(item)
    return sorted(items, key=lambda item: -weights[item.nodeid.split("::", 1)[0]])
