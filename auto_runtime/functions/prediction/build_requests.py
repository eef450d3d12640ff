"""A build's request as the inbox shows and answers it (prediction-format §8.5; settled point 16).

- `BUILD_REQUEST_SOURCE` opens a row of the inbox's `open_requests` projection from each `build_asked`, with the
  fields of `list_interactions`' items (`type: prediction`, the function and its document version, the
  trainer's rendered `to`, its `delivery` (`{ server, tool }`, or `null` for the inbox), the message,
  `takes_answer: true`, the answer schema, when it was asked and expires, no conversation or answerer, and
  `standing: to_deliver` or `in_inbox`); the delivery facts change its `attempts` and `standing` as they do an
  interaction request's, and the projection closes it when the answer is recorded or the build ends.
- The same source gives the interaction host's delivery attempts the request (`build_request`): the trainer's
  `deliver` as `build_asked` recorded it, the rendered `to`, the message, the answer schema, and the input its
  templates read, `{ function, run_id }` (§8.1 step 4).
- `BuildRequests.answer(scope, run_id, answer, claimed_for, caller_id)` is what `answer_interaction` hands a
  prediction function's run to (`InteractionRuntime.answer_for`): it checks an answer in the order of §8.5 and
  records `request_answered`, arming the build's scoring at once (due work `prediction-build/score`, carried
  out by the lease holder); it answers the fact as `answer_interaction` returns it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, Final

from auto_runtime.clock_text import iso_utc, microseconds_since_epoch
from auto_runtime.functions.interaction.request_sources import DELIVERY_CHANGES, RequestSource
from auto_runtime.functions.prediction.brief import request_message
from auto_runtime.functions.prediction.build_facts import (
    ANSWER_SCHEMA,
    BUILD_ASKED,
    MAX_CANDIDATES,
    REQUEST_ANSWERED,
    SCORE_KEY,
)
from auto_runtime.functions.prediction.builds import Builds
from auto_runtime.ledger import NewRecord, PlaybookScope, Record, Row, StreamWrite, VersionConflict
from auto_runtime.ledger.due_work import DueEntry, DueWorkChanges
from auto_runtime.problems import InputIssue, conflict, invalid_input, not_found
from auto_runtime.runs.facts import run_stream
from auto_runtime.runs.ids import is_run_id

MAX_ANSWER_BYTES: Final = 65_536
DIGEST_CHARACTERS: Final = frozenset("0123456789abcdef")


def _fact(record: Record, run_id: str) -> dict[str, Any]:
    fact: dict[str, Any] = {
        "run_id": run_id,
        "answer_id": record.id,
        "answer": record.data["answer"],
    }
    if record.data.get("claimed_for") is not None:
        fact["claimed_for"] = record.data["claimed_for"]
    fact["answered_by"] = record.metadata.get("by", "")
    fact["answered_at"] = iso_utc(record.recorded_at)
    return fact


def schema_issues(answer: Any) -> list[InputIssue]:
    """The answer's problems against `ANSWER_SCHEMA`, under `/answer`."""
    if not isinstance(answer, dict):
        return [InputIssue("answer: expected an object { candidates }.", "/answer")]
    issues = [
        InputIssue(f"answer: {key} is not a field of a build's answer; it takes only candidates.", f"/answer/{key}")
        for key in answer
        if key != "candidates"
    ]
    candidates = answer.get("candidates")
    if "candidates" not in answer:
        issues.append(InputIssue("answer: candidates is required.", "/answer"))
    elif not isinstance(candidates, list):
        issues.append(InputIssue("candidates: expected an array of SHA-256 digests.", "/answer/candidates"))
    else:
        if len(candidates) > MAX_CANDIDATES:
            issues.append(InputIssue(f"candidates: at most {MAX_CANDIDATES} items.", "/answer/candidates"))
        for index, item in enumerate(candidates):
            if not isinstance(item, str) or len(item) != 64 or not set(item) <= DIGEST_CHARACTERS:
                issues.append(
                    InputIssue("candidates: expected 64 lowercase hex digits.", f"/answer/candidates/{index}")
                )
        hashable = [item for item in candidates if isinstance(item, str)]
        if len(set(hashable)) != len(hashable):
            issues.append(InputIssue("candidates: each candidate once (uniqueItems).", "/answer/candidates"))
    return issues


def _build_of(record: Record) -> tuple[str, str, str, str]:
    """The org, playbook, run id and function name of a build's `build_asked`."""
    _, org, playbook, _, run_id = record.stream.split("/")
    definition = record.metadata.get("definition", {})
    return org, playbook, run_id, str(definition.get("name", ""))


