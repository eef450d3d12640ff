"""A prediction function's input checked against the schema the runtime writes for it (prediction-format §7): a
question `{ series, horizon? }` or a build `{ build: {} }`, refused in the type's own words at `/input/...`."""

from __future__ import annotations

from typing import Any

from auto_runtime.functions.prediction.document import PredictionDocument
from auto_runtime.problems import InputIssue


def question_issues(document: PredictionDocument, value: Any) -> list[InputIssue]:
    """The input's problems against the schema `input_schema` writes, in its words (§7)."""
    if not isinstance(value, dict):
        return [InputIssue("input: expected an object, a question { series, horizon? } or { build: {} }.", "/input")]
    if "build" in value:
        issues = [
            InputIssue(f"input: a build takes only build, not {key}.", f"/input/{key}")
            for key in value
            if key != "build"
        ]
        if value["build"] != {} or not isinstance(value["build"], dict):
            issues.append(InputIssue("build: expected an empty object, {}.", "/input/build"))
        return issues
    issues = [
        InputIssue(f"input: a question takes series and horizon, not {key}.", f"/input/{key}")
        for key in value
        if key not in ("series", "horizon")
    ]
    series = value.get("series")
    if "series" not in value:
        issues.append(InputIssue("input: a question names its series, or the input is { build: {} }.", "/input"))
    elif not isinstance(series, str) or not 1 <= len(series) <= 64:
        issues.append(InputIssue("series: expected the name of a series, 1 to 64 characters.", "/input/series"))
    if "horizon" in value:
        horizon = value["horizon"]
        if isinstance(horizon, bool) or horizon not in document.horizons:
            listed = ", ".join(str(h) for h in document.horizons)
            issues.append(InputIssue(f"horizon: expected one of the function's horizons, {listed}.", "/input/horizon"))
    return issues
