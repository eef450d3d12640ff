"""Expressions on the sandbox: one MicroPython instance serves every expression of one input (spec 4.5).

The instance is a fresh one of the sandbox's 64 MiB snapshot, where the expression prelude
(`sandbox/expression_prelude.py`: the computation prelude's guards and writer) is already set up; it runs the
prelude's loop, which asks the host for the next request through the bridge (`request`), evaluates each
expression of it in its own namespace, and sends one `answer` per expression (the writer's wire form, a truth value,
or the exception), stopping at the first
that raises. The host side is a conversation between two threads: the thread that applies the input calls
`evaluate`, which hands the request to the instance's thread and waits for its answers. A value is sent
once per instance (by the digest of its JSON) and shared, since no expression changes what it reads.

An instance that passed a bound (work, memory, time) is over; the next place starts a fresh one. Call
`close()` when the input is applied, so the instance ends.

Where the instance's thread comes from: on a worker of the sandbox pool, the worker's companion
(`sandbox/companion.py`), one long-lived thread per worker, so applying an input starts no thread; outside a
pool (tests, `trio.to_thread`), a daemon thread of its own (`launch_on_a_thread`). The host waits for the
instance at most until the input's deadline and `END_GRACE_SECONDS` more (the epoch deadline interrupts the
guest at the deadline, so a live instance has answered or ended by then): one that has not is hung, the
place ends with the time bound, and a companion that ran it is abandoned, so its worker retires.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import json
import queue
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from auto_runtime.actors import STACK_SIZE_LOCK
from auto_runtime.functions.workflow.engine.evaluation import EXPRESSION_FAILED, PASSED_A_BOUND, Failed, Place
from auto_runtime.json_pointers import pointer_of
from auto_runtime.problems import cut_text
from auto_runtime.sandbox.bridge import Bridge
from auto_runtime.sandbox.companion import Companion, CompanionBroken, current_companion
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.expression_prelude import EXPRESSION_ENTRY
from auto_runtime.sandbox.interruption import RunControl
from auto_runtime.sandbox.json_values import compact_json
from auto_runtime.sandbox.limits import PRELUDE_FUEL, WRITER_FUEL
from auto_runtime.sandbox.store_run import StoreSession, run_store
from auto_runtime.sandbox.unwritable import not_json_words, too_deep_words
from auto_runtime.sandbox.wire import read_wire
from auto_runtime.sandbox.workers import WORKER_STACK_BYTES

EXPRESSION_FUEL = 250_000_000
READ_FUEL = 30_000_000_000
"""Reading a request's values has an allowance of its own that no value within the run's bounds reaches."""
INPUT_FUEL = 1_000_000_000
INPUT_SECONDS = 5.0
END_GRACE_SECONDS = 1.0
"""How long past the input's deadline the host still waits for its instance to answer or end."""
EXPRESSION_MEMORY = 80 * 1024 * 1024
EXPRESSION_HEAP = "64M"
VALUE_LIMIT = 4 * 1024 * 1024
YIELD_FUEL = 500_000_000
YIELD_BYTES = 4 * 1024 * 1024
DETAIL_CHARACTERS = 1000
LONG_STRING = 1024
"""Strings longer than this are sent to the instance on their own, as text, not inside the value's JSON: the
sandbox's JSON reader grows a string it reads a few bytes at a time, so its work grows with the square of the
string's length (a 1 MB string would pass the reading allowance), while text the bridge hands over costs
work in proportion to its length."""

NOT_JSON = "The value cannot be written as JSON: "
MORE_WORK = "it used more than its 250,000,000 units of work"
MORE_INPUT_WORK = "the input used more than its 1,000,000,000 units of work"
MORE_MEMORY = "it used more than the input's 64 MiB of memory"
MORE_TIME = "the input ran more than its 5 seconds in the sandbox"
MORE_READING = "reading its values and writing its results used more than their own allowance of work"


