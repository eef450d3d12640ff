"""Checking a build's candidate (prediction-format §8.6): `POST /runs/{run_id}/build/candidates`.

In order: `too_many` before any step once the build accepted 8; then, on the server, parse the model
(`not_loadable`, external data included), its opsets (`opset`) and its declared signature (`signature`); then,
in a model process held as build work that never waits, load it with ONNX Runtime (`not_loadable`) and run it on
the build's first two training rows (`failed_to_run`, `signature` for outputs that are not `[2, H]`), within
`CHECK_SECONDS` together (`timed_out`), either step possibly `out_of_memory`. A refusal is `invalid_input` at
`/body` and records `candidate_refused`; an accepted candidate records `candidate_uploaded` and is staged as
content under the build (`candidate_key`) and written to the cache folder for the model processes. The same
accepted bytes again answer the same object and record nothing. With every process available to builds busy,
the answer is `unavailable`, kind `model_process_busy`, `Retry-After: 5`, and nothing is recorded.

The checks run outside the build's run actor (they hold a model process for up to `CHECK_SECONDS`); what they
decided is sent to it (`UploadCandidate`, `RefuseCandidate`), which records it on the build as it then stands:
`build_ended` once the build took its answer or ended meanwhile.
"""

from __future__ import annotations

import base64
import csv
import io
from collections.abc import AsyncIterator
from typing import Any, Final

import numpy as np
import trio

from auto_runtime.functions.prediction.build_facts import MAX_CANDIDATES, BuildState, candidate_key
from auto_runtime.functions.prediction.builds import Builds
from auto_runtime.functions.prediction.cache_folder import CacheFolder
from auto_runtime.functions.prediction.document import PredictionDocument
from auto_runtime.functions.prediction.model_file import NotLoadable, opset_problem, read_model_file, signature_problem
from auto_runtime.functions.prediction.model_pool import ModelJobFailed, ModelPool, ModelProcessBusy
from auto_runtime.functions.prediction.model_work import job_owner
from auto_runtime.ledger import PlaybookScope
from auto_runtime.ledger.content import SpooledContent, open_spool
from auto_runtime.problems import InputIssue, Rejection, invalid_input, unavailable
from auto_runtime.runs import Runs
from auto_runtime.runs.prediction_messages import RefuseCandidate, UploadCandidate

MAX_CANDIDATE_BYTES: Final = 67_108_864
CHECK_SECONDS: Final = 30.0


def tensor(rows: list[list[float]], width: int) -> dict[str, Any]:
    array = np.asarray(rows, dtype="<f4").reshape(len(rows), width)
    return {"shape": [len(rows), width], "data": base64.b64encode(array.tobytes()).decode("ascii")}


def first_rows(rows_csv: bytes, document: PredictionDocument, count: int = 2) -> dict[str, Any]:
    """The model inputs of the rows file's first `count` rows (§8.6 step 5)."""
    reader = csv.reader(io.StringIO(rows_csv[: 1024 * 1024].decode("utf-8", errors="replace")))
    header = next(reader)
    lags, features = document.lags, len(document.features)
    history: list[list[float]] = []
    covariates: list[list[float]] = []
    for row in reader:
        if len(row) != len(header):
            break
        history.append([float(cell) for cell in row[2 : 2 + lags]])
        covariates.append([float(cell) for cell in row[2 + lags : 2 + lags + features]])
        if len(history) == count:
            break
    inputs = {"history": tensor(history, lags)}
    if features:
        inputs["covariates"] = tensor(covariates, features)
    return inputs


class Refused(Exception):
    def __init__(self, because: str, words: str) -> None:
        super().__init__(words)
        self.because = because
        self.words = words


