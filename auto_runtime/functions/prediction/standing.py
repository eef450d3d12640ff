"""A prediction function's `standing` on `get_definition` (prediction-format §11): its dataset's summary, and its
models: the active version, the builds asked in the trailing 24 hours against `PREDICTION_BUILDS_PER_DAY`, the
build under way (`starting`, `waiting`, `queued` once answered, or null), and the newest 20 versions, each
`unfit` once the function's contract changed since it was built (§6)."""

from __future__ import annotations

from typing import Any, Final

from auto_runtime.functions.prediction.builds import Builds
from auto_runtime.functions.prediction.document import parse_document
from auto_runtime.ledger import PlaybookScope

LISTED_VERSIONS: Final = 20


async def standing(builds: Builds, scope: PlaybookScope, name: str, source: str) -> dict[str, Any]:
    document = parse_document(source)
    dataset: dict[str, Any] | None = None
    if not isinstance(document, list):
        summary = await builds.datasets.summary(scope, document.dataset)
        if summary is not None:
            dataset = {key: summary[key] for key in ("dataset", "rows", "series", "period", "last_period")}
    rows = await builds.ledger.queries.prediction_versions.listed(scope.org, scope.playbook, name)
    contract = None if isinstance(document, list) else document.contract
    versions = []
    for row in rows[:LISTED_VERSIONS]:
        shown = {key: value for key, value in row.items() if key != "document_version"}
        if await builds.contract_of(scope, name, int(row["document_version"])) != contract:
            shown["state"] = "unfit"
        versions.append(shown)
    active: int | None = None
    for row in rows:
        fits = await builds.contract_of(scope, name, int(row["document_version"])) == contract
        if row["state"] == "active" and fits:
            active = int(row["version"])
    counted = await builds.builds_of_the_day(scope, name, builds.clock())
    build: dict[str, Any] | None = None
    for run_id in await builds.started_builds(scope, name):
        state = await builds.state(scope, run_id)
        if state is None or not state.is_build:
            continue
        phase = "starting" if state.asked is None else ("waiting" if state.answer is None else "queued")
        build = {"run_id": state.run_id, "state": phase}
    return {
        "dataset": dataset,
        "models": {
            "active": active,
            "builds_in_last_day": counted,
            "builds_per_day": builds.builds_per_day,
            "build": build,
            "versions": versions,
        },
    }
