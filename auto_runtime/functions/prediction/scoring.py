"""Scoring an answered build (prediction-format §8.7–§8.8, §9 activation): the due entry `prediction-build/score`
that `request_answered` arms, carried out by the holder of the partition of `org/playbook` (issue 33: the entry
is in the pseudo-run `score_run_id`, no UUID, so it goes with the playbook's partition; an entry an earlier
release armed in the build's run goes with the run's and is scored the same).

The scored facts are an input of the build's run, so they are recorded under the fence of the run's partition:
by the run's actor here when this server holds that partition too, else handed to its holder as the entry
`prediction-build/record-scores` in the build's run (its payload the facts), armed in the same write that marks
the score entry fired, under the playbook partition's fence; that holder's firing of it sends the facts to the
run's actor as the scoring here would have (`ScoreBuild`), so the build is decided on as it then stands.

A cancelled build is ended here too: `cancel_run` records `run_cancel_requested` with the due entry
`prediction-build/cancel` (`Builds.cancel`, on whichever server took it, answering the run still `started`), and
its firing records `build_ended` (`cancelled`, `because` the cancel's kind) and the run's end (`rejected`,
`cancelled`), by the cancel's caller, caused by the request. A build queued or scored meanwhile stops at once:
while it scores, a watcher follows the build's stream, woken by the ledger's append signal (every commit of this
process and, on PostgreSQL, of every server sharing the ledger), and once the stream holds a cancel or an ending
it cancels the scoring, which ends the model process running the candidate (the pool replaces it, as it does a
process that dies or overruns). Its `score` entry is then marked fired, nothing recorded.

The build holds one model process available to builds (queued until one is), and scores its candidates one at a
time in answer order, each loaded afresh, on every backtest row in batches of at most `BATCH_ROWS`, within
`CANDIDATE_SECONDS` each. A candidate that raised, ran out of time or memory, or answered a value that is not
finite or outside its interval is disqualified without scores; the others record `candidate_scored` and must
pass `not_better`, `coverage_short` and `intervals_worse`, in that order. The lowest MASE wins (then the lower
MSIS, then the candidate named earlier) and becomes the function's next version: `version_built`, then
`version_activated` with `none_active` when no fit version is active, or `no_shadow` with `shadow.periods: 0`,
unless `approve` is named (the version then awaits approval); otherwise the version is left `shadowing`, and
the same append arms its shadow work (`shadow`), or, awaiting approval, the approving run (`approval`). Then
`build_ended` and the run's end, all in one append that also marks the due entry fired. What the runtime
records here is by `playbook:<id>`. The append that ends a build, whichever way, arms `prediction-build/discard`
due at once: its firing discards the build's staged candidates (§13: staged until it ends; the winner was kept as
playbook content before) and only then is marked fired, so a discard that fails is carried out again.

The due handler is a sender: it scores outside the build's run actor (a cancel must reach the actor while a
build is scored), then sends the ending its entry asks (`ScoreBuild`, `ExpireBuild`, `EndBuildPastDeadline`,
`EndCancelledBuild`), which the actor decides on the build as it then stands (`decisions.decide_ending`) and
records with the entry marked fired, under the lease's fence.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable
from typing import Any, Final

import numpy as np
import trio

from auto_runtime.functions.prediction.approval import approval_entry
from auto_runtime.functions.prediction.build_facts import (
    BUILD_ENDED,
    CANCEL_KEY,
    DEADLINE_KEY,
    DISCARD_KEY,
    EXPIRE_KEY,
    RECORD_SCORES_KEY,
    SCORE_KEY,
    BuildState,
    candidate_key,
)
from auto_runtime.functions.prediction.builds import Builds
from auto_runtime.functions.prediction.cache_folder import CacheFolder
from auto_runtime.functions.prediction.candidates import tensor
from auto_runtime.functions.prediction.datasets import Datasets
from auto_runtime.functions.prediction.decisions import not_built
from auto_runtime.functions.prediction.document import PredictionDocument
from auto_runtime.functions.prediction.model_pool import ModelJobFailed, ModelPool
from auto_runtime.functions.prediction.model_work import ModelWork, job_owner
from auto_runtime.functions.prediction.shadow import shadow_entry
from auto_runtime.functions.prediction.versions import VERSION_ACTIVATED, VERSION_BUILT
from auto_runtime.functions.prediction.walk import (
    Point,
    Scores,
    WalkedSeries,
    backtest_points,
    baseline_forecasts,
    scores,
    walk,
)
from auto_runtime.ledger import DueWorkChanges, Fences, LeaseLost, NewRecord, PlaybookScope
from auto_runtime.ledger.due_work import DueEntry
from auto_runtime.ledger.lease import LeaseFence
from auto_runtime.problems import conflict
from auto_runtime.runs import Runs
from auto_runtime.runs.facts import RUN_REJECTED, RUN_SUCCEEDED, run_stream
from auto_runtime.runs.prediction_messages import (
    BuildEnding,
    EndBuildPastDeadline,
    EndCancelledBuild,
    ExpireBuild,
    ScoreBuild,
)

BATCH_ROWS: Final = 4096
CANDIDATE_SECONDS: Final = 120.0
CANDIDATE_SCORED: Final = "candidate_scored"
CANDIDATE_DISQUALIFIED: Final = "candidate_disqualified"


ENDINGS: Final[dict[str, Callable[[DueEntry, LeaseFence], BuildEnding]]] = {
    EXPIRE_KEY: ExpireBuild,
    DEADLINE_KEY: EndBuildPastDeadline,
    CANCEL_KEY: EndCancelledBuild,
}
"""The ending each of the build's other due entries sends its run's actor."""


class Disqualified(Exception):
    def __init__(self, because: str) -> None:
        super().__init__(because)
        self.because = because


def _floats(reply: dict[str, Any], name: str) -> np.ndarray[Any, Any]:
    output = reply["outputs"][name]
    return np.frombuffer(base64.b64decode(output["data"]), dtype="<f4").reshape(output["shape"])


def build_run_of(entry: DueEntry) -> str:
    """The build run a `prediction-build/` entry is for: its payload's `run_id` (the score entry's pseudo-run is
    not the build's), else its own run id."""
    payload = entry.payload
    named = payload.get("run_id") if isinstance(payload, dict) else None
    return named if isinstance(named, str) else entry.run_id


