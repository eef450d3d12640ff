"""Spec, recall-format.md, "What to verify" 2: the same history folds to the same view, with the same count, the
same last event and the same checkpoint, however it is cut into pages (here 7 records and 1,000), through
`fold_page` on the real sandbox; and a stall lands on the same event whatever the page size."""

from __future__ import annotations

from auto_runtime.functions.recall.document import RecallDocument, parse_document
from auto_runtime.functions.recall.fold_page import (
    EVENT_SECONDS,
    PageItem,
    PageResult,
    ViewState,
    fold_page,
    passed_over,
)
from auto_runtime.recall_host.page_items import program_of
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.interruption import RunControl
from tests.sandbox_engine import on_big_stack

MODULE = """---
language: python
source:
  events:
    - type: com.acme.thing
      where: even
view:
  initial: {count: 0, total: 0, seen: []}
---
import time

def even(data):
    return data["n"] % 2 == 0

def fold(view, event):
    if event["data"]["n"] == STOP:
        raise ValueError("stop")
    view["count"] += 1
    view["total"] += event["data"]["n"]
    view["seen"] = (view["seen"] + [[event["id"], time.time()]])[-5:]
    return view
"""


DOCUMENT = parse_document(MODULE.replace("STOP", "-1"))
assert isinstance(DOCUMENT, RecallDocument)


def items(count: int) -> list[PageItem]:
    found: list[PageItem] = []
    for index in range(count):
        event = {
            "specversion": "1.0",
            "id": f"e-{index}",
            "type": "com.acme.thing",
            "source": "/tests",
            "time": f"2026-10-02T07:30:{index % 60:02d}.{index % 1000:03d}Z",
            "data": {"n": index},
        }
        found.append(PageItem(f"1.{index}", f"at-{index}", event if index % 3 else None, (0,), False))
    return found


def folded_in_pages(engine: SandboxEngine, stop: int, page: int, count: int) -> PageResult:
    document = parse_document(
        MODULE.replace("STOP", str(stop)).replace("import time\n", f"import time\nSTOP = {stop}\n")
    )
    assert isinstance(document, RecallDocument), document
    program = program_of(document)
    history = items(count)

    def fold_all() -> PageResult:
        state = ViewState('{"count":0,"seen":[],"total":0}', None, None, None, 0, 0)
        at = 0
        while True:
            result = fold_page(engine, program, state, history[at : at + page], RunControl(10**9))
            state = result.state
            at += result.examined
            if result.stall is not None or at >= count:
                return result

    return on_big_stack(fold_all)


def test_the_same_history_folds_to_the_same_view_in_pages_of_7_and_1000(engine: SandboxEngine) -> None:
    small = folded_in_pages(engine, -1, 7, 60)
    large = folded_in_pages(engine, -1, 1000, 60)
    assert small.state == large.state
    assert small.state.folded == len([n for n in range(60) if n % 3 and n % 2 == 0])
    assert small.state.checkpoint == "1.59"


def test_a_stall_lands_on_the_same_event_in_any_page_size(engine: SandboxEngine) -> None:
    small = folded_in_pages(engine, 40, 7, 60)
    large = folded_in_pages(engine, 40, 1000, 60)
    assert small.stall is not None and large.stall is not None
    assert small.stall == large.stall
    assert small.stall.event["id"] == "e-40"
    assert small.state == large.state
    assert small.state.checkpoint == "1.39"


def test_a_page_no_filter_may_take_is_passed_over_without_a_sandbox_as_fold_page_passes_it(
    engine: SandboxEngine,
) -> None:
    state = ViewState('{"count":0,"seen":[],"total":0}', "0.9", "2026-10-02T07:29:59Z", None, 3, 2)
    none_taken = [item for item in items(12) if not item.candidate]
    passed = passed_over(state, none_taken)
    assert passed is not None
    assert passed == on_big_stack(lambda: fold_page(engine, program_of(DOCUMENT), state, none_taken, RunControl(10**9)))
    assert (passed.state.checkpoint, passed.state.tries, passed.examined) == (none_taken[-1].checkpoint, 0, 4)
    assert passed_over(state, items(12)) is None, "a page with an event a filter may take needs the sandbox"
    assert passed_over(state, []) == fold_page(engine, program_of(DOCUMENT), state, [], RunControl(10**9))


COUNTER = """---
language: python
source:
  events:
    - type: com.acme.thing
view:
  initial: 0
---
"""
"""The front matter of a view of `com.acme.thing` events starting at 0."""

SLOW = (
    COUNTER
    + """import time

def fold(view, event):
    now = time.time_ns
    while True:
"""
    + "        now()\n" * 40
)
"""A fold that spends its call's 250,000,000 units as slowly as we know (a call of the host's clock on every line:
about 0.2 s on the quiet 2-core machine, longer loaded), so an event's time of `SLOW_EVENT_SECONDS` ends it first
even when a loaded machine delays the deadline's ticker by a tenth of a second."""
SLOW_EVENT_SECONDS = 0.05


def page_after_tries(
    engine: SandboxEngine, source: str, tries: int, event_seconds: float = EVENT_SECONDS
) -> PageResult:
    """A page of the two events after the first, folded by `source` into a view that has had `tries` tries."""
    document = parse_document(source)
    assert isinstance(document, RecallDocument), document
    state = ViewState("0", "1.0", "at-0", None, 0, tries)
    history = [item for item in items(3) if item.event is not None]
    page = [PageItem(item.checkpoint, item.at, item.event, (), True) for item in history]
    return on_big_stack(lambda: fold_page(engine, program_of(document), state, page, RunControl(10**9), event_seconds))


def slow_page(engine: SandboxEngine, tries: int) -> PageResult:
    return page_after_tries(engine, SLOW, tries, SLOW_EVENT_SECONDS)


def test_a_fold_past_its_time_costs_a_try_and_the_twentieth_stalls(engine: SandboxEngine) -> None:
    """ "When a view stalls": a fold that runs past its time leaves the view as it was, counts a try, and ends the
    page; the 20th try stalls the view (`time`), with no line. (One event's time is 0.05 s here, not 10.)"""
    first = slow_page(engine, 0)
    assert first.stall is None
    assert first.examined == 0
    assert first.state.tries == 1
    assert first.state.checkpoint == "1.0"
    last = slow_page(engine, 19)
    assert last.stall is not None
    assert last.stall.kind == "time"
    assert last.stall.error == "the fold ran past its 10 seconds on 20 tries"
    assert last.stall.line is None
    assert last.stall.event["id"] == "e-1"


OVERFLOWING = (
    COUNTER
    + """def fold(view, event):
    a = []
    b = []
    for i in range(5000):
        a = [a]
        b = [b]
    return view + (a == b)
"""
)


def test_a_sandbox_that_traps_costs_a_try_and_the_twentieth_stalls(engine: SandboxEngine) -> None:
    """ "When a view stalls", `crash`: comparing lists nested 5,000 deep overflows the sandbox's stack in
    MicroPython's own comparison (a trap that is neither work nor time). It costs a try and leaves the view as it
    was; the 20th try stalls the view, with no line."""
    first = page_after_tries(engine, OVERFLOWING, 0)
    assert first.stall is None
    assert first.examined == 0
    assert first.state.tries == 1
    assert (first.state.view_json, first.state.checkpoint) == ("0", "1.0")
    last = page_after_tries(engine, OVERFLOWING, 19)
    assert last.stall is not None
    assert last.stall.kind == "crash"
    assert last.stall.error == "the sandbox failed on 20 tries"
    assert last.stall.line is None
    assert last.stall.event["id"] == "e-1"
