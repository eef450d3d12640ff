"""listen (spec 9.1): events sent to the run, the inbox, `one`/`any`/`all`, reads, and playbook events."""

from __future__ import annotations

from typing import Any

from auto_runtime.functions.workflow.engine.errors import json_equal, matches
from auto_runtime.functions.workflow.engine.model import ArmListener, CancelListener, Settle
from auto_runtime.sandbox.engine import SandboxEngine
from tests.functions.workflow.runner import T0, Run, outputs_of, settled, steps

HEAD = "document: { dsl: '1.0.3', namespace: tests, name: listen, version: '1.0.0' }\n"


def event(event_id: str, kind: str, data: Any = None, **extra: Any) -> dict[str, Any]:
    made = {"specversion": "1.0", "id": event_id, "type": kind, "source": "/callers/c1", "time": "2026-01-01T00:00:00Z"}
    if data is not None:
        made["data"] = data
    return made | extra


ONE = HEAD + "do:\n  - hear: { listen: { to: { one: { with: { type: com.acme.ping } } } } }\n"


def test_listen_one_takes_a_matching_event_and_outputs_its_data(engine: SandboxEngine) -> None:
    run = Run(engine, ONE)
    started = run.start({})
    assert steps(started) == [("I1_1", "step_waiting", "/do/0/hear", "I1")]
    assert started.facts[1].data["waits_for"] == "event"
    assert outputs_of(started, ArmListener) == [
        ArmListener(f"{run.state.run_id}/do/0/hear#1:listen", ("com.acme.ping",))
    ]
    other = run.send(event("e0", "com.acme.other"), T0 + 5)
    assert other.facts[0].causation_id is None
    assert other.facts[0].data["step_count"] == 0
    assert other.facts[0].data["input"] == {"kind": "event_received", "key": "e0", "event_type": "com.acme.other"}
    heard = run.send(event("e1", "com.acme.ping", {"n": 1}), T0 + 10)
    assert heard.facts[0].causation_id == "I1"
    assert steps(heard) == [("I3_1", "step_finished", "/do/0/hear", "I3")]
    assert outputs_of(heard, CancelListener) == [CancelListener(f"{run.state.run_id}/do/0/hear#1:listen")]
    assert settled(heard) == Settle("succeeded", output=[{"n": 1}])


def test_an_event_sent_again_is_stale(engine: SandboxEngine) -> None:
    run = Run(engine, HEAD + "do:\n  - pause: { wait: PT1M }\n")
    run.start({})
    assert not run.send(event("e1", "a"), T0 + 1).stale
    again = run.send(event("e1", "a"), T0 + 2)
    assert again.stale and again.facts == ()


def test_an_event_waits_in_the_inbox_until_a_listen_takes_it(engine: SandboxEngine) -> None:
    source = (
        HEAD
        + "do:\n  - pause: { wait: PT1S }\n"
        + "  - hear: { listen: { to: { any: [ { with: { type: a } }, { with: { type: b } } ] }, read: envelope } }\n"
    )
    run = Run(engine, source)
    started = run.start({})
    run.send(event("e1", "b", {"x": 1}, subject="s"), T0 + 100)
    (timer,) = [o for o in started.outputs if getattr(o, "purpose", None) == "wait"]
    fired = run.fire(timer.timer_id, T0 + 1_000)  # type: ignore[union-attr]
    assert steps(fired) == [
        ("I3_1", "step_finished", "/do/0/pause", "I3"),
        ("I3_2", "step_finished", "/do/1/hear", "I3_1"),
    ]
    ending = settled(fired)
    assert ending == Settle(
        "succeeded",
        output=[
            {
                "specversion": "1.0",
                "id": "e1",
                "type": "b",
                "source": "/callers/c1",
                "time": "2026-01-01T00:00:00Z",
                "data": {"x": 1},
                "subject": "s",
            }
        ],
    )


ALL = (
    HEAD
    + "do:\n  - hear:\n      listen:\n        to:\n          all:\n"
    + "            - { with: { type: order, data: '${ data[\"total\"] > 100 }' } }\n"
    + "            - { with: { type: payment } }\n"
)


