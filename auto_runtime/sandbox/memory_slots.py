"""The engine's linear memories come from Wasmtime's pooling allocator: slots reserved once and reused, each
instance's memory laid copy-on-write over the snapshot's image.

Why: an instance of the snapshot (`snapshot.py`) starts with its interpreter, heap and prelude set up, as
pages of the module's memory image that Wasmtime maps copy-on-write into the slot; a run faults in only the
pages it reads or writes. Keeping pages resident between stores (`KEEP_RESIDENT`) once saved a fresh
interpreter's start from faulting its heap's tables in again; with the snapshot there is no such start, and
zeroing resident pages at every drop costs more than it saves (measured: instantiate and drop 0.03 ms with
none kept, 0.08 ms with 1 MiB, 0.46 ms with 7 MiB). The work (fuel) of a run does not depend on it.

Isolation is unchanged: every run still gets a new `Store` and instance. When a store is dropped, Wasmtime
resets its slot before any other instance may take it: what the run wrote is given back to the kernel and the
snapshot's image is mapped afresh at the next instantiation. Nothing one run wrote is readable by the next
(`tests/sandbox/test_isolation.py`).

Bounds: `SLOTS` memories (and instances) may be live at once per engine. Stores live only on the threads that
run sandboxes: the workers and their companions (at most `MAX_WORKERS` each), the save-time checkers, and Trio's
worker threads (at most `TRIO_THREADS`) for the few paths that evaluate outside the pool; `SLOTS` covers them
all with room to spare. Each slot reserves address space only (4 GiB of it, never touched); what stays resident
is at most `KEEP_RESIDENT` per slot that has been used, so the bound on memory is the peak of concurrent stores
times `KEEP_RESIDENT`, reached once and not grown by further runs.
"""

from __future__ import annotations

from typing import Final

import wasmtime
from wasmtime import _bindings as wasmtime_c

from auto_runtime.sandbox.limits import MEMORY_BYTES

KEEP_RESIDENT: Final = 0
"""Bytes of each slot zeroed in place rather than given back at a drop: none (see the module's docstring)."""
MAX_WORKERS: Final = 64
"""The most sandbox workers a server runs (`COMPUTATION_WORKERS`' upper bound); each has a companion."""
CHECKERS: Final = 2
TRIO_THREADS: Final = 40
"""Trio's default limit of worker threads (`trio.to_thread`)."""
SLOTS: Final = 256
"""At least 2 x MAX_WORKERS + CHECKERS + TRIO_THREADS (170), rounded up."""


def use_memory_slots(config: wasmtime.Config) -> None:
    """Make `config`'s engine take linear memories from a pool of `SLOTS`, each kept `KEEP_RESIDENT` resident.

    wasmtime-py 50 exposes the C API's pooling allocator only through its generated bindings; the C API copies
    the pooling configuration, so ours is deleted once set."""
    pooling = wasmtime_c.wasmtime_pooling_allocation_config_new()
    try:
        for setter, value in (
            (wasmtime_c.wasmtime_pooling_allocation_config_total_memories_set, SLOTS),
            (wasmtime_c.wasmtime_pooling_allocation_config_total_core_instances_set, SLOTS),
            (wasmtime_c.wasmtime_pooling_allocation_config_total_tables_set, SLOTS),
            (wasmtime_c.wasmtime_pooling_allocation_config_max_unused_warm_slots_set, SLOTS),
            (wasmtime_c.wasmtime_pooling_allocation_config_max_memory_size_set, MEMORY_BYTES),
            (wasmtime_c.wasmtime_pooling_allocation_config_linear_memory_keep_resident_set, KEEP_RESIDENT),
        ):
            setter(pooling, value)
        wasmtime_c.wasmtime_pooling_allocation_strategy_set(config.ptr(), pooling)
    finally:
        wasmtime_c.wasmtime_pooling_allocation_config_delete(pooling)


SLOTS_DESCRIPTION: Final = f"pooling={SLOTS};keep_resident={KEEP_RESIDENT};max_memory={MEMORY_BYTES}"
"""Part of the compiled module's cache key (`engine.cache_file_name`)."""