def build_request_row(record: Record) -> Row:
    """The `open_requests` row of a build's request, from its `build_asked`."""
    org, playbook, run_id, name = _build_of(record)
    delivery = record.data.get("delivery")
    return {
        "type": "prediction",
        "function": name,
        "version": record.metadata.get("definition", {}).get("version"),
        "to_party": record.data.get("to"),
        "delivery": delivery,
        "message": request_message(org, playbook, run_id, name),
        "takes_answer": 1,
        "answer_schema": ANSWER_SCHEMA,
        "requested_at": iso_utc(record.recorded_at),
        "requested_us": microseconds_since_epoch(record.recorded_at),
        "expires_at": record.data.get("expires_at"),
        "attempts": 0,
        "conversation": None,
        "answerer": None,
        "reply_refusals": 0,
        "standing": "to_deliver" if delivery is not None else "in_inbox",
    }


def build_request(record: Record) -> dict[str, Any]:
    """A build's request as its delivery attempts read it (§8.5): `deliver.with` reads the build's `message`,
    `answer_schema`, `run_id` and `function`, and `input` is `{ function, run_id }` as at its start."""
    org, playbook, run_id, name = _build_of(record)
    request: dict[str, Any] = {
        "to": record.data.get("to"),
        "message": request_message(org, playbook, run_id, name),
        "takes_answer": True,
        "answer_schema": ANSWER_SCHEMA,
        "requested_at": iso_utc(record.recorded_at),
        "expires_at": record.data.get("expires_at"),
        "input": {"function": name, "run_id": run_id},
    }
    if record.data.get("deliver") is not None:
        request["deliver"] = record.data["deliver"]
    return request


BUILD_REQUEST_SOURCE = RequestSource(BUILD_ASKED, build_request_row, DELIVERY_CHANGES, build_request)
"""A build's request in the inbox and on its way to the trainer: opened by `build_asked` (settled point 16)."""


class BuildRequests:
    """See the module."""

    def __init__(self, builds: Builds) -> None:
        self.builds = builds
        self.ledger = builds.ledger

    async def is_build(self, scope: PlaybookScope, run_id: str) -> bool:
        state = await self.builds.state(scope, run_id) if is_run_id(run_id) else None
        return state is not None and state.is_build

    async def answer(
        self, scope: PlaybookScope, run_id: str, answer: Any, claimed_for: str | None, caller_id: str
    ) -> dict[str, Any]:
        for _ in range(4):
            state = await self.builds.state(scope, run_id) if is_run_id(run_id) else None
            if state is None:
                raise not_found(f"The playbook {scope.playbook} has no run {run_id}.")
            if not state.is_build:
                raise conflict(f"The run {run_id} is a question to a prediction function, which takes no answer.")
            if state.answer is not None:
                if json.dumps(state.answer["answer"], sort_keys=True) == json.dumps(answer, sort_keys=True):
                    return await self._recorded_fact(scope, run_id)
                raise conflict(f"The build {run_id} took another answer already.")
            if state.took_answer_or_ended or state.asked is None:
                raise conflict(f"The build {run_id} has ended or was asked to cancel, so it takes no answer.")
            issues = schema_issues(answer)
            if issues:
                raise invalid_input(issues)
            unknown = [
                InputIssue(
                    f"candidates: {candidate} was not accepted by this build (never uploaded to it, or refused).",
                    f"/answer/candidates/{index}",
                )
                for index, candidate in enumerate(answer["candidates"])
                if candidate not in state.accepted
            ]
            if unknown:
                raise invalid_input(unknown)
            data: dict[str, Any] = {"answer": answer}
            if claimed_for is not None:
                data["claimed_for"] = claimed_for
            metadata = {**state.started_metadata, "by": caller_id, "causation_id": None}
            due = DueEntry(scope, run_id, SCORE_KEY, datetime.now(UTC), {"run_id": run_id})
            try:
                (recorded,) = await self.ledger.append(
                    [
                        StreamWrite(
                            run_stream(scope, run_id),
                            state.stream_version,
                            [NewRecord(REQUEST_ANSWERED, data, metadata)],
                        )
                    ],
                    due_work=DueWorkChanges(arm=[due]),
                )
            except VersionConflict:
                continue
            return _fact(recorded, run_id)
        raise conflict("The build changed at the same moment; send the answer again.")

    async def _recorded_fact(self, scope: PlaybookScope, run_id: str) -> dict[str, Any]:
        for record in await self.ledger.read_stream(run_stream(scope, run_id)):
            if record.type == REQUEST_ANSWERED:
                return _fact(record, run_id)
        raise conflict(f"The build {run_id} has no answer.")