def test_listen_all_records_waiting_again_until_every_filter_took_one(engine: SandboxEngine) -> None:
    run = Run(engine, ALL)
    run.start({})
    small = run.send(event("e1", "order", {"total": 5}), T0 + 1)
    assert steps(small) == []
    paid = run.send(event("e2", "payment", {"paid": True}), T0 + 2)
    assert paid.facts[0].causation_id == "I1"
    assert steps(paid) == [("I3_1", "step_waiting", "/do/0/hear", "I3")]
    assert paid.facts[1].data["times"] == 2
    big = run.send(event("e3", "order", {"total": 500}), T0 + 3)
    assert big.facts[0].causation_id == "I3"
    assert steps(big) == [("I4_1", "step_finished", "/do/0/hear", "I4")]
    assert settled(big) == Settle("succeeded", output=[{"total": 500}, {"paid": True}])


def test_a_filter_expression_that_raises_raises_in_the_listen(engine: SandboxEngine) -> None:
    run = Run(engine, ALL)
    run.start({})
    broken = run.send(event("e1", "order", {"sum": 5}), T0 + 1)
    assert steps(broken) == [("I2_1", "step_failed", "/do/0/hear", "I2")]
    ending = settled(broken)
    assert ending is not None and ending.rejection is not None
    assert ending.rejection["detail"] == 'An expression failed: data["total"] > 100: KeyError: total (at /do/0/hear)'


def test_playbook_events_reach_only_an_open_listen_with_a_literal_type(engine: SandboxEngine) -> None:
    run = Run(engine, ONE)
    run.start({})
    offered = run.offer("record-9", event("p1", "com.acme.ping", {"from": "playbook"}), T0 + 5)
    assert offered.facts[0].data["input"] == {"kind": "event_offered", "key": "record-9", "event_type": "com.acme.ping"}
    assert settled(offered) == Settle("succeeded", output=[{"from": "playbook"}])
    assert run.offer("record-10", event("p2", "com.acme.ping"), T0 + 6).stale


def test_an_envelope_always_shows_specversion(engine: SandboxEngine) -> None:
    """`read: envelope` shows `{ specversion, id, type, source, time }`: an event sent without `specversion`
    (send_run_event does not ask for one) is still a CloudEvent 1.0."""
    run = Run(engine, HEAD + "do:\n  - hear: { listen: { to: { one: { with: { type: a } } }, read: envelope } }\n")
    run.start({})
    sent = {"id": "e1", "type": "a", "source": "/callers/c1", "time": "2026-01-01T00:00:00Z", "data": 1}
    heard = run.send(sent, T0 + 1)
    assert settled(heard) == Settle("succeeded", output=[sent | {"specversion": "1.0"}])
    assert list(settled(heard).output[0])[:5] == ["specversion", "id", "type", "source", "time"]  # type: ignore[union-attr]


def test_a_literal_filter_value_equals_the_attribute_as_json(engine: SandboxEngine) -> None:
    """`data: 1` is not `true`, `data: { on: false }` is not `{ on: 0 }` (spec 9.1: "equal the attribute as
    JSON"); `1` equals `1.0`, one JSON number."""
    source = (
        HEAD
        + "do:\n  - hear: { listen: { to: { all: [ { with: { data: 1 } }, { with: { data: { on: false } } } ] } } }\n"
    )
    run = Run(engine, source)
    run.start({})
    for n, data in enumerate([True, {"on": 0}, [1]]):
        assert run.send(event(f"e{n}", "t", data), T0 + n + 1).facts[0].data["step_count"] == 0
    run.send(event("e-float", "t", 1.0), T0 + 10)
    heard = run.send(event("e-off", "t", {"on": False}), T0 + 11)
    assert settled(heard) == Settle("succeeded", output=[1.0, {"on": False}])


def test_json_equality_tells_booleans_from_numbers() -> None:
    assert json_equal(1, 1.0) and json_equal({"a": [1, None]}, {"a": [1.0, None]})
    assert not json_equal(True, 1) and not json_equal(0, False) and not json_equal([True], [1])
    assert not json_equal({"a": 1}, {"a": 1, "b": 2}) and not json_equal([1], {"0": 1})
    raised = {"type": "https://example.com/e", "status": 400, "instance": "/do/0/x", "kind": "0"}
    assert matches({"status": 400}, raised) and not matches({"status": 400.5}, raised)
    assert not matches({"kind": 0}, raised)