class _Conversation(Bridge):
    """A bridge whose answers come, one request at a time, from the thread applying the input."""

    def __init__(self, clock_ns: int) -> None:
        super().__init__((), {}, clock_ns)
        self.session: StoreSession | None = None
        self.input_left = 0
        """Fuel the input has left for its expressions; each expression may spend its bound of it."""
        self.allowance = 0
        self.in_expression = False
        self.requests: queue.SimpleQueue[tuple[bytes, list[bytes], int, int]] = queue.SimpleQueue()
        self.replies: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        """Unbounded, as before; `SimpleQueue` hands an item over without `queue.Queue`'s condition variables,
        which cost more than the expression's own work on the workflow path (profiled)."""
        self._next: tuple[bytes, list[bytes], int, int] | None = None
        self.values: list[bytes] = []
        """The JSON of the values the request the guest took sends, one `value` call each."""
        self.expected = 0
        """Answers the guest still owes for the request it took: its next calls are `answer` until then."""

    def _fuel(self, fuel: int) -> None:
        if self.session is not None:
            self.session.set_fuel(fuel)

    def _take(self) -> tuple[bytes, list[bytes], int, int]:
        if self._next is None:
            self._next = self.requests.get()
        return self._next

    def call(self, name: str, payload: bytes) -> bytes | None:
        if name == "request" and self.expected == 0:
            request, values, expected, input_left = self._take()
            self._next = None
            self.values = list(values)
            self.expected = expected
            self.input_left = input_left
            self._fuel(READ_FUEL)
            return request
        if name == "value" and self.values:
            return self.values.pop(0)
        if name == "start" and self.expected > 0 and not self.in_expression and not self.values:
            self.in_expression = True
            self.allowance = min(EXPRESSION_FUEL, self.input_left)
            self._fuel(self.allowance)
            return b""
        if name == "end" and self.in_expression:
            self.in_expression = False
            if self.session is not None:
                self.input_left -= self.allowance - self.session.fuel_left()
            self._fuel(WRITER_FUEL)
            return b""
        if name == "answer" and self.expected > 0:
            self.expected = 0 if payload[:1] not in (b"O", b"T", b"F") else self.expected - 1
            self.replies.put(payload)
            return b""
        self.refused = self.refused or f"bridge call {name!r} is not part of the conversation"
        return None


Launch = Callable[[Callable[[], None]], None]
"""Runs a blocking callable to its end somewhere else: on a thread of its own, or on a worker of the pool."""


def launch_on_a_thread(run: Callable[[], None]) -> None:
    """The default launch: a daemon thread with the sandbox workers' stack size."""
    with STACK_SIZE_LOCK:
        previous = threading.stack_size(WORKER_STACK_BYTES)
        try:
            threading.Thread(target=run, name="workflow-expressions", daemon=True).start()
        finally:
            threading.stack_size(previous)


class _Instance:
    """One live instance, run to its end by `launch` while the input is applied."""

    def __init__(self, engine: SandboxEngine, clock_ms: int, deadline: float, launch: Launch) -> None:
        self.deadline = deadline
        self.bridge = _Conversation(clock_ms * 1_000_000)
        self.control = RunControl(deadline)
        self.sent: set[str] = set()
        self.trap: str | None = None
        self.stderr = ""
        self.alive = True
        self.ended = threading.Event()
        launch(lambda: self._run(engine))

    def _run(self, engine: SandboxEngine) -> None:
        """Run the instance on this thread; its store is made and dropped here, never on another thread."""
        session = StoreSession(engine, PRELUDE_FUEL, EXPRESSION_MEMORY)
        self.bridge.session = session
        try:
            ending = run_store(engine, session, EXPRESSION_ENTRY, self.bridge, self.control, EXPRESSION_HEAP)
            self.trap = ending.trap or ending.error or (None if ending.clean else f"exit {ending.exit_code}")
            self.stderr = ending.stderr[-2000:]
        finally:
            self.bridge.session = None
            del session
            self.alive = False
            self.bridge.replies.put(None)
            self.ended.set()

    def stop(self) -> bool:
        """Ask the instance to end and wait for it within its bound: False when it did not end (hung)."""
        if self.alive:
            self.bridge.requests.put((b"null", [], 0, 0))
        return self.wait_ended()

    def wait_ended(self) -> bool:
        return self.ended.wait(timeout=max(0.0, self.deadline + END_GRACE_SECONDS - time.monotonic()))

    def next_reply(self) -> bytes | None:
        """The instance's next answer; None once it ended, or when it gave none within its bound."""
        try:
            return self.bridge.replies.get(timeout=max(0.0, self.deadline + END_GRACE_SECONDS - time.monotonic()))
        except queue.Empty:
            return None


