"""The host's outbox: side effects kept in the due-work table, armed in the append that decided them.

Every side effect of an applied input that reaches beyond the run's own stream is armed as a due-work entry in
the same append as the input's facts, due at once, and carried out by the timer loop after the commit. A crash
between the append and the effect loses nothing (the entry is still armed and fires at the next sweep), and
carrying an effect out twice changes nothing (each is idempotent by its key). The keys:

- `call:<callee run id>` on the caller's run: start the callee (`StartCall`). A call to a function that
  finishes within its request is answered at once; a call to a workflow starts the child run, whose ending
  answers later. A `CancelCall` cancels the entry, so a call not dispatched yet never starts.
- `answer:<callee run id>` on the caller's run: a callee workflow ended; apply its ending to the caller as
  `CallAnswered`. Armed in the callee's ending append, so the answer is as durable as the ending.
- `cancel:<run id>` on the run to cancel: apply `CancelRequested` (a `cancel_run` request, kind `requested`,
  or a caller that stopped waiting for a callee workflow, `parent_ended` or `deadline`).
Any other key (`wait`, `retry`, `timeout`, … from the engine's `ArmTimer`) is a timer of the run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from auto_runtime.functions.workflow.engine.model import CallAnswered, CancelRequested, StartCall

CALL_KEY_PREFIX = "call:"
ANSWER_KEY_PREFIX = "answer:"
CANCEL_KEY_PREFIX = "cancel:"
LATER_TYPES = frozenset({"workflow", "interaction"})
"""Definition types whose runs may finish after their request: the answer comes from the callee's own ending (an
interaction function's request; its `call` finishes within the request, `answered_later`)."""
INTERACTION_CANCEL_KEY = "interaction:cancel"
"""The key the interaction runtime ends a cancelled request by (`interaction_host.interaction_runtime`)."""


def in_request(definition_type: str) -> bool:
    """Whether a run of this type finishes within the request that starts it."""
    return definition_type not in LATER_TYPES


def answered_later(definition_type: str, shown: Mapping[str, Any]) -> bool:
    """Whether a call whose callee `run_definition` answered `shown` waits for the callee's ending: a workflow
    always (its ending arms the answer), an interaction function while its run is `started` (a request)."""
    if definition_type == "workflow":
        return True
    return not in_request(definition_type) and shown.get("status") == "started"


def callee_cancel_key(definition_type: str, callee_run_id: str) -> str:
    """The due-work key that cancels a callee that finishes later: a workflow's `cancel:`, an interaction
    request's `interaction:cancel`."""
    return INTERACTION_CANCEL_KEY if definition_type == "interaction" else cancel_key(callee_run_id)


def call_key(callee_run_id: str) -> str:
    return CALL_KEY_PREFIX + callee_run_id


def answer_key(callee_run_id: str) -> str:
    return ANSWER_KEY_PREFIX + callee_run_id


def cancel_key(run_id: str) -> str:
    return CANCEL_KEY_PREFIX + run_id


def is_call_key(key: str) -> bool:
    return key.startswith(CALL_KEY_PREFIX)


def is_answer_key(key: str) -> bool:
    return key.startswith(ANSWER_KEY_PREFIX)


def is_cancel_key(key: str) -> bool:
    return key.startswith(CANCEL_KEY_PREFIX)


def caller_call_key(called_by: Mapping[str, Any]) -> str:
    """The engine's key of the call that started a callee, from the callee's `called_by` metadata."""
    return json.dumps(
        [called_by["run_id"], called_by["reference"], called_by["run"]], separators=(",", ":"), ensure_ascii=False
    )


def call_payload(call: StartCall) -> dict[str, Any]:
    return {
        "key": call.key,
        "run_id": call.run_id,
        "definition_type": call.definition_type,
        "name": call.name,
        "input": call.input,
        "reference": call.reference,
        "run": call.run,
        "cause_id": call.cause_id,
    }


def call_of(payload: Any) -> StartCall:
    """The call an outbox entry keeps; `TypeError` or `ValueError` for a payload `call_payload` did not write."""
    fields = _fields(payload)
    try:
        return StartCall(
            key=str(fields["key"]),
            run_id=str(fields["run_id"]),
            definition_type=str(fields["definition_type"]),
            name=str(fields["name"]),
            input=fields.get("input"),
            reference=str(fields["reference"]),
            run=int(fields["run"]),
            cause_id=str(fields["cause_id"]),
        )
    except KeyError as missing:
        raise ValueError(f"an outbox entry's payload misses {missing}") from None


def answer_payload(call_key_text: str, status: str, output: Any, rejection: Mapping[str, Any] | None) -> dict[str, Any]:
    payload: dict[str, Any] = {"key": call_key_text, "status": status}
    if status == "succeeded":
        payload["output"] = output
    if rejection is not None:
        payload["rejection"] = dict(rejection)
    return payload


def answer_of(payload: Any, input_id: str, at: int) -> CallAnswered:
    fields = _fields(payload)
    rejection = fields.get("rejection")
    incident = fields.get("incident")
    return CallAnswered(
        input_id,
        at,
        str(fields["key"]),
        str(fields["status"]),
        output=fields.get("output"),
        rejection=rejection if isinstance(rejection, dict) else None,
        incident=incident if isinstance(incident, str) else None,
    )


def cancel_payload(kind: str, by: str, record_id: str, reason: str | None = None) -> dict[str, Any]:
    payload: dict[str, Any] = {"kind": kind, "by": by, "record_id": record_id}
    if reason is not None:
        payload["reason"] = reason
    return payload


def cancel_of(payload: Any, input_id: str, at: int) -> CancelRequested:
    fields = _fields(payload)
    reason = fields.get("reason")
    return CancelRequested(
        input_id,
        at,
        str(fields["record_id"]),
        str(fields["by"]),
        kind=str(fields.get("kind", "requested")),
        reason=reason if isinstance(reason, str) else None,
    )


def _fields(payload: Any) -> dict[str, Any]:
    if not isinstance(payload, dict):
        raise TypeError("an outbox entry's payload is a mapping of its fields")
    return payload
