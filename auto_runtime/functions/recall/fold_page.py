"""Folding one page of a playbook's history into one view, in sandboxes on the calling (worker) thread.

`fold_page` walks the page's items in order. An item the view's filters cannot take (no filter's literal keys
hold, or no event at all) only moves the checkpoint; an item some filter may take is handed to the guest
(`fold_prelude`) through `FoldConversation`, which asks its `where` functions and folds it. After every fold the
host reads the view back, measures it and checks it against `view.schema`; the guest gets it again as JSON text
for the next fold, so every fold receives the view "as JSON gives it back".

Bounds, per the recall page: 250,000,000 units of work and 64 MiB of allocation for each `where` call and each
fold (the guest measures the allocation), 10 seconds for one event (its `where` calls and fold), and 2 seconds
of folding for the page, checked before each fold. A page ends early when its 2 seconds are spent, when the
view stalls, or when an event costs a try (time, or the sandbox failing); the checkpoint then names the last
record fully examined, so the next page starts at the first record not folded and no event is folded twice.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, ClassVar

from auto_runtime.json_pointers import pointer_of
from auto_runtime.problems import cut_text
from auto_runtime.sandbox.bridge import Bridge
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.fold_prelude import FOLD_ENTRY
from auto_runtime.sandbox.interruption import RunControl
from auto_runtime.sandbox.json_values import compact_json, utf8_size
from auto_runtime.sandbox.limits import PRELUDE_FUEL, WRITER_FUEL
from auto_runtime.sandbox.regex_frames import overflowed_in_regex
from auto_runtime.sandbox.store_run import StoreEnding, StoreSession, run_store
from auto_runtime.sandbox.unwritable import not_json_words, too_deep_words
from auto_runtime.sandbox.wire import WireError, read_wire
from auto_runtime.schema_issues import check_against_schema

CALL_FUEL = 250_000_000
READ_FUEL = 30_000_000_000
EVENT_SECONDS = 10.0
PAGE_SECONDS = 2.0
MAX_VIEW_BYTES = 524_288
MOST_TRIES = 20
_PROGRAM_FRAME = re.compile(r'File "program", line (\d+)')

WORDS = {
    "raised": "the fold raised an error",
    "work": "a call used up its 250,000,000 units of work",
    "memory": "a call allocated more than its 64 MiB",
    "unfit": "the fold returned a view that cannot be written as JSON",
    "size": "the view grew past 524,288 bytes of JSON",
    "schema": "the view no longer matches view.schema",
    "time": "the fold ran past its 10 seconds on 20 tries",
    "crash": "the sandbox failed on 20 tries",
    "refused": "the module does not load in this server's sandbox",
}
"""Each stall kind's `W`, the words of a stalled run's detail."""


@dataclass(frozen=True)
class FoldProgram:
    """What a view's sandbox loads: the module, its first line, its `where` functions by index, its schema."""

    module: str
    first_line: int
    wheres: tuple[str, ...]
    view_schema: Mapping[str, Any] | bool | None


@dataclass(frozen=True)
class PageItem:
    """One record of the page: its checkpoint and time, and, when a filter may take it, its event and how."""

    checkpoint: str
    at: str
    event: Mapping[str, Any] | None = None
    wheres: tuple[int, ...] = ()
    taken: bool = False
    """Taken without asking a `where` function (a filter without `where` holds, after the ones listed)."""

    @property
    def candidate(self) -> bool:
        return self.event is not None and (self.taken or bool(self.wheres))


@dataclass(frozen=True)
class Stall:
    """Where and why a view stopped: the event (`id`, `type`, `time`), the kind, the error, the line."""

    event: Mapping[str, Any]
    kind: str
    error: str
    line: int | None

    def as_json(self) -> dict[str, Any]:
        return {"event": dict(self.event), "kind": self.kind, "error": self.error, "line": self.line}


@dataclass(frozen=True)
class ViewState:
    """A view as it stands between folds."""

    view_json: str
    checkpoint: str | None
    checkpoint_at: str | None
    last_event: Mapping[str, Any] | None
    folded: int
    tries: int


