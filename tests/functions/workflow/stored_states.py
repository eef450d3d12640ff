"""Runs that leave every kind of task run, in every phase, in a stored state: the codec's fixture.

`stored_states.json` holds, per scenario, the state `dump_state` wrote after each input, as the engine wrote it
before task runs were typed (commit 1c16eec). Stored states in existing ledgers are of that form, so the file is
kept as it is: a change that needs it rewritten breaks the runs those ledgers hold. `write_fixture` wrote it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from auto_runtime.functions.workflow.engine.model import ArmListener, ArmTimer, StartCall, Transition
from auto_runtime.functions.workflow.engine.state_codec import dump_state
from auto_runtime.sandbox.engine import SandboxEngine
from tests.functions.workflow.runner import T0, Run

FIXTURE = Path(__file__).with_name("stored_states.json")
HEAD = "document: { dsl: '1.0.3', namespace: tests, name: stored, version: '1.0.0' }\n"
BEFORE_YIELD = "  - loop:\n      for: { in: '${ list(range(99)) }' }\n      do:\n        - n: { set: { n: 1 } }\n"
"""A loop that begins 100 tasks: the task after it is the first one the next input begins (a kept `begin`)."""

TASKS: dict[str, str] = {
    "set": "{ set: { s: 1 } }",
    "switch": "{ switch: [ { only: { then: continue } } ] }",
    "emit": "{ emit: { event: { with: { type: com.acme.out, source: https://acme.example/out } } } }",
    "raise": "{ raise: { error: { type: communication, status: 503 } } }",
    "wait": "{ wait: PT1M }",
    "call": "{ call: run_definition, with: { type: computation, name: sum } }",
    "listen": "{ listen: { to: { one: { with: { type: com.acme.ping } } } } }",
    "try": "{ try: [ { inner: { wait: PT1M } } ], catch: { errors: { with: { type: timeout } } } }",
    "for": "{ for: { in: '${ [1, 2] }', each: item }, do: [ { nap: { wait: PT1M } } ] }",
    "fork": "{ fork: { branches: [ { a: { wait: PT1M } }, { b: { set: { b: 1 } } } ] } }",
    "do": "{ do: [ { nap: { wait: PT1M } } ] }",
}


def event(event_id: str, kind: str, data: Any = None) -> dict[str, Any]:
    return {"specversion": "1.0", "id": event_id, "type": kind, "source": "/callers/c1", "data": data}


def armed(transition: Transition, purpose: str) -> ArmTimer:
    found = [o for o in transition.outputs if isinstance(o, ArmTimer) and o.purpose == purpose]
    assert found, f"no {purpose} timer armed"
    return found[0]


def started_call(transition: Transition) -> StartCall:
    found = [o for o in transition.outputs if isinstance(o, StartCall)]
    assert found, "no call started"
    return found[0]


Scenario = Callable[[Run], Iterator[Transition]]


def kept_begin(kind: str) -> tuple[str, Scenario]:
    """A task of `kind` kept as a `begin` across a yield, then begun by the yield's timer."""

    def play(run: Run) -> Iterator[Transition]:
        started = run.start({"x": 1})
        yield started
        yield run.fire(armed(started, "yield").timer_id, T0 + 1)

    return HEAD + "do:\n" + BEFORE_YIELD + f"  - target: {TASKS[kind]}\n", play


def retry_delay() -> tuple[str, Scenario]:
    source = HEAD + (
        "do:\n  - guarded:\n      try:\n        - fail: { raise: { error: { type: communication, status: 503 } } }\n"
        "      catch:\n        retry: { delay: PT10S, limit: { duration: PT25S } }\n"
    )

    def play(run: Run) -> Iterator[Transition]:
        transition = run.start({"kept": True})
        yield transition
        while any(isinstance(o, ArmTimer) and o.purpose == "retry" for o in transition.outputs):
            timer = armed(transition, "retry")
            transition = run.fire(timer.timer_id, timer.due_at)
            yield transition

    return source, play


def attempt_then_catch() -> tuple[str, Scenario]:
    source = HEAD + (
        "do:\n  - guarded:\n      try:\n"
        "        - slow: { call: run_definition, with: { type: computation, name: slow } }\n"
        "      catch:\n        errors: { with: { type: timeout } }\n"
        "        retry: { limit: { attempt: { duration: PT2S, count: 1 } } }\n"
        "        do:\n          - gave-up: { wait: PT1M }\n          - after: { set: '${ error }' }\n"
    )

    def play(run: Run) -> Iterator[Transition]:
        first = run.start({})
        yield first
        second = run.fire(armed(first, "attempt").timer_id, T0 + 2_000)
        yield second
        third = run.fire(armed(second, "attempt").timer_id, T0 + 4_000)
        yield third
        yield run.fire(armed(third, "wait").timer_id, T0 + 64_000)

    return source, play


