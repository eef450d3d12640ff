"""Expressions on the sandbox: one MicroPython instance serves every expression of one input (spec 4.5).

The instance runs the computation prelude's guards and writer, then a loop that asks the host for the next
request through the bridge (`request`), evaluates each expression of it in its own namespace, and sends one
`answer` per expression (the writer's wire form, a truth value, or the exception), stopping at the first
that raises. The host side is a conversation between two threads: the thread that applies the input calls
`evaluate`, which hands the request to the instance's thread and waits for its answers. A value is sent
once per instance (by the digest of its JSON) and shared, since no expression changes what it reads.

An instance that passed a bound (work, memory, time) is over; the next place starts a fresh one. Call
`close()` when the input is applied, so the instance ends.
"""

from __future__ import annotations

import hashlib
import json
import queue
import threading
import time
from collections.abc import Mapping
from typing import Any

from auto_runtime.functions.workflow.engine.evaluation import EXPRESSION_FAILED, PASSED_A_BOUND, Failed, Place
from auto_runtime.problems import cut_text
from auto_runtime.sandbox.bridge import Bridge
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.interruption import RunControl
from auto_runtime.sandbox.json_values import compact_json, pointer_of
from auto_runtime.sandbox.limits import PRELUDE_FUEL
from auto_runtime.sandbox.prelude import EVALUATE_PRELUDE
from auto_runtime.sandbox.store_run import StoreSession, run_store
from auto_runtime.sandbox.wire import read_wire

EXPRESSION_FUEL = 250_000_000
INPUT_FUEL = 1_000_000_000
INPUT_SECONDS = 5.0
EXPRESSION_MEMORY = 80 * 1024 * 1024
EXPRESSION_HEAP = "64M"
VALUE_LIMIT = 4 * 1024 * 1024
DETAIL_CHARACTERS = 1000

MORE_WORK = "it used more than its 250,000,000 units of work"
MORE_INPUT_WORK = "the input used more than its 1,000,000,000 units of work"
MORE_MEMORY = "it used more than the input's 64 MiB of memory"
MORE_TIME = "the input ran more than its 5 seconds in the sandbox"

_HEAD = EVALUATE_PRELUDE[: EVALUATE_PRELUDE.index("def _run():")]
EXPRESSION_PRELUDE = (
    _HEAD
    + r"""
_values = {}


def _serve():
    while True:
        request = _loads(_call("request", ""))
        if request is None:
            return
        for key, text in request["values"].items():
            _values[key] = _loads(text)
        names = {}
        for name, key in request["names"].items():
            names[name] = _values[key]
        condition = request["condition"]
        for source in request["expressions"]:
            scope = dict(names)
            try:
                _exec(_compile("__r = (" + source + "\n)", "expression", "exec"), scope)
                value = scope["__r"]
                if condition:
                    answer = "T" if value else "F"
                else:
                    answer = _write(value, request["limit"])
            except _BaseException as error:
                _call("answer", _report_raised(error))
                break
            _call("answer", answer)
            if not condition and (_type(answer) is not bytes or answer[:1] != b"O"):
                break


_serve()
"""
)


class _Conversation(Bridge):
    """A bridge whose answers come, one request at a time, from the thread applying the input."""

    def __init__(self, clock_ns: int, session: StoreSession) -> None:
        super().__init__((), {}, clock_ns)
        self.session = session
        self.requests: queue.Queue[tuple[bytes, int, int]] = queue.Queue()
        self.replies: queue.Queue[bytes | None] = queue.Queue()
        self._next: tuple[bytes, int, int] | None = None
        self.expected = 0
        """Answers the guest still owes for the request it took: its next calls are `answer` until then."""

    def _take(self) -> tuple[bytes, int, int]:
        if self._next is None:
            self._next = self.requests.get()
        return self._next

    def next_answer_size(self) -> int:
        if self.expected > 0:
            return 0
        return len(self._take()[0])

    def call(self, name: str, payload: bytes) -> bytes | None:
        if name == "request" and self.expected == 0:
            request, expected, allowance = self._take()
            self._next = None
            self.expected = expected
            self.session.set_fuel(allowance)
            return request
        if name == "answer" and self.expected > 0:
            self.expected = 0 if payload[:1] not in (b"O", b"T", b"F") else self.expected - 1
            self.replies.put(payload)
            return b""
        self.refused = self.refused or f"bridge call {name!r} is not part of the conversation"
        return None