@dataclass(frozen=True)
class PageResult:
    """The view after the page; `stall` when it stalled; `examined` how many items the checkpoint passed."""

    state: ViewState
    stall: Stall | None
    examined: int


def event_ns(event: Mapping[str, Any]) -> int:
    """The event's `time` in nanoseconds since 1970, what `time.time()` reads during its calls."""
    text = str(event.get("time", ""))
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return 0
    return int(moment.timestamp() * 1000) * 1_000_000


def _stall_event(event: Mapping[str, Any]) -> dict[str, Any]:
    return {key: event.get(key) for key in ("id", "type", "time")}


@dataclass
class _Walk:
    """The page's progress, shared by the sandboxes it takes: the next item, the view, the page's clock."""

    items: list[PageItem]
    state: ViewState
    index: int = 0
    first_fold: float | None = None
    stall: Stall | None = None
    examined: int = 0
    handed: int | None = None
    """The item handed to the guest and not yet settled (skipped or folded)."""
    over: bool = False

    def settle(self, index: int, **changes: Any) -> None:
        item = self.items[index]
        self.state = replace(self.state, checkpoint=item.checkpoint, checkpoint_at=item.at, tries=0, **changes)
        self.examined = index + 1
        self.index = index + 1
        self.handed = None

    def next_candidate(self) -> int | None:
        """Pass over the items no filter may take (moving the checkpoint); the next candidate's index."""
        while self.index < len(self.items) and not self.items[self.index].candidate:
            self.settle(self.index)
        return self.index if self.index < len(self.items) else None


class FoldConversation(Bridge):
    """The bridge of one folding sandbox: `program`, then `next` jobs, `start`/`end` around each call, `skip`
    or `view` for each job, and `result` once. A call out of this order marks the sandbox broken."""

    def __init__(
        self,
        program: FoldProgram,
        walk: _Walk,
        session: StoreSession,
        control: RunControl,
        schema: Any,
        event_seconds: float = EVENT_SECONDS,
    ) -> None:
        super().__init__((), {}, 0)
        self.event_seconds = event_seconds
        self.program = program
        self.walk = walk
        self.session = session
        self.control = control
        self.schema = schema
        self.loaded = False
        self.request = json.dumps(
            {"source": program.module, "first_line": program.first_line, "wheres": list(program.wheres)},
            ensure_ascii=False,
        ).encode()
        self._job: bytes | None = None
        self.in_call = False

    def _refuse(self, name: str) -> None:
        self.refused = self.refused or f"bridge call {name!r} is not part of folding"

    def _prepare_job(self) -> bytes:
        """The answer to the next `next`: the next candidate's job, or empty when the page is over."""
        if self._job is not None:
            return self._job
        walk = self.walk
        index = walk.next_candidate() if walk.stall is None and not walk.over else None
        if index is not None and walk.first_fold is not None and time.monotonic() - walk.first_fold >= PAGE_SECONDS:
            index = None
        if index is None:
            walk.over = True
            self._job = b""
            return self._job
        item = walk.items[index]
        assert item.event is not None
        view_bytes = len(walk.state.view_json.encode())
        head = json.dumps([list(item.wheres), item.taken, 3 * view_bytes + 4096])
        event_text = compact_json(dict(item.event))
        self._job = f"{head}\n{walk.state.view_json}\n{event_text}".encode()
        return self._job

    def call(self, name: str, payload: bytes) -> bytes | None:
        handler = self._handlers.get(name)
        if handler is None:
            self._refuse(name)
            return None
        answer = handler(self, payload)
        if answer is None:
            self._refuse(name)
        return answer

    def _on_program(self, _payload: bytes) -> bytes | None:
        if self.loaded:
            return None
        self.loaded = True
        return self.request

    def _on_next(self, _payload: bytes) -> bytes | None:
        if not self.loaded or self.walk.handed is not None or self.in_call:
            return None
        job = self._prepare_job()
        self._job = None
        if job:
            walk = self.walk
            walk.handed = walk.index
            event = walk.items[walk.index].event
            assert event is not None
            self.clock_ns = event_ns(event)
            self.control.deadline = time.monotonic() + self.event_seconds
            if walk.first_fold is None:
                walk.first_fold = time.monotonic()
        self.session.set_fuel(READ_FUEL)
        return job

    def _on_start(self, _payload: bytes) -> bytes | None:
        if self.walk.handed is None or self.in_call:
            return None
        self.in_call = True
        self.session.set_fuel(CALL_FUEL)
        return b""

    def _on_end(self, _payload: bytes) -> bytes | None:
        if not self.in_call:
            return None
        self.in_call = False
        self.session.set_fuel(WRITER_FUEL)
        return b""

    def _on_skip(self, _payload: bytes) -> bytes | None:
        walk = self.walk
        if walk.handed is None or self.in_call:
            return None
        walk.settle(walk.handed)
        return b""

    def _on_view(self, payload: bytes) -> bytes | None:
        walk = self.walk
        if walk.handed is None or self.in_call or payload[:1] != b"O":
            return None
        index = walk.handed
        event = walk.items[index].event
        assert event is not None
        try:
            value = read_wire(payload[1:])
        except (WireError, UnicodeDecodeError):
            return None
        text = compact_json(value)
        if utf8_size(text) > MAX_VIEW_BYTES:
            walk.stall = Stall(_stall_event(event), "size", WORDS["size"], None)
        elif self.schema is not None:
            issues = check_against_schema(self.schema, value, "", "The view")
            if issues:
                walk.stall = Stall(_stall_event(event), "schema", cut_text(issues[0].detail), None)
        if walk.stall is not None:
            walk.handed = None
            return b""
        walk.settle(
            index,
            view_json=text,
            last_event={"id": event.get("id"), "time": event.get("time")},
            folded=walk.state.folded + 1,
        )
        return b""

    def _on_result(self, payload: bytes) -> bytes | None:
        if self.result is not None:
            return None
        self.result = payload
        return b""

    _handlers: ClassVar[dict[str, Callable[[FoldConversation, bytes], bytes | None]]] = {
        "program": _on_program,
        "next": _on_next,
        "start": _on_start,
        "end": _on_end,
        "skip": _on_skip,
        "view": _on_view,
        "result": _on_result,
    }


