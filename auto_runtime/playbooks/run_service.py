"""Running definitions: `run_definition`, its run ids and retries, and the run reads.

A run that finishes within its request appends `run_started` before the type runs and its ending after, so a
run interrupted by a crash is `started` without waiting, and a request under its id runs it again ("Retrying
under a run id"). Every request under one run id is a message to that run's actor (`runs.StartRun`, handled
here with the run's writer), so a request under the id of a run still in progress waits for that run instead of
starting it twice, and a computation or reasoning run lives in its actor for its whole life. A cancel is a
message too (`runs.CancelRun`), handed to the type's runtime inside the run's actor.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from auto_runtime.functions.function_type import FunctionType, Rejected, RunRequest, Succeeded
from auto_runtime.json_limits import (
    MAX_INPUT_BYTES,
    MAX_INPUT_DEPTH,
    canonical_digest,
    depth_of,
    json_size,
    non_finite_pointer,
)
from auto_runtime.ledger import Ledger, PlaybookScope, uuid7
from auto_runtime.playbooks.cursors import decode_cursor, encode_cursor, foreign_cursor
from auto_runtime.playbooks.definition_registry import DefinitionRegistry, DefinitionVersion
from auto_runtime.problems import InputIssue, Rejection, conflict, invalid_input, not_found
from auto_runtime.runs import Loaded, RunHistory, RunWriter
from auto_runtime.runs.attempts import ATTEMPT_FACT, AnsweredAgain, AttemptStarted, Fact, Opening, StartRun
from auto_runtime.runs.cancels import CancelRun, ended_run_refusal
from auto_runtime.runs.facts import RUN_FAILED, RUN_REJECTED, RUN_SUCCEEDED, run_stream
from auto_runtime.runs.ids import canonical_run_id, is_run_id
from auto_runtime.runs.view import RunState, fold_run
from auto_runtime.telemetry import run_span

LIST_SCAN = 1000


def check_input_limits(value: Any) -> None:
    if depth_of(value) > MAX_INPUT_DEPTH:
        raise invalid_input([InputIssue(f"input: expected at most {MAX_INPUT_DEPTH} levels of nesting.", "/input")])
    not_finite = non_finite_pointer(value)
    if not_finite is not None:
        raise invalid_input([InputIssue("The input holds a number too large for a double.", "/input" + not_finite)])
    if json_size(value) > MAX_INPUT_BYTES:
        raise invalid_input([InputIssue(f"input: expected at most {MAX_INPUT_BYTES:,} bytes as JSON.", "/input")])


class WaitingRuns(Protocol):
    """Runs of a type that finish after their request (a workflow's, an interaction request's): the type's
    runtime records their start, moves them on and ends them; `RunService` keeps the run ids, the retry rules
    and the reads. A version whose saved document says `finishes_in_request: true` (an interaction function
    with `call`) runs within its request like any other type's. `runs_once`: a run of the type that ended
    without a final result is not attempted again under its id (a workflow's).

    Both methods are called inside the run's actor and record through its `writer`."""

    runs_once: bool

    async def start(
        self,
        writer: RunWriter,
        scope: PlaybookScope,
        definition: DefinitionVersion,
        value: Any,
        run_id: str,
        caller_id: str,
        metadata: Mapping[str, Any] | None,
    ) -> None:
        """Start a run under a new `run_id`; raise its rejection when it ended rejected within the request."""

    async def cancel(self, writer: RunWriter, scope: PlaybookScope, state: RunState, message: CancelRun) -> None:
        """Record the request to cancel a run still `started` (nothing when it was asked already)."""


def _same_moment() -> Exception:
    return conflict("Another request under this run id was made at the same moment; send it again.")


class RunService:
    def __init__(
        self,
        ledger: Ledger,
        definitions: DefinitionRegistry,
        types: Mapping[str, FunctionType],
        waiting: Mapping[str, WaitingRuns] | None = None,
    ) -> None:
        self.ledger = ledger
        self.definitions = definitions
        self.types = types
        self._waiting: dict[str, WaitingRuns] = dict(waiting or {})
        self._waits_when: dict[str, Callable[[Any], bool]] = {}
        self.runs = definitions.actors.runs
        """Every run's actor, hosted by its playbook's actor (`playbook_host`): run the playbook actors
        (`definitions.actors`, a child of the playbooks supervisor) before the first run."""
        self._new_waiting_run_id: Callable[[], str] = uuid7
        """The id of a new run that waits whose caller named none (`place_waiting_runs`)."""
        self._opening = Opening(self._answer_again, self._hands_over)
        self.runs.handlers.add(StartRun, self._start)
        self.runs.handlers.add(CancelRun, self._cancel)

    def serve_waiting(
        self, definition_type: str, runtime: WaitingRuns, when: Callable[[Any], bool] | None = None
    ) -> None:
        """Hand the runs of `definition_type` to `runtime` (a type whose runs wait: starts and cancels go to it);
        with `when`, only the runs whose input it accepts (a prediction function's builds wait, its questions
        finish within their request and go to the type's `run`).

        The one way to add a runtime after construction, for a runtime that itself needs this service (the
        workflow runtime starts its callees here); each type is served once."""
        if definition_type in self._waiting:
            raise ValueError(f"the {definition_type} runs are served already")
        self._waiting[definition_type] = runtime
        if when is not None:
            self._waits_when[definition_type] = when

    def place_waiting_runs(self, new_run_id: Callable[[], str]) -> None:
        """Pick the ids of the new runs that wait, when their caller names none, with `new_run_id` (the workflow
        runtime's: an id in a partition this server holds, so the partition's work for the run is done here). The
        runs that finish within their request take any new id: their partition does no work for them."""
        self._new_waiting_run_id = new_run_id

    def _waiting_runtime(self, definition_type: str, value: Any) -> WaitingRuns | None:
        """The runtime that serves a run of this type with this input, when its runs wait."""
        runtime = self._waiting.get(definition_type)
        when = self._waits_when.get(definition_type)
        return runtime if runtime is not None and (when is None or when(value)) else None

    def _hands_over(self, message: StartRun) -> bool:
        """Whether the type's runtime starts this run (its runs wait, and this version does not finish within its
        request)."""
        return self._waits(message.definition_type, message.value, message.definition)

    def _waits(self, definition_type: str, value: Any, definition: DefinitionVersion) -> bool:
        runtime = self._waiting_runtime(definition_type, value)
        return runtime is not None and definition.document.get("finishes_in_request") is not True

    def _new_run_id(self, definition_type: str, value: Any, definition: DefinitionVersion) -> str:
        """The id of a new run whose caller named none (see `place_waiting_runs`)."""
        return self._new_waiting_run_id() if self._waits(definition_type, value, definition) else uuid7()

    async def read_run(self, scope: PlaybookScope, run_id: str) -> RunState | None:
        return fold_run(run_id, await self.ledger.read_stream(run_stream(scope, run_id)))

    async def get_run(self, scope: PlaybookScope, run_id: str) -> dict[str, Any]:
        run_id = canonical_run_id(run_id)
        state = await self.read_run(scope, run_id) if is_run_id(run_id) else None
        if state is None:
            raise not_found(f"The playbook {scope.playbook} has no run {run_id}.")
        return state.shown(with_record=True)

    async def run_definition(
        self,
        scope: PlaybookScope,
        definition_type: str,
        name: str,
        value: Any,
        run_id: str | None,
        caller_id: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Run the latest version of a definition under `run_id`. `metadata` adds to (or replaces
        `correlation_id` and `causation_id` of) the metadata of the run's records: a workflow's callee
        carries its caller's tree (`correlation_id`), `called_by`, `call_depth` and its cause."""
        check_input_limits(value)
        definition = await self.definitions.latest(scope, definition_type, name)
        if definition.status == "retired":
            raise conflict(f"The {definition_type} definition {name} is retired, so it cannot run.")
        minted = not run_id
        run_id = canonical_run_id(run_id) if run_id else self._new_run_id(definition_type, value, definition)
        digest = canonical_digest(value)
        with run_span(scope.org, scope.playbook, definition_type, name, run_id, value) as span:
            message = StartRun(
                definition_type, name, value, digest, caller_id, definition, metadata, minted=minted, span=span
            )
            return await self.runs.ask(scope, run_id, message)

    async def _start(self, writer: RunWriter, message: StartRun) -> dict[str, Any]:
        """The run's actor's handler of a request under its id: under the request's span and request id."""

        async def run_under_id() -> dict[str, Any]:
            return await self._run_under_id(writer, message)

        return await message.span.carrying(run_under_id)()

    async def _run_under_id(self, writer: RunWriter, message: StartRun) -> dict[str, Any]:
        """The request's run, in the run's actor: answered from what is recorded, or started and run.

        A run id this server `minted` (a new UUIDv7) names no recorded run, so its first decision reads nothing
        and appends at version 0; should the stream exist after all, that append's clash makes the writer read
        it."""
        scope, run_id = writer.scope, writer.run_id
        first = Loaded(RunHistory(scope, run_id, ()), 0) if message.minted else None
        opened = await writer.write(self._opening, message, first=first, kept_moving=_same_moment)
        outcome = opened.reply
        if isinstance(outcome, AnsweredAgain):
            return outcome.shown
        if isinstance(outcome, AttemptStarted):
            return await self._attempt(writer, message, outcome, opened.appended[0].recorded_at)
        runtime = self._waiting_runtime(message.definition_type, message.value)
        assert runtime is not None
        await runtime.start(
            writer, scope, message.definition, message.value, run_id, message.caller_id, message.metadata
        )
        started = self._started_here(writer, opened.after)
        if started is None:  # not started through this writer (a forwarded start): read what its holder recorded
            started = await self.read_run(scope, run_id)
        assert started is not None
        return started.shown(with_record=False)

    @staticmethod
    def _started_here(writer: RunWriter, opened: Loaded[Any] | None) -> RunState | None:
        """The run as the type's runtime just recorded it through `writer`, without reading it back: known when the
        writer's stream grew past the records the request was opened on (its own appends, `known_records`)."""
        known = writer.known_records()
        if known is None or opened is None or not isinstance(opened.state, RunHistory):
            return None
        if len(known) <= len(opened.state.records):
            return None
        return fold_run(writer.run_id, known)

    async def cancel_run(
        self, scope: PlaybookScope, run_id: str, reason: str | None = None, caller_id: str = "runtime"
    ) -> dict[str, Any]:
        """Seeds, "Cancelling a run": a run of a type that waits, still `started`, is asked to stop and answered
        as it stands; every other run has ended, or ends within the request that started it."""
        run_id = canonical_run_id(run_id)
        state = await self.read_run(scope, run_id) if is_run_id(run_id) else None
        if state is None:
            raise not_found(f"The playbook {scope.playbook} has no run {run_id}.")
        if state.status != "started":
            raise ended_run_refusal(run_id, state.status)
        runtime = self._waiting_runtime(state.type, state.input)
        if runtime is None or not state.waits:
            raise conflict(
                f"The run {run_id} ends within the request that started it, so it cannot be cancelled from outside."
            )
        return await self.runs.ask(scope, run_id, CancelRun(reason, caller_id))

    async def _cancel(self, writer: RunWriter, message: CancelRun) -> dict[str, Any]:
        """The run's actor's handler of a cancel: the type's runtime records it; answered with the run as it
        stands."""
        scope, run_id = writer.scope, writer.run_id
        state = await self.read_run(scope, run_id)
        if state is None:
            raise not_found(f"The playbook {scope.playbook} has no run {run_id}.")
        runtime = self._waiting_runtime(state.type, state.input)
        if runtime is None:
            raise ended_run_refusal(run_id, state.status)
        await runtime.cancel(writer, scope, state, message)
        now = await self.read_run(scope, run_id)
        assert now is not None
        return now.shown(with_record=True)

    def _answer_again(self, state: RunState) -> dict[str, Any] | None:
        """What a request under the id of an earlier run answers, or None to run it again."""
        if state.status == "succeeded":
            return state.shown(with_record=False)
        if state.has_final_result:
            raise state.final_rejection()
        if state.status == "started" and state.waits:
            return state.shown(with_record=False)
        runtime = self._waiting_runtime(state.type, state.input)
        if runtime is not None and runtime.runs_once:
            raise conflict(
                f"The run {state.run_id} ended without a final result, and a {state.type} runs once for its id; "
                "start it under a new run id.",
                kind="unworkable",
            )
        if state.tools_called or (state.calls_tools and state.status == "started"):
            only_read = state.status != "started" and state.tools_called and state.only_read
            raise conflict(
                "This run may have called tools and has no final result, so it does not run again under its id; "
                + (
                    "every tool it called only reads, so nothing was changed. "
                    if only_read
                    else "read what it called with get_run_history and check its effects outside the playbook. "
                )
                + "Start a new run under a new run id.",
                kind="tools_called",
                because="only_read" if only_read else None,
            )
        return None

    async def _attempt(
        self, writer: RunWriter, message: StartRun, opened: AttemptStarted, started_at: Any
    ) -> dict[str, Any]:
        """Run the definition now that the attempt's `run_started` is recorded, recording what it reports and its
        ending through the run's writer, then answer the run as recorded (folded from the writer's kept history,
        not read back)."""
        scope, run_id = writer.scope, writer.run_id
        ending_metadata = opened.metadata
        definition = message.definition

        async def record_fact(fact_type: str, data: Mapping[str, Any]) -> None:
            await writer.write(ATTEMPT_FACT, Fact(fact_type, data, ending_metadata), kept_moving=_same_moment)

        try:
            document = await self.definitions.actors.documents.parsed(
                (scope.org, scope.playbook),
                message.definition_type,
                message.name,
                definition.version,
                definition.source,
            )
            request = RunRequest(
                org=scope.org,
                playbook=scope.playbook,
                run_id=run_id,
                definition_type=message.definition_type,
                name=message.name,
                version=definition.version,
                source=definition.source,
                input=message.value,
                started_at=started_at,
                caller_id=message.caller_id,
                record=record_fact,
                document=document,
            )
            ending = await self.types[message.definition_type].run(request)
        except Exception as error:
            reference = f"urn:uuid:{uuid.uuid4()}"
            failed = {"reason": "internal", "detail": "The run failed inside the server.", "instance": reference}
            await writer.write(ATTEMPT_FACT, Fact(RUN_FAILED, failed, ending_metadata), kept_moving=_same_moment)
            raise Rejection("internal", "Something went wrong inside the server.", instance=reference) from error
        if isinstance(ending, Succeeded):
            data: dict[str, Any] = {"output": ending.output, "record": dict(ending.record)}
            if ending.output_shape is not None:
                data["output_shape"] = ending.output_shape
            fact = Fact(RUN_SUCCEEDED, data, ending_metadata)
        else:
            assert isinstance(ending, Rejected)
            rejected = ending.rejection.as_record()
            if ending.record is not None:
                rejected["record"] = dict(ending.record)
            fact = Fact(RUN_REJECTED, rejected, ending_metadata)
        written = await writer.write(ATTEMPT_FACT, fact, kept_moving=_same_moment)
        if isinstance(ending, Rejected):
            raise ending.rejection
        assert written.after is not None
        state = fold_run(run_id, written.after.state.records)
        assert state is not None
        return state.shown(with_record=False)

    async def list_runs(
        self,
        scope: PlaybookScope,
        *,
        definition_type: str | None,
        name: str | None,
        status: str | None,
        limit: int,
        cursor: str | None,
    ) -> dict[str, Any]:
        after = _position_after(decode_cursor(cursor, scope, "runs")) if cursor else None
        filtered = definition_type is not None or name is not None or status is not None
        rows = await self.ledger.queries.runs.newest_first(
            scope.org, scope.playbook, after, LIST_SCAN if filtered else limit + 1
        )
        chosen: list[dict[str, Any]] = []
        last_looked: tuple[int, str] | None = None
        more = False
        for index, row in enumerate(rows):
            if len(chosen) == limit:
                more = True
                break
            last_looked = (int(row["first_started_us"]), str(row["run_id"]))
            if (
                (definition_type is None or row["type"] == definition_type)
                and (name is None or row["name"] == name)
                and (status is None or row["status"] == status)
            ):
                chosen.append(row)
            if filtered and index == len(rows) - 1 and len(rows) == LIST_SCAN:
                more = True
        next_cursor = (
            encode_cursor(scope, "runs", {"t": last_looked[0], "i": last_looked[1]})
            if more and last_looked is not None
            else None
        )
        return {
            "runs": [_listed(row) for row in chosen],
            "has_more": next_cursor is not None,
            "next_cursor": next_cursor,
        }


def _listed(row: Mapping[str, Any]) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "run_id": row["run_id"],
        "type": row["type"],
        "name": row["name"],
        "definition_version": row["version"],
        "status": row["status"],
        "started_at": row["first_started_at"],
        "started_by": row["started_by"],
    }
    if row["ended_at"] is not None:
        shown["ended_at"] = row["ended_at"]
    if row["output_shape"] is not None and row["status"] == "succeeded":
        shown["output_shape"] = row["output_shape"]
    ending = row["ending"]
    if isinstance(ending, str):
        ending = json.loads(ending)
    if row["status"] == "rejected" and ending:
        shown["rejection"] = ending
    return shown


def _position_after(position: dict[str, Any]) -> tuple[int, str]:
    started, run_id = position.get("t"), position.get("i")
    if not isinstance(started, int) or not isinstance(run_id, str):
        raise foreign_cursor()
    return started, run_id