def _facts(records: list[NewRecord]) -> list[dict[str, Any]]:
    return [{"type": r.type, "data": r.data, "metadata": dict(r.metadata), "id": r.id} for r in records]


def _records(facts: list[dict[str, Any]]) -> list[NewRecord]:
    return [NewRecord(str(f["type"]), f["data"], f["metadata"], str(f["id"])) for f in facts]


class Scoring(ModelWork):
    """See the module. `fire` is the due handler of `prediction-build/`. `fences` says which build runs' partitions
    this server holds (None: every one, under the fence an entry is fired with)."""

    def __init__(
        self,
        builds: Builds,
        datasets: Datasets,
        pool: ModelPool,
        cache: CacheFolder,
        runs: Runs,
        fences: Fences | None = None,
    ) -> None:
        super().__init__(builds, datasets, pool, cache)
        self.runs = runs
        self.fences = fences

    async def fire(self, entry: DueEntry, fence: LeaseFence) -> None:
        """Scores an answered build (`SCORE_KEY`), records the facts another server scored (`RECORD_SCORES_KEY`),
        or ends one that its trainer left unanswered (`EXPIRE_KEY`), that passed its deadline while queued or
        scoring (`DEADLINE_KEY`) or that was asked to cancel (`CANCEL_KEY`); a build that moved on since is left as
        it is. The entry is marked fired in the append that ends the build, or alone (or, handed over, in the write
        that arms `RECORD_SCORES_KEY`). A stream that moved while the build was scored (a delivery attempt ending)
        is read again by the build's actor and the same facts appended after it, unless the build ended or was
        asked to cancel meanwhile. An ended build's `DISCARD_KEY` discards its staged candidates, then is marked
        fired."""
        scope = entry.scope
        assert isinstance(scope, PlaybookScope)
        run_id = build_run_of(entry)
        if entry.key == DISCARD_KEY:
            await self.ledger.content.discard(candidate_key(scope, run_id))
            await self.ledger.due_work.mark_fired([entry.due_key], fence=fence)
            return
        state = await self.builds.state(scope, run_id)
        ending: BuildEnding | None = None
        if state is not None and entry.key == SCORE_KEY and _going_on(state) and state.answer is not None:
            scored = await self._scored_unless_stopped(scope, state)
            if scored is not None:
                await self._record(scope, state, scored, entry, fence)
                return
        elif state is not None and entry.key == RECORD_SCORES_KEY:
            scored = _records(list(entry.payload["scored"]))
            ending = ScoreBuild(tuple(scored), tuple(_armed(scope, state, scored)), entry, fence)
        elif state is not None and entry.key in ENDINGS:
            ending = ENDINGS[entry.key](entry, fence)
        await self._end(scope, run_id, ending, entry, fence)

    async def _end(
        self, scope: PlaybookScope, run_id: str, ending: BuildEnding | None, fired: DueEntry, fence: LeaseFence
    ) -> None:
        """Sends the build's actor `ending`; when it records nothing, `fired` is marked fired alone (the ending's
        append marks it, and arms the discard, when it records)."""
        if ending is None or not await self.runs.ask(scope, run_id, ending):
            await self.ledger.due_work.mark_fired([fired.due_key], fence=fence)

    async def _record(
        self, scope: PlaybookScope, state: BuildState, scored: list[NewRecord], fired: DueEntry, fence: LeaseFence
    ) -> None:
        """The scored facts recorded on the build under its run's partition's fence: here when this server holds
        it (and still does), else handed to its holder (see the module)."""
        run_fence = fence if self.fences is None else self.fences.of_key(state.run_id)
        if run_fence is not None:
            ending = ScoreBuild(tuple(scored), tuple(_armed(scope, state, scored)), fired, run_fence)
            try:
                await self._end(scope, state.run_id, ending, fired, run_fence)
                return
            except LeaseLost as lost:
                if run_fence == fence or lost.name != run_fence.name:
                    raise
        handed = DueEntry(scope, state.run_id, RECORD_SCORES_KEY, fired.due_at, {"scored": _facts(scored)})
        await self.ledger.due_work.change(DueWorkChanges(arm=[handed], fire=[fired.due_key]), fence=fence)

    async def _scored_unless_stopped(self, scope: PlaybookScope, state: BuildState) -> list[NewRecord] | None:
        """The build's scoring facts, or None when it was cancelled or ended while queued or scored: a watcher
        cancels the scoring at once then, which ends the model process of the candidate being scored. A failure
        leaves as itself, not in an exception group, so the timer loop meets the ledger's own errors."""
        scored: list[NewRecord] | None = None
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._watch, scope, state.run_id, nursery.cancel_scope)
                scored = await self._score(scope, state)
                nursery.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise
        return scored

    async def _watch(self, scope: PlaybookScope, run_id: str, scoring: trio.CancelScope) -> None:
        """Cancels `scoring` once the build's stream holds a cancel or an ending. After each append the ledger
        signals (those of other servers included, on PostgreSQL) it reads the stream's version, and the stream
        itself only when that version moved."""
        stream = run_stream(scope, run_id)
        read_at: int | None = None
        while True:
            seen = self.ledger.appended.generation
            version = await self.ledger.stream_version(stream)
            if version != read_at:
                read_at = version
                now = await self.builds.state(scope, run_id)
                if now is None or not _going_on(now):
                    scoring.cancel()
                    return
            await self.ledger.appended.wait_beyond(seen)

    async def _score(self, scope: PlaybookScope, state: BuildState) -> list[NewRecord]:
        document = await self.builds.document_of(scope, state)
        metadata = {**state.started_metadata, "by": f"playbook:{scope.playbook}", "causation_id": None}

        def fact(kind: str, data: dict[str, Any]) -> NewRecord:
            return NewRecord(kind, data, metadata)

        assert state.answer is not None and state.assembled is not None
        if await self._retired(scope, state.name):
            ending = conflict(f"The prediction function {state.name} was retired during the build.", kind="retired")
            return [fact(BUILD_ENDED, {"outcome": "retired"}), fact(RUN_REJECTED, ending.as_record())]
        named = list(state.answer["answer"]["candidates"])
        if not named:
            return not_built(fact, "no_candidates", "The answer named no candidate.")
        reading = await self.datasets.reading(scope, str(state.assembled["dataset"]))
        assert reading is not None
        walked = (await trio.to_thread.run_sync(walk, document, reading)).walked
        points = backtest_points(document, walked)
        baseline = scores(document, walked, points, baseline_forecasts(document, walked, points))
        records: list[NewRecord] = []
        qualified: list[tuple[float, float, int, str, Scores]] = []
        for order, candidate in enumerate(named):
            try:
                forecasts = await self._forecasts(scope, state.run_id, document, walked, points, candidate)
            except Disqualified as disqualified:
                records.append(fact(CANDIDATE_DISQUALIFIED, {"candidate": candidate, "because": disqualified.because}))
                continue
            scored = scores(document, walked, points, forecasts)
            records.append(fact(CANDIDATE_SCORED, {"candidate": candidate, **scored.shown()}))
            rule = _failed_rule(document, scored, baseline)
            if rule is not None:
                records.append(fact(CANDIDATE_DISQUALIFIED, {"candidate": candidate, **rule}))
                continue
            qualified.append((scored.mase, scored.msis, order, candidate, scored))
        if not qualified:
            return records + not_built(fact, "none_qualified", "Every candidate the answer named was disqualified.")
        _, _, _, winner, won = min(qualified)
        version = await self._next_version(scope, state.name)
        active = await self._active(scope, state.name, document)
        built = {
            "version": version,
            "candidate": winner,
            "dataset": state.assembled["dataset"],
            "mase": round(won.mase, 6),
            "msis": round(won.msis, 6),
            "coverage": round(won.coverage, 6),
            "baseline_mase": round(baseline.mase, 6),
            "baseline_msis": round(baseline.msis, 6),
        }
        await self.ledger.content.put(scope.key, await self._candidate_bytes(scope, state.run_id, winner))
        records.append(fact(VERSION_BUILT, built))
        activation = "none_active" if active is None else ("no_shadow" if document.shadow_periods == 0 else None)
        version_state = "shadowing"
        if activation is not None and document.approve is not None:
            version_state = "awaiting_approval"
        elif activation is not None:
            version_state = "active"
            records.append(fact(VERSION_ACTIVATED, {"version": version, "rule": activation, "previous": active}))
        records.append(fact(BUILD_ENDED, {"outcome": "built", "version": version, "state": version_state}))
        output = {**built, "state": version_state}
        output.pop("dataset")
        record = {"dataset": built["dataset"], "baseline": baseline.shown(), "candidates": _outcomes(records)}
        records.append(fact(RUN_SUCCEEDED, {"output": output, "record": record}))
        return records

    async def _candidate_bytes(self, scope: PlaybookScope, run_id: str, candidate: str) -> bytes:
        data = await self.ledger.content.get(candidate_key(scope, run_id), candidate)
        if data is None:
            raise RuntimeError(f"the staged candidate {candidate} of the build {run_id} is missing")
        return data

    async def _forecasts(
        self,
        scope: PlaybookScope,
        run_id: str,
        document: PredictionDocument,
        walked: list[WalkedSeries],
        points: list[Point],
        candidate: str,
    ) -> list[tuple[float, float, float]]:
        async def staged() -> bytes:
            return await self._candidate_bytes(scope, run_id, candidate)

        path = await self.cache.ensure("models", candidate, staged)
        assert path is not None
        origins = sorted({(point.series, point.origin) for point in points})
        width = len(document.horizons)
        outputs: dict[tuple[int, int], tuple[list[float], list[float], list[float]]] = {}
        deadline = trio.current_time() + CANDIDATE_SECONDS
        for start in range(0, len(origins), BATCH_ROWS):
            batch = origins[start : start + BATCH_ROWS]
            history = [list(walked[s].values[o - document.lags + 1 : o + 1]) for s, o in batch]
            inputs = {"history": tensor(history, document.lags)}
            if document.features:
                covariates = [[walked[s].features[f][o] for f in document.features] for s, o in batch]
                inputs["covariates"] = tensor(covariates, len(document.features))
            left = deadline - trio.current_time()
            if left <= 0:
                raise Disqualified("timed_out")
            try:
                reply = await self.pool.build_work(
                    {"op": "run", "model": str(path), "fresh": start == 0, "inputs": inputs}, left, job_owner(scope)
                )
            except ModelJobFailed as failed:
                raise Disqualified(failed.because if failed.because != "not_loadable" else "failed_to_run") from None
            value, low, high = (_floats(reply, name) for name in ("value", "low", "high"))
            if any(array.shape != (len(batch), width) for array in (value, low, high)):
                raise Disqualified("failed_to_run")
            for row, key in enumerate(batch):
                outputs[key] = (value[row].tolist(), low[row].tolist(), high[row].tolist())
        forecasts = []
        finite = True
        ordered = True
        for point in points:
            value_row, low_row, high_row = outputs[(point.series, point.origin)]
            triple = (value_row[point.horizon], low_row[point.horizon], high_row[point.horizon])
            finite = finite and all(math.isfinite(number) for number in triple)
            ordered = ordered and triple[1] <= triple[0] <= triple[2]
            forecasts.append(triple)
        if not finite:
            raise Disqualified("not_finite")
        if not ordered:
            raise Disqualified("not_in_order")
        return forecasts

    async def _retired(self, scope: PlaybookScope, name: str) -> bool:
        definition = await self.ledger.queries.definitions.row(scope.org, scope.playbook, "prediction", name)
        return definition is None or definition["status"] == "retired"

    async def _next_version(self, scope: PlaybookScope, name: str) -> int:
        return await self.ledger.queries.prediction_versions.latest(scope.org, scope.playbook, name) + 1

    async def _active(self, scope: PlaybookScope, name: str, document: PredictionDocument) -> int | None:
        """The active version when it still fits the document's contract, else None."""
        active = await self.ledger.queries.prediction_versions.active(scope.org, scope.playbook, name)
        if active is None:
            return None
        contract = await self.builds.contract_of(scope, name, int(active["document_version"]))
        return int(active["version"]) if contract == document.contract else None


