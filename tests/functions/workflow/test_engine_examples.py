"""The engine on the spec's worked examples (workflow-format.md 14), event by event."""

from __future__ import annotations

from auto_runtime.functions.workflow.engine.decider import call_key, call_run_id
from auto_runtime.functions.workflow.engine.model import ArmTimer, EmitEvent, Settle
from auto_runtime.sandbox.engine import SandboxEngine
from tests.functions.workflow.runner import RUN_ID, T0, Run, calls, settled, steps

EXPENSE = """\
document: { dsl: '1.0.3', namespace: finance, name: expense-approval, version: '1.2.0' }
do:
  - classify:
      call: run_definition
      with: { type: reasoning, name: classify-expense, input: { description: '${ data["description"] }' } }
      output: { as: '${ input | {"category": data["category"]} }' }
  - route:
      switch:
        - large: { when: 'data["amount_cents"] >= 50000', then: ask-manager }
        - small: { then: auto-approve }
  - auto-approve:
      set: { claim_id: '${ data["claim_id"] }', category: '${ data["category"] }', approved: true, by: policy }
      then: end
  - ask-manager:
      call: run_definition
      with:
        type: interaction
        name: approve-expense
        input: '${ {"claim_id": data["claim_id"], "amount_cents": data["amount_cents"]} }'
      output:
        as: >-
          ${ {"claim_id": input["claim_id"], "category": input["category"], "approved": data["approved"],
          "by": "manager"} }
"""
CLAIM = {"claim_id": "C-7731", "amount_cents": 82000, "description": "Flights to Lisbon"}


def test_expense_approval_asks_the_manager(engine: SandboxEngine) -> None:
    run = Run(engine, EXPENSE)

    first = run.start(CLAIM)
    applied = first.facts[0]
    assert (applied.id, applied.type, applied.causation_id) == ("I1", "workflow_input_applied", "run-started")
    assert applied.data["input"] == {"kind": "started", "key": RUN_ID}
    assert applied.data["step_count"] == 1
    assert applied.data["steps"] == [{"task": "/do/0/classify", "run": 1, "outcome": "waiting"}]
    assert applied.data["output_kinds"] == ["arm_timer", "start_call"]
    assert steps(first) == [("I1_1", "step_waiting", "/do/0/classify", "I1")]
    waiting = first.facts[1].data
    child = call_run_id(RUN_ID, "/do/0/classify", 1)
    assert waiting == {
        "name": "classify",
        "reference": "/do/0/classify",
        "run": 1,
        "times": 1,
        "waits_for": "call",
        "run_id": child,
    }
    (start,) = calls(first)
    assert (start.run_id, start.definition_type, start.name, start.cause_id) == (
        child,
        "reasoning",
        "classify-expense",
        "I1_1",
    )
    assert start.input == {"description": "Flights to Lisbon"}
    assert start.key == call_key(RUN_ID, "/do/0/classify", 1) == f'["{RUN_ID}","/do/0/classify",1]'

    second = run.answer(start.key, T0 + 2_000, output={"category": "travel"})
    assert second.facts[0].causation_id == "I1"
    assert second.facts[0].data["input"] == {"kind": "call_answered", "key": start.key, "status": "succeeded"}
    assert steps(second) == [
        ("I2_1", "step_finished", "/do/0/classify", "I2"),
        ("I2_2", "step_finished", "/do/1/route", "I2_1"),
        ("I2_3", "step_waiting", "/do/3/ask-manager", "I2_2"),
    ]
    (ask,) = calls(second)
    assert ask.input == {"claim_id": "C-7731", "amount_cents": 82000}
    assert ask.cause_id == "I2_3"

    third = run.answer(ask.key, T0 + 60_000, output={"approved": True})
    assert third.facts[0].causation_id == "I2"
    assert steps(third) == [("I3_1", "step_finished", "/do/3/ask-manager", "I3")]
    ending = settled(third)
    assert ending == Settle(
        "succeeded", output={"approved": True, "by": "manager", "category": "travel", "claim_id": "C-7731"}
    )
    assert third.facts[0].data["output_kinds"] == ["cancel_timer", "settle"]
    # I1 evaluated one place, I2 three (classify's output.as, route's when, ask-manager's with), I3 one:
    # each input in one sandbox instance.
    assert run.launches == [1, 1, 1]