def _line(trace: str) -> int | None:
    lines = _PROGRAM_FRAME.findall(trace)
    return int(lines[-1]) if lines else None


def _raised(body: bytes, event: Mapping[str, Any]) -> Stall:
    type_name, trace, text = json.loads(body.decode("utf-8", "replace"))
    error = cut_text(f"{type_name}: {text}" if text else str(type_name))
    return Stall(_stall_event(event), "raised", error, _line(str(trace)))


def _memory(body: bytes, event: Mapping[str, Any]) -> Stall:
    (trace,) = json.loads(body.decode("utf-8", "replace"))
    return Stall(_stall_event(event), "memory", "MemoryError", _line(str(trace)))


def _from_result(result: bytes, event: Mapping[str, Any]) -> Stall | None:
    """The stall a result other than `S` and `F` says, or None for one the host cannot read (a crash)."""
    tag, body = result[:1], result[1:]
    try:
        if tag == b"E":
            loaded = _from_result(body, event)
            error = loaded.error if loaded is not None and loaded.kind == "raised" else WORDS["refused"]
            return Stall(_stall_event(event), "refused", error, None)
        if tag == b"R":
            return _raised(body, event)
        if tag == b"M":
            return _memory(body, event)
        if tag in (b"A", b"H"):
            return Stall(_stall_event(event), "memory", WORDS["memory"], None)
        if tag == b"L":
            return Stall(_stall_event(event), "size", WORDS["size"], None)
        if tag in (b"W", b"D"):
            header = body.partition(b"\n")[0]
            if tag == b"D":
                words = too_deep_words(pointer_of(json.loads(header)))
            else:
                what, tokens = json.loads(header)
                words = not_json_words(str(what), pointer_of(tokens))
            return Stall(_stall_event(event), "unfit", cut_text(words), None)
    except (ValueError, TypeError):
        return None
    return None


