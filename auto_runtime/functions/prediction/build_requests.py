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
  out by the lease holder); it answers the fact as `answer_interaction` returns it. It is a sender: the answer
  is decided and recorded in the build's run actor (`AnswerBuild`, `decisions.decide_answer`), so it must not
  be called from inside that actor.
"""

from __future__ import annotations

from typing import Any, Final

from auto_runtime.clock_text import iso_utc, microseconds_since_epoch
from auto_runtime.functions.interaction.request_sources import DELIVERY_CHANGES, RequestSource
from auto_runtime.functions.prediction.brief import request_message
from auto_runtime.functions.prediction.build_facts import ANSWER_SCHEMA, BUILD_ASKED
from auto_runtime.functions.prediction.builds import Builds
from auto_runtime.ledger import PlaybookScope, Record, Row
from auto_runtime.problems import not_found
from auto_runtime.runs import Runs
from auto_runtime.runs.ids import is_run_id
from auto_runtime.runs.prediction_messages import AnswerBuild

MAX_ANSWER_BYTES: Final = 65_536


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

    def __init__(self, builds: Builds, runs: Runs) -> None:
        self.builds = builds
        self.runs = runs
        self.ledger = builds.ledger

    async def is_build(self, scope: PlaybookScope, run_id: str) -> bool:
        state = await self.builds.state(scope, run_id) if is_run_id(run_id) else None
        return state is not None and state.is_build

    async def answer(
        self, scope: PlaybookScope, run_id: str, answer: Any, claimed_for: str | None, caller_id: str
    ) -> dict[str, Any]:
        if not is_run_id(run_id):
            raise not_found(f"The playbook {scope.playbook} has no run {run_id}.")
        return await self.runs.ask(scope, run_id, AnswerBuild(answer, claimed_for, caller_id, self.builds.clock()))