def test_expense_approval_small_claim_ends_by_policy(engine: SandboxEngine) -> None:
    run = Run(engine, EXPENSE)
    first = run.start(CLAIM | {"amount_cents": 1200})
    second = run.answer(calls(first)[0].key, T0 + 1_000, output={"category": "travel"})
    assert steps(second) == [
        ("I2_1", "step_finished", "/do/0/classify", "I2"),
        ("I2_2", "step_finished", "/do/1/route", "I2_1"),
        ("I2_3", "step_finished", "/do/2/auto-approve", "I2_2"),
    ]
    assert settled(second) == Settle(
        "succeeded", output={"claim_id": "C-7731", "category": "travel", "approved": True, "by": "policy"}
    )


DIGEST = """\
document: { dsl: '1.0.3', namespace: finance, name: month-close-digest, version: '1.0.0' }
schedule:
  on: { one: { with: { type: com.acme.ledger.month-closed, data: '${ data["region"] == "eu" }' } } }
  cron: '0 6 1 * *'
input:
  from: >-
    ${ {"month": data[0]["data"]["month"], "why": data[0]["type"]} if isinstance(data, list)
    else {"month": None, "why": "cron"} }
do:
  - regions:
      for: { in: '${ ["eu", "uk"] }', each: region }
      do:
        - read:
            call: run_definition
            with: { type: recall, name: region-balances, input: '${ {"region": region, "month": data["month"]} }' }
            output: { as: '${ input | {region: data["balance_cents"]} }' }
  - publish:
      emit:
        event:
          with: { type: com.acme.digest.ready, source: https://finance.acme.example/digests, data: '${ data }' }
"""


def test_month_close_digest_loops_and_emits(engine: SandboxEngine) -> None:
    run = Run(engine, DIGEST)
    event = {"specversion": "1.0", "id": "e1", "type": "com.acme.ledger.month-closed", "source": "/x"}
    event["data"] = {"region": "eu", "month": "2026-09"}
    first = run.start([event])
    assert steps(first) == [
        ("I1_1", "step_started", "/do/0/regions", "I1"),
        ("I1_2", "step_waiting", "/do/0/regions/do/0/read", "I1_1"),
    ]
    (eu,) = calls(first)
    assert eu.input == {"region": "eu", "month": "2026-09"}
    second = run.answer(eu.key, T0 + 100, output={"balance_cents": 5100})
    assert steps(second) == [
        ("I2_1", "step_finished", "/do/0/regions/do/0/read", "I2"),
        ("I2_2", "step_waiting", "/do/0/regions/do/0/read", "I2"),
    ]
    assert second.facts[2].data["run"] == 2
    (uk,) = calls(second)
    assert uk.input == {"region": "uk", "month": "2026-09"}
    assert uk.run_id == call_run_id(RUN_ID, "/do/0/regions/do/0/read", 2)
    third = run.answer(uk.key, T0 + 200, output={"balance_cents": 770})
    assert steps(third) == [
        ("I3_1", "step_finished", "/do/0/regions/do/0/read", "I3"),
        ("I3_2", "step_finished", "/do/0/regions", "I3"),
        ("I3_3", "step_finished", "/do/1/publish", "I3_2"),
    ]
    output = {"eu": 5100, "month": "2026-09", "uk": 770, "why": "com.acme.ledger.month-closed"}
    (emitted,) = [o for o in third.outputs if isinstance(o, EmitEvent)]
    assert emitted.event["type"] == "com.acme.digest.ready"
    assert emitted.event["data"] == output
    assert settled(third) == Settle("succeeded", output=output)


def test_month_close_digest_on_its_cron(engine: SandboxEngine) -> None:
    run = Run(engine, DIGEST)
    first = run.start({"schedule": {"due": "2026-10-01T06:00:00.000Z"}})
    assert calls(first)[0].input == {"region": "eu", "month": None}
    assert any(isinstance(o, ArmTimer) and o.purpose == "deadline" for o in first.outputs)