def _failed_rule(document: PredictionDocument, scored: Scores, baseline: Scores) -> dict[str, Any] | None:
    if scored.mase >= baseline.mase * (1 - document.beat_by):
        return {"because": "not_better", "mase": round(scored.mase, 6), "baseline_mase": round(baseline.mase, 6)}
    coverage, slack = round(document.coverage * 100), round(document.coverage_slack * 100)
    if scored.covered * 100 < (coverage - slack) * scored.points:
        return {"because": "coverage_short", "coverage": round(scored.coverage, 6), "points": scored.points}
    if scored.msis > baseline.msis:
        return {"because": "intervals_worse", "msis": round(scored.msis, 6), "baseline_msis": round(baseline.msis, 6)}
    return None


def _armed(scope: PlaybookScope, state: BuildState, records: list[NewRecord]) -> list[DueEntry]:
    """The due work a scored build's `build_ended` starts: its version's shadow, or its approving run."""
    arm = []
    for record in records:
        if record.type == BUILD_ENDED and record.data.get("state") == "shadowing":
            arm.append(shadow_entry(scope, state.name, state.run_id))
        elif record.type == BUILD_ENDED and record.data.get("state") == "awaiting_approval":
            arm.append(approval_entry(scope, state.name, int(record.data["version"])))
    return arm


def _going_on(state: BuildState) -> bool:
    """The build neither ended nor was asked to cancel."""
    return state.ended is None and not state.run_ended and not state.cancel_requested


def _outcomes(records: list[NewRecord]) -> list[dict[str, Any]]:
    outcomes: dict[str, dict[str, Any]] = {}
    for record in records:
        if record.type == CANDIDATE_SCORED:
            outcomes.setdefault(record.data["candidate"], {"candidate": record.data["candidate"]})["scored"] = {
                key: value for key, value in record.data.items() if key != "candidate"
            }
        elif record.type == CANDIDATE_DISQUALIFIED:
            outcomes.setdefault(record.data["candidate"], {"candidate": record.data["candidate"]})["disqualified"] = (
                record.data["because"]
            )
    return list(outcomes.values())
