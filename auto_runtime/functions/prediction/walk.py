"""A build's walk, rows and baseline (prediction-format §8.2–§8.3), computed in binary64 over unrounded values.

For a series y₁…y_T with lags L, largest horizon Hmax, backtest K and season m (indices below are 1-based as on
the page, 0-based in the code): the cut C = T − Hmax − K + 1; the series is walked when C − Hmax ≥ L and
C > m·⌈Hmax/m⌉; its scale q is the mean of |y_t − y_{t−m}| over t = m+1…C, and q = 0 makes it flat. Backtest
origins are C…C+K−1, training origins L…C−Hmax. The baseline is seasonal naive, with a split-conformal interval.

Pure functions without state: run them in a worker thread.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from auto_runtime.functions.prediction.dataset_csv import DatasetReading
from auto_runtime.functions.prediction.document import PredictionDocument
from auto_runtime.functions.prediction.periods import period_text

MAX_ROWS: Final = 1_000_000
MAX_ROWS_BYTES: Final = 256 * 1024 * 1024


class RowsTooLarge(Exception):
    """The training rows pass 1,000,000 rows or 256 MiB (§8.2)."""


@dataclass
class WalkedSeries:
    name: str
    first: int
    values: Sequence[float]
    features: Mapping[str, Sequence[float]]
    cut: int
    """C, 1-based: the last period the trainer sees is the series' C-th."""
    scale: float


@dataclass
class Walk:
    walked: list[WalkedSeries] = field(default_factory=list)
    too_short: int = 0
    flat: int = 0
    long_enough: int = 0

    def because_not_walked(self) -> str:
        """`flat` when some series was long enough and every such series was flat, `too_short` otherwise."""
        return "flat" if self.long_enough > 0 and self.flat == self.long_enough else "too_short"


def periods_needed(document: PredictionDocument) -> int:
    """max(L + 2·Hmax + K − 1, m·⌈Hmax/m⌉ + Hmax + K): the fewest periods a series needs to be walked."""
    lags, hmax, k, m = document.lags, max(document.horizons), document.backtest, document.season
    return max(lags + 2 * hmax + k - 1, m * math.ceil(hmax / m) + hmax + k)


def walk(document: PredictionDocument, reading: DatasetReading) -> Walk:
    """Which series are walked, too short or flat, in the series' order of first appearance."""
    result = Walk()
    lags, hmax, k, m = document.lags, max(document.horizons), document.backtest, document.season
    for name, series in reading.series.items():
        values = series.columns[document.target]
        length = len(values)
        cut = length - hmax - k + 1
        if not (cut - hmax >= lags and cut > m * math.ceil(hmax / m)):
            result.too_short += 1
            continue
        result.long_enough += 1
        steps = [abs(values[t] - values[t - m]) for t in range(m, cut)]
        scale = math.fsum(steps) / len(steps)
        if scale == 0:
            result.flat += 1
            continue
        features = {feature: series.columns[feature] for feature in document.features}
        result.walked.append(WalkedSeries(name, series.first, values, features, cut, scale))
    return result


def number_text(value: float) -> str:
    """The shortest decimal that reads back as the same double, without a fraction when whole."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def _series_cell(name: str) -> str:
    if any(character in name for character in ',"\n\r'):
        return '"' + name.replace('"', '""') + '"'
    return name


def rows_header(document: PredictionDocument) -> str:
    columns = ["series", "origin", *(f"history_{i}" for i in range(1, document.lags + 1))]
    columns += [f"feature_{name}" for name in document.features]
    columns += [f"target_h{h}" for h in document.horizons]
    return ",".join(columns) + "\n"


def training_origins(series: WalkedSeries, document: PredictionDocument) -> range:
    """0-based origins o−1 for o = L … C − Hmax."""
    return range(document.lags - 1, series.cut - max(document.horizons))


def rows_lines(document: PredictionDocument, walked: Sequence[WalkedSeries]) -> Iterator[str]:
    """The rows' CSV lines after the header, series in order of first appearance, then ascending origin."""
    for series in walked:
        cell = _series_cell(series.name)
        for origin in training_origins(series, document):
            history = series.values[origin - document.lags + 1 : origin + 1]
            parts = [cell, period_text(document.period, series.first + origin)]
            parts += [number_text(value) for value in history]
            parts += [number_text(series.features[name][origin]) for name in document.features]
            parts += [number_text(series.values[origin + h]) for h in document.horizons]
            yield ",".join(parts) + "\n"


