"""Calls kept in the due-work table until they are dispatched: the host's outbox.

The input that makes a `StartCall` to a function that finishes within its request arms, in the same
append, a due-work entry `call:<callee run id>` due at once, whose payload is the call. The timer loop
hands such entries to the `CallDispatcher` and marks them fired after the caller took the answer, so a
crash between the caller's append and the dispatch loses no call (the entry is still armed), and a
second dispatch runs nothing twice (idempotent by the callee's run id). A `CancelCall` cancels the entry:
a call not dispatched yet never starts. Calls to workflows finish later and are not kept here.
"""

from __future__ import annotations

from typing import Any

from auto_runtime.functions.workflow.engine.model import StartCall

CALL_KEY_PREFIX = "call:"
LATER_TYPES = frozenset({"workflow"})
"""Definition types whose runs finish after their request; their calls are not dispatched by this host."""


def in_request(definition_type: str) -> bool:
    """Whether a run of this type finishes within the request that starts it."""
    return definition_type not in LATER_TYPES


def call_key(callee_run_id: str) -> str:
    return CALL_KEY_PREFIX + callee_run_id


def is_call_key(key: str) -> bool:
    return key.startswith(CALL_KEY_PREFIX)


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
    if not isinstance(payload, dict):
        raise TypeError("an outbox entry's payload is the call's fields")
    try:
        return StartCall(
            key=str(payload["key"]),
            run_id=str(payload["run_id"]),
            definition_type=str(payload["definition_type"]),
            name=str(payload["name"]),
            input=payload.get("input"),
            reference=str(payload["reference"]),
            run=int(payload["run"]),
            cause_id=str(payload["cause_id"]),
        )
    except KeyError as missing:
        raise ValueError(f"an outbox entry's payload misses {missing}") from None