class SandboxEvaluator:
    """An `Evaluator` for one input. No instance starts until the first place is evaluated.

    Without `launch`, instances run on the companion of the worker this is made on, or on a thread of their
    own outside a pool (see the module's docstring). `seconds` is the input's time in the sandbox."""

    def __init__(
        self,
        engine: SandboxEngine,
        clock_ms: int,
        launch: Launch | None = None,
        *,
        seconds: float = INPUT_SECONDS,
    ) -> None:
        self.engine = engine
        self.clock_ms = clock_ms
        self.companion: Companion | None = current_companion() if launch is None else None
        self.launch: Launch = launch if launch is not None else self._on_companion
        self.deadline = time.monotonic() + seconds
        self.fuel_left = INPUT_FUEL
        self.bytes_read = 0
        self.instance: _Instance | None = None

    def wants_yield(self) -> bool:
        return INPUT_FUEL - self.fuel_left > YIELD_FUEL or self.bytes_read > YIELD_BYTES

    def close(self) -> None:
        if self.instance is not None:
            if not self.instance.stop():
                self._hung()
            self.instance = None

    def _on_companion(self, run: Callable[[], None]) -> None:
        """Run an instance on this worker's companion; on a thread of its own without one, or when it broke
        during this input."""
        if self.companion is not None:
            try:
                self.companion.launch(run)
                return
            except CompanionBroken:
                self.companion = None
        launch_on_a_thread(run)

    def _hung(self) -> None:
        """The instance outlived its bound: the companion that ran it is abandoned (its worker retires)."""
        if self.companion is not None:
            self.companion.abandon()
            self.companion = None

    def _values(
        self, instance: _Instance, variables: Mapping[str, Any]
    ) -> tuple[list[bytes], list[str], dict[str, list[list[str | int]]], dict[str, str]]:
        """What the request sends: each new value's payloads in order (its JSON with its long strings left
        out, then each long string's text), the new values' keys, where each one's long strings go, and the
        key of each name."""
        payloads: list[bytes] = []
        keys: list[str] = []
        long: dict[str, list[list[str | int]]] = {}
        names: dict[str, str] = {}
        for name, value in variables.items():
            text = compact_json(value)
            key = hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
            names[name] = key
            if key in instance.sent:
                continue
            instance.sent.add(key)
            keys.append(key)
            strings = _long_strings(value)
            payloads.append((_skeleton(text, strings) if strings else text).encode("utf-8"))
            self.bytes_read += len(text.encode("utf-8"))
            if strings:
                long[key] = [path for path, _text in strings]
                payloads.extend(raw for _path, raw in strings)
        return payloads, keys, long, names

    def evaluate(self, place: Place) -> list[Any] | Failed:
        if self.fuel_left <= 0:
            return _bound(place.expressions[0], MORE_INPUT_WORK)
        if self.instance is None or not self.instance.alive:
            self.instance = _Instance(self.engine, self.clock_ms, self.deadline, self.launch)
        instance = self.instance
        read = set().union(*(names_read(source) for source in place.expressions))
        payloads, keys, long, names = self._values(instance, {k: v for k, v in place.variables.items() if k in read})
        request = json.dumps(
            {
                "values": keys,
                "long": long,
                "names": names,
                "expressions": list(place.expressions),
                "condition": place.condition,
                "limit": VALUE_LIMIT,
            },
            ensure_ascii=False,
        ).encode("utf-8")
        bridge = instance.bridge
        bridge.requests.put((request, payloads, len(place.expressions), self.fuel_left))
        answers: list[Any] = []
        for source in place.expressions:
            payload = instance.next_reply()
            if payload is None:
                self.instance = None
                self.fuel_left = max(0, bridge.input_left - (bridge.allowance if bridge.in_expression else 0))
                return _bound(source, self._why_stopped(instance))
            self.fuel_left = bridge.input_left
            answer = _read_answer(source, payload)
            if isinstance(answer, Failed):
                if answer.short == "runtime":
                    # Its heap is spent (nothing is ever collected): the instance serves no more places.
                    if not instance.stop():
                        self._hung()
                    self.instance = None
                return answer
            answers.append(answer)
        return answers

    def _why_stopped(self, instance: _Instance) -> str:
        if not instance.wait_ended():
            instance.control.cancel()
            instance.bridge.requests.put((b"null", [], 0, 0))
            self._hung()
            return MORE_TIME
        if instance.control.stopped == "deadline":
            return MORE_TIME
        if instance.trap == "OUT_OF_FUEL" and instance.bridge.in_expression:
            return MORE_WORK if instance.bridge.allowance == EXPRESSION_FUEL else MORE_INPUT_WORK
        if instance.trap == "OUT_OF_FUEL":
            return MORE_READING
        return MORE_MEMORY


