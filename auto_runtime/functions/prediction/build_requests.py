"""A build's request as the inbox shows and answers it (prediction-format §8.5; settled point 16): the interface
`list_interactions` and `answer_interaction` call for prediction builds.

- `open_requests(scope)` lists the playbook's open build requests, newest first, each with the fields of
  `list_interactions`' items (`type: prediction`, the function and its document version, the trainer's
  rendered `to`, `delivery: null` for the inbox, the message, `takes_answer: true`, the answer schema, when it
  was asked and expires, no attempts, conversation or answerer, and `standing: in_inbox`).
- `answer(scope, run_id, answer, claimed_for, caller_id)` checks an answer in the order of §8.5 and records
  `request_answered`, arming the build's scoring at once (due work `prediction-build/score`, carried out by the
  lease holder); it answers the fact as `answer_interaction` returns it. Call it only for a run that
  `is_build` says is a build.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, Final

from auto_runtime.functions.prediction.brief import request_message
from auto_runtime.functions.prediction.build_facts import (
    ANSWER_SCHEMA,
    MAX_CANDIDATES,
    REQUEST_ANSWERED,
    SCORE_KEY,
    BuildState,
)
from auto_runtime.functions.prediction.builds import Builds
from auto_runtime.ledger import NewRecord, PlaybookScope, Record, StreamWrite, VersionConflict
from auto_runtime.ledger.due_work import DueEntry, DueWorkChanges
from auto_runtime.playbooks.clock import iso_utc
from auto_runtime.playbooks.run_facts import run_stream
from auto_runtime.playbooks.run_ids import is_run_id
from auto_runtime.problems import InputIssue, conflict, invalid_input, not_found

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


class BuildRequests:
    """See the module."""

    def __init__(self, builds: Builds) -> None:
        self.builds = builds
        self.ledger = builds.ledger

    async def is_build(self, scope: PlaybookScope, run_id: str) -> bool:
        state = await self.builds.state(scope, run_id) if is_run_id(run_id) else None
        return state is not None and state.is_build

    async def open_requests(self, scope: PlaybookScope) -> list[dict[str, Any]]:
        rows = await self.ledger.fetch(
            "SELECT run_id FROM runs WHERE org = ? AND playbook = ? AND type = ? AND status = ? AND waits = 1 "
            "ORDER BY first_started_us DESC, run_id DESC",
            (scope.org, scope.playbook, "prediction", "started"),
        )
        requests = []
        for row in rows:
            state = await self.builds.state(scope, str(row["run_id"]))
            if state is not None and state.is_build and state.open:
                requests.append(self._shown(scope, state))
        return requests

    def _shown(self, scope: PlaybookScope, state: BuildState) -> dict[str, Any]:
        assert state.asked is not None
        return {
            "run_id": state.run_id,
            "type": "prediction",
            "function": state.name,
            "version": state.version,
            "to": state.asked["to"],
            "delivery": state.asked["delivery"],
            "message": request_message(scope.org, scope.playbook, state.run_id, state.name),
            "takes_answer": True,
            "answer_schema": ANSWER_SCHEMA,
            "requested_at": state.asked_at,
            "expires_at": state.asked["expires_at"],
            "attempts": [],
            "conversation": None,
            "answerer": None,
            "reply_refusals": 0,
            "standing": "in_inbox",
        }

    async def answer(
        self, scope: PlaybookScope, run_id: str, answer: Any, claimed_for: str | None, caller_id: str
    ) -> dict[str, Any]:
        for _ in range(4):
            state = await self.builds.state(scope, run_id) if is_run_id(run_id) else None
            if state is None or not state.is_build:
                raise not_found(f"The playbook {scope.playbook} has no build {run_id}.")
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