def _tried(walk: _Walk, index: int, kind: str) -> None:
    """An event cost the view a try (time, or the sandbox failing): the 20th stalls it; the page ends."""
    tries = walk.state.tries + 1
    walk.state = replace(walk.state, tries=tries)
    event = walk.items[index].event
    assert event is not None
    if tries >= MOST_TRIES:
        walk.stall = Stall(_stall_event(event), kind, WORDS[kind], None)
    walk.over = True


def _schema(schema: Mapping[str, Any] | bool | None) -> Any:
    if schema is None or schema is True:
        return None
    if schema is False:
        return {"not": {}}
    return schema


def passed_over(state: ViewState, items: list[PageItem]) -> PageResult | None:
    """The page's result when no item is a candidate (no filter may take any of its events): each item passed
    over, the checkpoint at the last (an empty page leaves the view as it was), as `fold_page` would leave it, with
    no sandbox and no worker; None when an item is a candidate. One pass over the items, cheap enough for any
    thread."""
    if any(item.candidate for item in items):
        return None
    if not items:
        return PageResult(state, None, 0)
    last = items[-1]
    return PageResult(replace(state, checkpoint=last.checkpoint, checkpoint_at=last.at, tries=0), None, len(items))


def fold_page(
    engine: SandboxEngine,
    program: FoldProgram,
    state: ViewState,
    items: list[PageItem],
    control: RunControl,
    event_seconds: float = EVENT_SECONDS,
) -> PageResult:
    """Fold the page into the view on this thread; see the module's rules. `control` stops it when cancelled;
    `event_seconds` is one event's time (the spec's 10 seconds)."""
    walk = _Walk(items, state)
    schema = _schema(program.view_schema)
    fresh_without_progress = 0
    while walk.next_candidate() is not None and walk.stall is None and not walk.over:
        if control.cancelled:
            break
        session = StoreSession(engine, PRELUDE_FUEL)
        store_control = RunControl(time.monotonic() + event_seconds)
        bridge = FoldConversation(program, walk, session, store_control, schema, event_seconds)
        before = walk.index
        try:
            ending = run_store(engine, session, FOLD_ENTRY, bridge, store_control)
        finally:
            del session
        current = walk.handed if walk.handed is not None else walk.index
        _ending(walk, bridge, ending, store_control, engine, current)
        if bridge.result == b"F":
            fresh_without_progress = fresh_without_progress + 1 if walk.index == before else 0
            if fresh_without_progress > 1:
                event = walk.items[current].event
                assert event is not None
                walk.stall = Stall(_stall_event(event), "memory", WORDS["memory"], None)
            walk.handed = None
            continue
        break
    return PageResult(walk.state, walk.stall, walk.examined)


def _ending(
    walk: _Walk, bridge: FoldConversation, ending: StoreEnding, control: RunControl, engine: SandboxEngine, at: int
) -> None:
    """Settle how one sandbox ended: the page went on to its end, stalled, or cost a try."""
    if at >= len(walk.items) or walk.stall is not None:
        return
    event = walk.items[at].event
    if event is None:
        return
    if control.stopped == "deadline":
        _tried(walk, at, "time")
        return
    if control.stopped == "cancelled":
        walk.over = True
        return
    if bridge.in_call and (
        ending.trap == "OUT_OF_FUEL"
        or (ending.trap == "STACK_OVERFLOW" and overflowed_in_regex(engine, ending.trap_functions))
    ):
        walk.stall = Stall(_stall_event(event), "work", WORDS["work"], None)
        return
    result = bridge.result
    if bridge.refused is not None or not ending.clean or result is None:
        _tried(walk, at, "crash")
        return
    if result in (b"S", b"F"):
        return
    stall = _from_result(result, event)
    if stall is None:
        _tried(walk, at, "crash")
        return
    walk.stall = stall
