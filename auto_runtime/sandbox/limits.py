"""The bounds every sandbox run shares (see spec/computation-format.md, Bounds)."""

from __future__ import annotations

WORK_FUEL = 10_000_000_000
"""Fuel `main` may spend, from its call to its return: the run's work."""

PRELUDE_FUEL = 5_000_000_000
"""Fuel for compiling the program and reading the input (no input reaches it); the interpreter is already
started in the snapshot."""

COMPILE_FUEL = 2_000_000_000
"""Fuel for the save-time compile pass: compiling a 65 KB program costs about 0.5 billion (computation page,
Measured), so a compile that passes this computes numbers too large for the check, within its 2 seconds."""

WRITER_FUEL = 30_000_000_000
"""Fuel for writing the output: the writer stops at the output bound, so no output reaches it."""

MEMORY_BYTES = 256 * 1024 * 1024
"""The store's linear-memory limit."""

HEAP_SIZE = "240M"
"""MicroPython's heap in the computation snapshot (`artifact.HEAPS`), below the memory limit with a margin for
the interpreter."""

MAX_DEPTH = 512
"""Levels a value may nest, in the input and the output: `[]` is one level."""

"""An error's text, an issue's pointer and its words are cut at this many UTF-8 bytes, then `…`."""

RUN_SECONDS = 10.0
"""Wall-clock time a run may take from its start, the wait for a worker included."""

TICK_SECONDS = 0.01
"""The epoch ticker's period."""

LOG_BYTES = 65_536
"""Bytes of stdout and of stderr kept from a run, for the log only."""
