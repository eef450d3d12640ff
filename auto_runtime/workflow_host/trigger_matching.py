"""Whether an event trigger's filters match a playbook event (spec 10, "Trigger filters").

A filter as the definition keeps it is `{reference, type, attributes}`: the literal `type` must equal the event's;
each attribute is compared with the event's attribute as JSON (missing = `null`), except a `data` attribute
written as `${ }`, which is evaluated with `data` = the event's data and matches when it holds (spec 4.3).
Every expression of one recorded event is evaluated in one sandbox (`DataConditions`); an expression that raises
or passes a bound of the sandbox is no match, never an error.

`DataConditions` blocks on the sandbox: call `matching_filters` on a worker thread (`trio.to_thread.run_sync`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from auto_runtime.functions.workflow.engine.evaluation import Failed, evaluate_condition
from auto_runtime.functions.workflow.engine.sandbox_evaluator import SandboxEvaluator
from auto_runtime.functions.workflow.expressions import wrapped_expression
from auto_runtime.playbooks.json_equality import json_equal
from auto_runtime.sandbox.engine import SandboxEngine


class DataConditions:
    """The `data` expressions of one event's filters, evaluated in one sandbox opened on first need."""

    def __init__(self, engine: SandboxEngine, clock_ms: int) -> None:
        self.engine = engine
        self.clock_ms = clock_ms
        self._evaluator: SandboxEvaluator | None = None

    def holds(self, expression: str, data: Any) -> bool:
        if self._evaluator is None:
            self._evaluator = SandboxEvaluator(self.engine, self.clock_ms)
        try:
            held = evaluate_condition(self._evaluator, expression, {"data": data})
        except Exception:  # a sandbox that cannot run the expression is no match, as a raising one is
            return False
        return held is True and not isinstance(held, Failed)

    def close(self) -> None:
        if self._evaluator is not None:
            self._evaluator.close()
            self._evaluator = None


def literal_matches(item: Mapping[str, Any], event: Mapping[str, Any]) -> bool:
    """Whether the filter's literal parts (type and every attribute that is no expression) match."""
    if item.get("type") != event.get("type"):
        return False
    attributes = item.get("attributes") or {}
    for name, wanted in attributes.items():
        if name == "data" and wrapped_expression(wanted) is not None:
            continue
        if not json_equal(wanted, event.get(name)):
            return False
    return True


def filter_matches(item: Mapping[str, Any], event: Mapping[str, Any], conditions: DataConditions) -> bool:
    if not literal_matches(item, event):
        return False
    wanted = (item.get("attributes") or {}).get("data")
    expression = wrapped_expression(wanted)
    return expression is None or conditions.holds(expression, event.get("data"))


def trigger_matches(filters: Sequence[Mapping[str, Any]], event: Mapping[str, Any], conditions: DataConditions) -> bool:
    """Whether any filter of an event trigger matches (`one` has a single filter); the first match decides."""
    return any(filter_matches(item, event, conditions) for item in filters)