@dataclass(frozen=True)
class Rows:
    data: bytes
    count: int
    sha256: str


def training_rows(document: PredictionDocument, walked: Sequence[WalkedSeries]) -> Rows:
    """The rows CSV; `RowsTooLarge` past 1,000,000 rows or 256 MiB."""
    count = sum(len(training_origins(series, document)) for series in walked)
    if count > MAX_ROWS:
        raise RowsTooLarge
    parts = [rows_header(document)]
    size = len(parts[0])
    for line in rows_lines(document, walked):
        size += len(line)
        if size > MAX_ROWS_BYTES:
            raise RowsTooLarge
        parts.append(line)
    data = "".join(parts).encode("utf-8")
    return Rows(data, count, hashlib.sha256(data).hexdigest())


@dataclass(frozen=True)
class Point:
    """One backtest point: series index, origin (0-based), horizon index and the actual value."""

    series: int
    origin: int
    horizon: int
    actual: float


def backtest_points(document: PredictionDocument, walked: Sequence[WalkedSeries]) -> list[Point]:
    points = []
    for index, series in enumerate(walked):
        for origin in range(series.cut - 1, series.cut - 1 + document.backtest):
            for position, h in enumerate(document.horizons):
                points.append(Point(index, origin, position, series.values[origin + h]))
    return points


@dataclass(frozen=True)
class Scores:
    mase: float
    msis: float
    coverage: float
    covered: int
    points: int

    def shown(self) -> dict[str, Any]:
        return {
            "mase": round(self.mase, 6),
            "msis": round(self.msis, 6),
            "coverage": round(self.coverage, 6),
            "points": self.points,
        }


def scores(
    document: PredictionDocument,
    walked: Sequence[WalkedSeries],
    points: Sequence[Point],
    forecasts: Sequence[tuple[float, float, float]],
) -> Scores:
    """MASE, MSIS and coverage of `forecasts` (value, low, high per point) over `points` (§8.3)."""
    alpha = 1 - document.coverage
    absolute, interval, covered = [], [], 0
    for point, (value, low, high) in zip(points, forecasts, strict=True):
        scale = walked[point.series].scale
        actual = point.actual
        absolute.append(abs(actual - value) / scale)
        penalty = (
            (high - low)
            + (2 / alpha) * (low - actual) * (actual < low)
            + (2 / alpha) * (actual - high) * (actual > high)
        )
        interval.append(penalty / scale)
        covered += low <= actual <= high
    count = len(points)
    return Scores(math.fsum(absolute) / count, math.fsum(interval) / count, covered / count, covered, count)


def baseline_forecasts(
    document: PredictionDocument, walked: Sequence[WalkedSeries], points: Sequence[Point]
) -> list[tuple[float, float, float]]:
    """Seasonal naive: y_{o+h−k} with k = m·⌈h/m⌉, ± the r-th smallest of |y_t − y_{t−k}| over t = k+1…C,
    r = min(n, ⌈(n+1)·coverage⌉) computed with integers from the two-decimal coverage."""
    m = document.season
    percent = round(document.coverage * 100)
    widths: dict[tuple[int, int], float] = {}
    for index, series in enumerate(walked):
        for position, h in enumerate(document.horizons):
            k = m * math.ceil(h / m)
            residuals = sorted(abs(series.values[t] - series.values[t - k]) for t in range(k, series.cut))
            n = len(residuals)
            rank = min(n, ((n + 1) * percent + 99) // 100)
            widths[(index, position)] = residuals[rank - 1]
    forecasts = []
    for point in points:
        series = walked[point.series]
        h = document.horizons[point.horizon]
        k = m * math.ceil(h / m)
        value = series.values[point.origin + h - k]
        width = widths[(point.series, point.horizon)]
        forecasts.append((value, value - width, value + width))
    return forecasts
