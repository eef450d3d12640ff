"""The printed table: per path, requests a second, p50/p95/p99 latency and the rate's ratio to `/health`;
with several servers (`--compare`), their columns side by side."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from auto_runtime.bench.load import Answers


@dataclass(frozen=True)
class PathFigures:
    """One path's figures on one server."""

    name: str
    rate: float
    p50: float
    p95: float
    p99: float

    @classmethod
    def of(cls, name: str, answers: Sequence[Answers], seconds: float) -> PathFigures:
        latencies = sorted(latency for answer in answers for latency in answer.latencies)
        done = sum(answer.done for answer in answers)
        if len(latencies) < 2:
            only = latencies[0] if latencies else 0.0
            return cls(name, done / seconds, only, only, only)
        cuts = statistics.quantiles(latencies, n=100, method="inclusive")
        return cls(name, done / seconds, cuts[49], cuts[94], cuts[98])


HEADER = ("requests/s", "p50 ms", "p95 ms", "p99 ms", "x /health")
WIDTHS = (11, 8, 8, 8, 9)


def _cells(figures: PathFigures, floor: PathFigures) -> list[str]:
    ratio = figures.rate / floor.rate if floor.rate else 0.0
    values = (
        f"{figures.rate:.0f}",
        f"{figures.p50 * 1e3:.2f}",
        f"{figures.p95 * 1e3:.2f}",
        f"{figures.p99 * 1e3:.2f}",
        f"{ratio:.2f}",
    )
    return [value.rjust(width) for value, width in zip(values, WIDTHS, strict=True)]


def render(columns: Sequence[tuple[str, Sequence[PathFigures]]]) -> str:
    """The table: one row a path, one group of columns a server (its label above); the first path of each
    server is the `/health` floor its ratios divide by."""
    names = [figures.name for figures in columns[0][1]]
    path_width = max(len("path"), *(len(name) for name in names))
    group_width = sum(WIDTHS) + len(WIDTHS) - 1
    lines = []
    if len(columns) > 1:
        lines.append(" " * path_width + "  " + " | ".join(label.center(group_width) for label, _ in columns))
    header = " ".join(title.rjust(width) for title, width in zip(HEADER, WIDTHS, strict=True))
    lines.append("path".ljust(path_width) + "  " + " | ".join(header for _ in columns))
    for index, name in enumerate(names):
        groups = [" ".join(_cells(paths[index], paths[0])) for _, paths in columns]
        lines.append(name.ljust(path_width) + "  " + " | ".join(groups))
    return "\n".join(lines)
