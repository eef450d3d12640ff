"""Runs every benchmark in turn (`make bench`, or `python -m benchmarks [name ...]`).

Each benchmark is its own script: it measures its baseline in the same run, prints medians and ratios, and
asserts nothing. They run one after another, never at once, so they do not disturb each other.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

FOLDER = Path(__file__).parent
BENCHMARKS = (
    "ledger_appends",
    "actors",
    "sandbox_start",
    "computation",
    "http_routes",
    "reasoning_overhead",
    "workflows",
    "partitions",
    "tools",
    "stderr_flood",
    "interaction",
    "recall",
    "recall_fair_share",
    "prediction",
    "metrics_cost",
    "health_under_attack",
)


def main(names: list[str]) -> int:
    chosen = names or list(BENCHMARKS)
    unknown = [name for name in chosen if name not in BENCHMARKS]
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}", file=sys.stderr)
        return 2
    failed = []
    for name in chosen:
        print(f"== {name}", flush=True)
        started = time.monotonic()
        code = subprocess.call([sys.executable, "-m", f"benchmarks.{name}"], cwd=FOLDER.parent)
        print(f"== {name}: exit {code} after {time.monotonic() - started:.0f} s\n", flush=True)
        if code != 0:
            failed.append(name)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