def _long_strings(value: Any) -> list[tuple[list[str | int], bytes]]:
    """The path and the UTF-8 text of each string longer than `LONG_STRING` in the value, depth-first.

    Iterative, so a value as deep as a run may hold (512 levels) never meets Python's recursion limit. A
    string with a lone surrogate stays in the value's JSON, whose writer names it."""
    strings: list[tuple[list[str | int], bytes]] = []
    stack: list[tuple[Any, list[str | int]]] = [(value, [])]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str) and len(item) > LONG_STRING:
            with contextlib.suppress(UnicodeEncodeError):
                strings.append((path, item.encode("utf-8")))
        elif isinstance(item, dict):
            stack.extend((child, [*path, key]) for key, child in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((child, [*path, index]) for index, child in reversed(list(enumerate(item))))
    return strings


def _skeleton(text: str, strings: list[tuple[list[str | int], bytes]]) -> str:
    """The value's JSON `text` with each long string at its path replaced by null."""
    skeleton: Any = json.loads(text)
    for path, _raw in strings:
        if not path:
            return "null"
        target = skeleton
        for token in path[:-1]:
            target = target[token]
        target[path[-1]] = None
    return compact_json(skeleton)


@functools.lru_cache(maxsize=4096)
def names_read(source: str) -> frozenset[str]:
    """The names an expression reads: only their values are sent to the instance."""
    try:
        tree = ast.parse("(" + source + "\n)", mode="eval")
    except (SyntaxError, ValueError):
        return frozenset()
    return frozenset(node.id for node in ast.walk(tree) if isinstance(node, ast.Name))


def _bound(source: str, words: str) -> Failed:
    return Failed("runtime", 500, PASSED_A_BOUND, cut_text(f"{source}: {words}")[:DETAIL_CHARACTERS])


def _failed(source: str, words: str) -> Failed:
    return Failed("expression", 400, EXPRESSION_FAILED, f"{source}: {words}"[:DETAIL_CHARACTERS])


def _read_answer(source: str, payload: bytes) -> Any | Failed:
    tag = payload[:1]
    body = payload[1:]
    if tag == b"T":
        return True
    if tag == b"F":
        return False
    if tag == b"O":
        return read_wire(body)
    if tag == b"R":
        type_name, _trace, text = json.loads(body.decode("utf-8", "replace"))
        return _failed(source, f"{type_name}: {text}")
    if tag == b"M":
        return _bound(source, MORE_MEMORY)
    if tag in (b"W", b"D"):
        header = json.loads(body.partition(b"\n")[0])
        if tag == b"D":
            return _failed(source, NOT_JSON + too_deep_words(pointer_of(header)))
        what, tokens = header
        return _failed(source, NOT_JSON + not_json_words(str(what), pointer_of(tokens)))
    if tag in (b"L", b"H"):
        return _bound(source, MORE_MEMORY)
    return _bound(source, f"an answer the host cannot read ({tag!r})")
