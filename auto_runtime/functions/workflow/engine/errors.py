"""Workflow errors (spec 7): the error object, the errors the runtime raises, catching, and run endings.

An error is a plain dict `{type, status, instance, title?, detail?, kind?, because?, errors?}` so expressions
read it as written. Short types stand for the DSL's standard error URIs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

STANDARD = "https://open-workflow-specification.org/spec/1.0.0/errors/"
PROBLEMS = "https://on.auto/problems/"
SHORT_TYPES: tuple[str, ...] = (
    "configuration", "validation", "expression", "authentication", "authorization", "timeout", "communication",
    "runtime",
)  # fmt: skip
EFFECT_UNKNOWN = PROBLEMS + "effect_unknown"
TOOLS_CALLED = PROBLEMS + "tools_called"
TOOLS_UNFINISHED = PROBLEMS + "tools_unfinished"
REBUILDING = PROBLEMS + "rebuilding"
CANCELLED = PROBLEMS + "cancelled"
UNANSWERED = PROBLEMS + "unanswered"

Error = dict[str, Any]


def error(short: str, status: int, instance: str, title: str | None = None, detail: str | None = None) -> Error:
    """An error of a standard short type (`validation`, `timeout`, …) or a full URI."""
    made: Error = {"type": short if ":" in short else STANDARD + short, "status": status, "instance": instance}
    if title is not None:
        made["title"] = title
    if detail is not None:
        made["detail"] = detail
    return made


def json_equal(left: Any, right: Any) -> bool:
    """Equality of two JSON values as JSON: `true` is not `1`, nor `false` `0` (Python's `==` says they are);
    numbers compare by value, objects by their keys and values, arrays item by item."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(json_equal(left[key], right[key]) for key in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(json_equal(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, dict | list) or isinstance(right, dict | list):
        return False
    return bool(left == right)


def _same_type(wanted: Any, actual: Any) -> bool:
    if json_equal(wanted, actual):
        return True
    return isinstance(wanted, str) and wanted in SHORT_TYPES and actual == STANDARD + wanted


def matches(pattern: Mapping[str, Any] | None, caught: Error) -> bool:
    """Rules 1 and 2 of spec 7.3: every field of `errors.with` equals the error's; `effect_unknown` by name only."""
    effect_unknown = caught.get("type") == EFFECT_UNKNOWN or caught.get("kind") == "effect_unknown"
    if not pattern:
        return not effect_unknown
    for key, wanted in pattern.items():
        actual = caught.get("detail" if key == "details" else key)
        if key == "type":
            if not _same_type(wanted, actual):
                return False
        elif not json_equal(wanted, actual):
            return False
    if effect_unknown:
        return pattern.get("type") == EFFECT_UNKNOWN or pattern.get("kind") == "effect_unknown"
    return True


@dataclass(frozen=True)
class RunRejection:
    """How an uncaught error (or a cancel) ends the run: `rejected` with this reason (spec 8)."""

    reason: str
    detail: str
    kind: str | None = None
    because: str | None = None
    errors: tuple[Mapping[str, str], ...] = ()


def uncaught(raised: Error) -> RunRejection:
    """The rejection an uncaught error ends the run with (spec 8)."""
    title = raised.get("title") or raised.get("type")
    detail = f"{title}"
    if raised.get("detail"):
        detail += f": {raised['detail']}"
    detail += f" (at {raised.get('instance', '/')})"
    kind_type = raised.get("type")
    because = raised.get("because") if isinstance(raised.get("because"), str) else None
    if kind_type == TOOLS_CALLED:
        return RunRejection("conflict", detail, "tools_called", because)
    if kind_type == EFFECT_UNKNOWN:
        return RunRejection("conflict", detail, "effect_unknown", because)
    if kind_type == TOOLS_UNFINISHED:
        return RunRejection("unavailable", detail, "tools_unfinished", because)
    if kind_type == REBUILDING:
        return RunRejection("unavailable", detail, "rebuilding", because)
    if kind_type == UNANSWERED:
        kind = raised.get("kind") if isinstance(raised.get("kind"), str) else None
        return RunRejection("unanswered", detail, kind)
    status = raised.get("status")
    if isinstance(status, int) and 400 <= status <= 499 and status not in (408, 429):
        issues = raised.get("errors")
        kept = tuple(dict(issue) for issue in issues if isinstance(issue, dict)) if isinstance(issues, list) else ()
        return RunRejection("invalid_input", detail, errors=kept)
    return RunRejection("unavailable", detail)


LABELS = {
    "reasoning": "reasoning function",
    "interaction": "interaction function",
    "computation": "computation function",
    "recall": "recall function",
    "prediction": "prediction function",
    "workflow": "workflow",
}


def label(definition_type: str, name: str) -> str:
    """`The <label> <name>`, such as `The recall function region-balances`."""
    return f"The {LABELS.get(definition_type, definition_type)} {name}"


def _rejected_type(reason: str, kind: str | None) -> tuple[str, int]:
    if reason == "invalid_input":
        return STANDARD + "validation", 400
    if reason == "forbidden":
        return STANDARD + "authorization", 403
    if reason == "not_found":
        return STANDARD + "configuration", 404
    if reason == "conflict":
        if kind == "effect_unknown":
            return EFFECT_UNKNOWN, 409
        if kind == "tools_called":
            return TOOLS_CALLED, 409
        return STANDARD + "runtime", 409
    if reason == "unavailable":
        if kind == "tools_unfinished":
            return TOOLS_UNFINISHED, 503
        if kind == "rebuilding":
            return REBUILDING, 503
        return STANDARD + "communication", 503
    if reason == "cancelled":
        return CANCELLED, 409
    if reason == "unanswered":
        return UNANSWERED, 410
    return STANDARD + "runtime", 500


def callee_error(
    instance: str,
    definition_type: str,
    name: str,
    status: str,
    rejection: Mapping[str, Any] | None = None,
    incident: str | None = None,
) -> Error:
    """The error a call step raises when its run did not succeed (spec 6.1)."""
    who = label(definition_type, name)
    if status == "failed":
        return error("runtime", 500, instance, f"{who} failed", f"The run failed with incident {incident}")
    if status == "unreachable":
        words = f"run_definition could not reach the {LABELS.get(definition_type, definition_type)} {name}"
        return error("communication", 503, instance, words)
    rejection = rejection or {}
    reason = str(rejection.get("reason", "internal"))
    kind = rejection.get("kind") if isinstance(rejection.get("kind"), str) else None
    error_type, error_status = _rejected_type(reason, kind)
    made: Error = {
        "type": error_type,
        "status": error_status,
        "instance": instance,
        "title": f"{who} rejected the run with {reason}",
    }
    if isinstance(rejection.get("detail"), str):
        made["detail"] = rejection["detail"]
    if kind is not None:
        made["kind"] = kind
    if isinstance(rejection.get("because"), str):
        made["because"] = rejection["because"]
    issues = rejection.get("errors")
    if isinstance(issues, list) and issues:
        made["errors"] = [dict(issue) for issue in issues if isinstance(issue, Mapping)]
    return made