class Candidates:
    """Candidate uploads of waiting builds (see the module)."""

    def __init__(self, builds: Builds, pool: ModelPool, cache: CacheFolder, runs: Runs) -> None:
        self.builds = builds
        self.pool = pool
        self.cache = cache
        self.runs = runs
        self.ledger = builds.ledger

    async def upload(
        self, scope: PlaybookScope, run_id: str, body: AsyncIterator[bytes], caller_id: str
    ) -> dict[str, Any]:
        state = await self.builds.waiting(scope, run_id)
        async with open_spool() as spool:
            async for chunk in body:
                if spool.size + len(chunk) > MAX_CANDIDATE_BYTES:
                    raise Rejection("content_too_large", "A candidate is at most 67,108,864 bytes.")
                await spool.write(chunk)
            return await self._checked(scope, run_id, state, await spool.content(), caller_id)

    async def _checked(
        self, scope: PlaybookScope, run_id: str, state: BuildState, spooled: SpooledContent, caller_id: str
    ) -> dict[str, Any]:
        """Check the spooled candidate in the order of the spec, then stage it and record it (see the module)."""
        candidate = spooled.sha256
        shown = state.uploaded.get(candidate)
        if shown is not None:
            return {"candidate": candidate, "bytes": shown["bytes"], "opset": shown["opset"]}
        document = await self.builds.document_of(scope, state)
        try:
            if len(state.accepted) >= MAX_CANDIDATES:
                raise Refused("too_many", f"The build already has the {MAX_CANDIDATES} candidates it accepts.")
            opset = await trio.to_thread.run_sync(_static_check, spooled, document)
            await self._trial(scope, run_id, state, document, spooled)
        except Refused as refused:
            await self.runs.ask(scope, run_id, RefuseCandidate(candidate, spooled.size, refused.because, caller_id))
            rejection = invalid_input(
                [InputIssue(f"The candidate is refused ({refused.because}): {refused.words}.", "/body")]
            )
            rejection.because = refused.because
            raise rejection from None
        await self.ledger.content.put_spooled(candidate_key(scope, run_id), spooled)
        await self.runs.ask(scope, run_id, UploadCandidate(candidate, spooled.size, opset, caller_id))
        return {"candidate": candidate, "bytes": spooled.size, "opset": opset}

    async def _trial(
        self,
        scope: PlaybookScope,
        run_id: str,
        state: BuildState,
        document: PredictionDocument,
        spooled: SpooledContent,
    ) -> None:
        path = await self.cache.ensure_spooled("models", spooled)
        rows = await self.builds.rows_of(scope, state)
        assert rows is not None
        inputs = first_rows(rows, document)
        try:
            reply = await self.pool.check(
                {"op": "run", "model": str(path), "fresh": True, "inputs": inputs}, CHECK_SECONDS, job_owner(scope)
            )
        except ModelProcessBusy:
            raise unavailable(
                "Every model process available to builds is busy; upload the candidate again shortly.",
                kind="model_process_busy",
                retry_after=5,
            ) from None
        except ModelJobFailed as failed:
            raise Refused(failed.because, failed.detail or failed.because) from None
        width = len(document.horizons)
        for name in ("value", "low", "high"):
            shape = reply["outputs"][name]["shape"]
            if shape != [2, width]:
                raise Refused("signature", f"its output {name} has the shape {shape} for two rows, not [2, {width}]")


def _static_check(spooled: SpooledContent, document: PredictionDocument) -> int:
    """Steps 1–3 of the check; the default domain's opset. Raises `Refused`. Worker thread: the model is read
    from the spool and parsed here, and let go of when the check ends."""
    try:
        model = read_model_file(b"".join(spooled.checked_chunks()))
    except NotLoadable as error:
        raise Refused("not_loadable", f"it is not an ONNX model this server reads: {error}") from None
    if model.external:
        raise Refused("not_loadable", "it stores tensors outside the file (external data)")
    problem = opset_problem(model)
    if problem is not None:
        raise Refused("opset", problem)
    problem = signature_problem(model, document.lags, len(document.features), len(document.horizons))
    if problem is not None:
        raise Refused("signature", problem)
    return model.opsets[""]