def forks(compete: str, second: str) -> tuple[str, Scenario]:
    source = HEAD + (
        f"do:\n  - both:\n      fork:\n        compete: {compete}\n        branches:\n"
        "          - left: { call: run_definition, with: { type: computation, name: left } }\n"
        f"          - right: {second}\n"
    )

    def play(run: Run) -> Iterator[Transition]:
        started = run.start({"x": 1})
        yield started
        left = started_call(started)
        yield run.answer(left.key, T0 + 10, "failed" if compete == "true" else "succeeded", output={"l": 1})

    return source, play


def loop_of_waits() -> tuple[str, Scenario]:
    source = HEAD + (
        'do:\n  - loop:\n      for: { in: \'${ ["a", "b"] }\', each: letter, at: position }\n'
        "      do:\n        - nap: { wait: PT1S, timeout: { after: PT1M } }\n"
        "        - keep: { set: '${ data + [letter] }' }\n"
    )

    def play(run: Run) -> Iterator[Transition]:
        transition = run.start([])
        yield transition
        for n in (1, 2):
            transition = run.fire(armed(transition, "wait").timer_id, T0 + n * 1_000)
            yield transition

    return source, play


def listens() -> tuple[str, Scenario]:
    source = HEAD + (
        "do:\n  - hear: { listen: { to: { all: "
        "[ { with: { type: a } }, { with: { type: '${ data == \"b\" }' } } ] } } }\n"
        "  - then-one: { listen: { to: { one: { with: { type: com.acme.ping } } } }, timeout: { after: PT1H } }\n"
    )

    def play(run: Run) -> Iterator[Transition]:
        started = run.start({})
        yield started
        yield run.send(event("e1", "a", {"n": 1}), T0 + 1)
        yield run.send(event("e2", "c", "kept in the inbox"), T0 + 2)
        offered = run.send(event("e3", "b", [1, 2]), T0 + 3)
        yield offered
        listener = next(o for o in offered.outputs if isinstance(o, ArmListener))
        yield run.offer("record-1", event("e4", listener.types[0], {"ping": True}), T0 + 4)

    return source, play


def calls_and_cancel() -> tuple[str, Scenario]:
    source = HEAD + (
        "do:\n  - first: { call: run_definition, with: { type: interaction, name: approve }, "
        "timeout: { after: PT1H } }\n"
        "  - emit-one: { emit: { event: { with: "
        "{ type: com.acme.out, source: https://acme.example/out, data: '${ data }' } } } }\n"
        "  - second: { call: run_definition, with: { type: '${ \"computation\" }', name: sum, input: '${ data }' } }\n"
    )

    def play(run: Run) -> Iterator[Transition]:
        started = run.start({"a": 1})
        yield started
        answered = run.answer(started_call(started).key, T0 + 5, output={"approved": "yes ✓"})
        yield answered
        yield run.cancel(T0 + 6, reason="no longer wanted")

    return source, play


def quick_waits() -> tuple[str, Scenario]:
    source = HEAD + "do:\n  - a: { wait: PT0S, then: a }\n"

    def play(run: Run) -> Iterator[Transition]:
        transition = run.start({})
        yield transition
        for n in range(1, 4):
            transition = run.fire(armed(transition, "wait").timer_id, T0 + n)
            yield transition

    return source, play


def scenarios() -> dict[str, tuple[str, Scenario]]:
    made = {f"kept-{kind}": kept_begin(kind) for kind in TASKS}
    made["retry-delay"] = retry_delay()
    made["attempt-then-catch"] = attempt_then_catch()
    made["fork-plain"] = forks("false", "{ do: [ { s: { set: { s: 1 } } }, { nap: { wait: PT1M } } ] }")
    made["fork-compete"] = forks("true", "{ wait: PT1M }")
    made["fork-end"] = forks("false", "{ set: { r: 1 }, then: end }")
    made["loop-of-waits"] = loop_of_waits()
    made["listens"] = listens()
    made["calls-and-cancel"] = calls_and_cancel()
    made["quick-waits"] = quick_waits()
    return made


def written_states(engine: SandboxEngine) -> dict[str, list[dict[str, Any]]]:
    """Per scenario, the state `dump_state` writes after each input."""
    written: dict[str, list[dict[str, Any]]] = {}
    for name, (source, play) in scenarios().items():
        run = Run(engine, source)
        written[name] = [dump_state(transition.state) for transition in play(run)]
    return written


def encoded(state: dict[str, Any]) -> str:
    """A state as the host stores it, byte for byte (`json.dumps` keeps the order of its keys)."""
    return json.dumps(state)


def write_fixture(engine: SandboxEngine) -> None:
    written = written_states(engine)
    FIXTURE.write_text(json.dumps(written, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
