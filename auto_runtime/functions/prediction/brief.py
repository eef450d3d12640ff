"""A build's brief (prediction-format §8.4) and its request's message (§8.5): Markdown and text the trainer reads.

The brief begins `# Build {run_id} of {name}` and has, in order: The forecast, The signature, The rows, The bar,
Handing candidates over, and Notes from the function (left out when the document's body is empty).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from auto_runtime.functions.prediction.document import PredictionDocument
from auto_runtime.functions.prediction.periods import period_text
from auto_runtime.functions.prediction.walk import WalkedSeries

LISTED_SERIES: Final = 50


def _base(org: str, playbook: str) -> str:
    return f"/v1/orgs/{org}/playbooks/{playbook}"


def request_message(org: str, playbook: str, run_id: str, name: str) -> str:
    base = _base(org, playbook)
    return (
        f"Build {run_id} of the prediction function {name} asks for candidate models.\n"
        f"Brief: GET {base}/runs/{run_id}/build/brief\n"
        f"Rows: GET {base}/runs/{run_id}/build/rows\n"
        f"Upload each candidate to POST {base}/runs/{run_id}/build/candidates, then answer with "
        '{ "candidates": [...] }.'
    )


def brief_text(
    *,
    org: str,
    playbook: str,
    run_id: str,
    name: str,
    document: PredictionDocument,
    walked: Sequence[WalkedSeries],
    training_rows: int,
    baseline: dict[str, Any],
) -> str:
    base = _base(org, playbook)
    horizons = ", ".join(str(h) for h in document.horizons)
    width = len(document.horizons)
    features = len(document.features)
    covariates = (
        f"| `covariates` | `tensor(float)` | `[N, {features}]` | Each feature's value at the origin, in this order: "
        + ", ".join(f"`{feature}`" for feature in document.features)
        + " |\n"
        if document.features
        else ""
    )
    columns = ["series", "origin", f"history_1 … history_{document.lags}"]
    columns += [f"feature_{feature}" for feature in document.features]
    columns += [f"target_h{h}" for h in document.horizons]
    cuts = [
        f"- `{series.name}`: cut at {period_text(document.period, series.first + series.cut - 1)}" for series in walked
    ]
    if len(cuts) > LISTED_SERIES:
        cuts = [*cuts[:LISTED_SERIES], f"- and {len(walked) - LISTED_SERIES} more"]
    notes = document.notes.strip("\n")
    sections = [
        f"# Build {run_id} of {name}\n",
        "## The forecast\n\n"
        f"Forecast `{document.target}` by {document.period}, {horizons} periods after the origin, with an interval "
        f"`[low, high]` that holds the observed value with probability {document.coverage:g}.\n",
        "## The signature\n\n"
        "| Input | Type | Shape | Holds |\n| --- | --- | --- | --- |\n"
        f"| `history` | `tensor(float)` | `[N, {document.lags}]` | The target's last {document.lags} values up to and "
        "including the origin, oldest first |\n"
        f"{covariates}\n"
        "| Output | Type | Shape | Holds |\n| --- | --- | --- | --- |\n"
        f"| `value` | `tensor(float)` | `[N, {width}]` | The forecast for horizons {horizons}, in this order |\n"
        f"| `low`, `high` | `tensor(float)` | `[N, {width}]` | The interval's bounds, meant to hold the observed "
        f"value with probability {document.coverage:g} |\n\n"
        "The first dimension of each input and output is symbolic or unset. No other input is allowed.\n",
        "## The rows\n\n"
        f"`GET {base}/runs/{run_id}/build/rows` gives {training_rows:,} rows as CSV, with the columns "
        + ", ".join(f"`{column}`" for column in columns)
        + ". The trainer never sees a value after a series' cut.\n\n"
        + "\n".join(cuts)
        + "\n",
        "## The bar\n\n"
        "The seasonal-naive baseline scores "
        f"MASE {baseline['mase']:.6f}, MSIS {baseline['msis']:.6f} and coverage {baseline['coverage']:.6f} on "
        f"{baseline['points']:,} backtest points. A candidate qualifies when its MASE is below the baseline's "
        f"times {1 - document.beat_by:g} (not_better), its coverage is at least {document.coverage:g} less "
        f"{document.coverage_slack:g} (coverage_short), and its MSIS is at most the baseline's (intervals_worse). "
        "The lowest MASE among those that qualify wins.\n",
        "## Handing candidates over\n\n"
        f"Upload each ONNX model with `POST {base}/runs/{run_id}/build/candidates` as "
        "`application/octet-stream`, at most 8 candidates, importing the default domain at opset 13 or later. "
        'Then answer the request with `{ "candidates": [...] }`, naming each candidate by the SHA-256 its upload '
        "returned.\n",
    ]
    if notes.strip():
        sections.append(f"## Notes from the function\n\n{notes}\n")
    return "\n".join(sections)