class _Instance:
    """One live instance on its own thread."""

    def __init__(self, engine: SandboxEngine, clock_ms: int, deadline: float) -> None:
        self.session = StoreSession(engine, PRELUDE_FUEL, EXPRESSION_MEMORY)
        self.bridge = _Conversation(clock_ms * 1_000_000, self.session)
        self.control = RunControl(deadline)
        self.sent: set[str] = set()
        self.trap: str | None = None
        self.alive = True
        self.thread = threading.Thread(target=self._run, args=(engine,), name="workflow-expressions", daemon=True)
        self.thread.start()

    def _run(self, engine: SandboxEngine) -> None:
        try:
            ending = run_store(engine, self.session, EXPRESSION_PRELUDE, self.bridge, self.control, EXPRESSION_HEAP)
            self.trap = ending.trap or ending.error or (None if ending.clean else f"exit {ending.exit_code}")
        finally:
            self.alive = False
            self.bridge.replies.put(None)

    def stop(self) -> None:
        if self.alive:
            self.bridge.requests.put((b"null", 0, 0))
        self.thread.join(timeout=INPUT_SECONDS + 1)


class SandboxEvaluator:
    """An `Evaluator` for one input. No instance starts until the first place is evaluated."""

    def __init__(self, engine: SandboxEngine, clock_ms: int) -> None:
        self.engine = engine
        self.clock_ms = clock_ms
        self.deadline = time.monotonic() + INPUT_SECONDS
        self.fuel_left = INPUT_FUEL
        self.instance: _Instance | None = None

    def close(self) -> None:
        if self.instance is not None:
            self.instance.stop()
            self.instance = None

    def _values(self, instance: _Instance, variables: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
        values: dict[str, str] = {}
        names: dict[str, str] = {}
        for name, value in variables.items():
            text = compact_json(value)
            key = hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
            names[name] = key
            if key not in instance.sent:
                values[key] = text
                instance.sent.add(key)
        return values, names

    def evaluate(self, place: Place) -> list[Any] | Failed:
        if self.fuel_left <= 0:
            return _bound(place.expressions[0], MORE_INPUT_WORK)
        if self.instance is None or not self.instance.alive:
            self.instance = _Instance(self.engine, self.clock_ms, self.deadline)
        instance = self.instance
        values, names = self._values(instance, place.variables)
        request = json.dumps(
            {
                "values": values,
                "names": names,
                "expressions": list(place.expressions),
                "condition": place.condition,
                "limit": VALUE_LIMIT,
            },
            ensure_ascii=False,
        ).encode("utf-8")
        allowance = min(EXPRESSION_FUEL * len(place.expressions), self.fuel_left)
        instance.bridge.requests.put((request, len(place.expressions), allowance))
        answers: list[Any] = []
        for source in place.expressions:
            payload = instance.bridge.replies.get()
            if payload is None:
                self.instance = None
                self.fuel_left = max(0, self.fuel_left - allowance)
                return _bound(source, self._why_stopped(instance))
            answer = _read_answer(source, payload)
            if isinstance(answer, Failed):
                self._spent(instance, allowance)
                return answer
            answers.append(answer)
        self._spent(instance, allowance)
        return answers

    def _spent(self, instance: _Instance, allowance: int) -> None:
        try:
            self.fuel_left -= allowance - instance.session.fuel_left()
        except Exception:
            self.fuel_left -= allowance

    def _why_stopped(self, instance: _Instance) -> str:
        instance.thread.join(timeout=INPUT_SECONDS + 1)
        if instance.control.stopped == "deadline":
            return MORE_TIME
        if instance.trap == "OUT_OF_FUEL":
            return MORE_WORK
        return MORE_MEMORY


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
        header = body.partition(b"\n")[0]
        if tag == b"D":
            return _failed(
                source,
                f"The value cannot be written as JSON: it nests deeper than 512 at {pointer_of(json.loads(header))}",
            )
        what, tokens = json.loads(header)
        return _failed(source, f"The value cannot be written as JSON: {what} at {pointer_of(tokens) or '/'}")
    if tag in (b"L", b"H"):
        return _bound(source, MORE_MEMORY)
    return _bound(source, f"an answer the host cannot read ({tag!r})")
