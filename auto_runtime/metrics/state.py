"""Whether the server measures, and the instruments it measures with.

`METERING.on` is False unless `install_metrics` found `METRICS=on` or an OTLP endpoint: every recording helper
of this room tests it first and returns, so with metrics off an instrumented call site costs one attribute
read and a call. While off, `METERING.instruments` holds instruments of the OpenTelemetry API's no-op meter
(they record nothing), so a helper that skipped the test would still be harmless.

Concurrency: the SDK's instruments are thread-safe; the sandbox's workers and the SQLite writer record from
their threads. Everything else this room keeps (`actors`, `runs`, `sandbox`) is touched on the Trio thread only,
unless its docstring says otherwise.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import TypeVar

from opentelemetry.metrics import Meter, NoOpMeter

from auto_runtime.metrics.instruments import Instruments

INSTRUMENTATION_NAME = "auto_runtime"
_Member = TypeVar("_Member")


@dataclass
class Metering:
    on: bool = False
    instruments: Instruments = field(default_factory=lambda: Instruments(NoOpMeter(INSTRUMENTATION_NAME)))

    def start(self, meter: Meter) -> None:
        self.instruments = Instruments(meter)
        self.on = True

    def stop(self) -> None:
        self.on = False
        self.instruments = Instruments(NoOpMeter(INSTRUMENTATION_NAME))


METERING = Metering()


def members_now(watched: weakref.WeakSet[_Member]) -> list[_Member]:
    """The members of `watched` now, read from the exporter's thread while the Trio thread may add one: a copy that
    met a change (`RuntimeError`, the set changed size during iteration) is taken again."""
    while True:
        try:
            return list(watched)
        except RuntimeError:
            continue
