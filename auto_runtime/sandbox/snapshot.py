"""The snapshotter: start the interpreter once, run the setup, and write what it left as a new module.

`take_snapshot(merged, heap_bytes, setup)` instantiates the merged module (`build.py`) with the host's imports
(`host_imports.define_host`, plus the one `lookup_attr` the bridge's registration needs), then, as MicroPython's
own JavaScript loader would: `emscripten_stack_init`, `__wasm_call_ctors`, `mp_js_init(PYSTACK_WORDS, heap)`
(the heap is allocated once, here), `proxy_c_init`, the bridge's module registered, and `setup` executed with
`mp_js_do_exec`. The module it writes is the merged one with:

- a data section of the memory's non-zero 4 KiB pages (runs of them, one segment each), and the memory's
  minimum raised to its size now: an instance starts with the heap and the prelude already there, and
  Wasmtime lays that image copy-on-write. Wasmtime makes such an image only when the data spans at most
  `DENSE_BYTES` (or fills half its span), and the allocator's bookkeeping of the free memory after the 240 MiB
  heap lies far above the rest; so the pages beyond `DENSE_BYTES` from the first go into a custom section, the
  tail (`wasm_binary.TAIL_SECTION`, a few bytes), which `store_run` writes into each instance (the transient
  buffers of the setup are allocated before the heap, so little else is up there);
- every mutable global's initialiser set to its value now (the stack pointer must be back where it started:
  nothing of the C stack survives, `SnapshotError` otherwise);
- only `KEPT_EXPORTS` exported (an instance's export map is built at every instantiation);
- no other custom section.

Valid only because the module has no start function, no `memory.init` or `data.drop`, and never writes its table
(`build.check_source` verifies each on the pinned module): the state of an instance is its memory and globals.
The output depends on nothing but the module, the heap size and the setup: the same bytes on every machine.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import wasmtime

from auto_runtime.sandbox import wasm_binary as wb
from auto_runtime.sandbox.bridge import Bridge, activate
from auto_runtime.sandbox.c_api import Caller
from auto_runtime.sandbox.host_imports import (
    BRIDGE_MODULE,
    BRIDGE_MODULE_REF,
    BRIDGE_REF,
    JS_OBJECT,
    HostRefused,
    define_host,
)

KEPT_EXPORTS = ("memory", "malloc", "mp_js_do_exec")
PYSTACK_WORDS = 16384
"""MicroPython's Python stack, in words (64 KiB): deep enough that the C stack's limit, not this, ends a recursion."""
PAGE = 4096
DENSE_BYTES = 16 * 1024 * 1024
"""Wasmtime's `memory_guaranteed_dense_image_size` default: data within this span is laid copy-on-write."""
_GLOBAL_EXPORT = "__snapshot_global_"
_PROXY_EXCEPTION = -1
_SETUP_FUEL = 1 << 62


class SnapshotError(RuntimeError):
    """The interpreter could not be set up, or what it left cannot be written as a module."""


@dataclass(frozen=True)
class SnapshotFacts:
    """What the snapshotter saw: for the build's report and the invariant tests."""

    memory_pages: int
    data_bytes: int
    segments: int
    tail_bytes: int
    changed_globals: tuple[int, ...]
    """Indices of the mutable globals whose value is no longer the module's initial one (baked in)."""


def _build_lookup(caller: Caller, reference: int, attribute_at: int, out: int) -> int:
    """`lookup_attr` while the snapshot is made: only the bridge module's `call` (anything else stops the setup,
    the refusal its reason)."""
    memory = caller.memory()
    attribute = memory.read(caller.context, attribute_at, attribute_at + 5)
    if reference != BRIDGE_MODULE_REF or attribute != b"call\x00":
        raise HostRefused(f"lookup of {attribute!r} on JavaScript reference {reference}")
    memory.write(caller.context, struct.pack("<iII", JS_OBJECT, BRIDGE_REF, 0), out)
    return 1


def _build_free(_caller: Caller, _reference: int) -> None:
    """`proxy_js_free_obj` while the snapshot is made: the collection that ends the setup (it compiled more than the
    collector's threshold before `gc.disable()` ran) finalises the bridge module's proxy, which `del` dropped."""


def _instrumented(sections: list[wb.Section]) -> tuple[bytes, list[wb.Global], int]:
    """The module with every defined global exported, so its value can be read after the setup."""
    globals_ = wb.read_globals(wb.find(sections, wb.GLOBAL))
    imported = wb.count_imports(wb.find(sections, wb.IMPORT), 3)
    exports = wb.read_exports(wb.find(sections, wb.EXPORT))
    exports += [wb.Export(f"{_GLOBAL_EXPORT}{index}", "global", imported + index) for index in range(len(globals_))]
    return wb.write_module(wb.replace_sections(sections, {wb.EXPORT: wb.write_exports(exports)})), globals_, imported


def _put_text(exports: Any, store: wasmtime.Store, memory: wasmtime.Memory, text: bytes) -> int:
    place = int(exports["malloc"](store, len(text) + 1))
    memory.write(store, text + b"\x00", place)
    return place


def _segments(image: bytes) -> list[wb.DataSegment]:
    """The runs of non-zero pages of `image`, one segment each."""
    zero = bytes(PAGE)
    segments: list[wb.DataSegment] = []
    start: int | None = None
    for offset in range(0, len(image), PAGE):
        empty = image[offset : offset + PAGE] == zero[: len(image) - offset if offset + PAGE > len(image) else PAGE]
        if not empty and start is None:
            start = offset
        elif empty and start is not None:
            segments.append(wb.DataSegment(start, image[start:offset]))
            start = None
    if start is not None:
        segments.append(wb.DataSegment(start, image[start:]))
    return segments


def _trimmed(segment: wb.DataSegment) -> wb.DataSegment:
    """The segment without its leading and trailing zero bytes."""
    data = segment.data.rstrip(b"\x00")
    stripped = data.lstrip(b"\x00")
    return wb.DataSegment(segment.offset + len(data) - len(stripped), stripped)


def take_snapshot(merged: bytes, heap_bytes: int, setup: str) -> tuple[bytes, SnapshotFacts]:
    """The snapshot module of `merged` with a heap of `heap_bytes` and `setup` run, and what was seen."""
    sections = wb.read_sections(merged)
    if wb.find(sections, wb.START) is not None:
        raise SnapshotError("the module has a start function")
    instrumented, globals_, _imported = _instrumented(sections)
    config = wasmtime.Config()
    config.wasm_exceptions = True
    config.consume_fuel = True
    engine = wasmtime.Engine(config)
    module = wasmtime.Module(engine, instrumented)
    linker = wasmtime.Linker(engine)
    define_host(linker, module, build={"lookup_attr": _build_lookup, "proxy_js_free_obj": _build_free})
    store = wasmtime.Store(engine)
    store.set_fuel(_SETUP_FUEL)
    bridge = Bridge((), {}, clock_ns=0)
    activate(bridge)
    try:
        instance = linker.instantiate(store, module)
        exports: Any = instance.exports(store)
        memory = exports["memory"]
        assert isinstance(memory, wasmtime.Memory)
        exports["emscripten_stack_init"](store)
        stack_top = int(exports["emscripten_stack_get_current"](store))
        exports["__wasm_call_ctors"](store)
        source = setup.encode()
        name = _put_text(exports, store, memory, BRIDGE_MODULE.encode())
        text = _put_text(exports, store, memory, source)
        cells = int(exports["malloc"](store, 24))
        exports["mp_js_init"](store, PYSTACK_WORDS, heap_bytes)
        exports["proxy_c_init"](store)
        memory.write(store, struct.pack("<iII", JS_OBJECT, BRIDGE_MODULE_REF, 0), cells)
        exports["mp_js_register_js_module"](store, name, cells)
        out = cells + 12
        try:
            exports["mp_js_do_exec"](store, text, len(source), out)
        except wasmtime.Trap as trapped:
            raise SnapshotError(f"the setup trapped: {bridge.stopped or trapped.message}") from trapped
        if bridge.stopped is not None:
            raise SnapshotError(f"the host stopped the setup: {bridge.stopped}")
        kind, length, text_at = struct.unpack("<iII", memory.read(store, out, out + 12))
        if kind == _PROXY_EXCEPTION:
            raise SnapshotError("the setup raised: " + memory.read(store, text_at, text_at + length).decode())
        if int(exports["emscripten_stack_get_current"](store)) != stack_top:
            raise SnapshotError("the C stack is not back at its start after the setup")
        after = [exports[f"{_GLOBAL_EXPORT}{index}"].value(store) for index in range(len(globals_))]
        for place in (name, text, cells):
            exports["free"](store, place)
        image = bytes(memory.read(store, 0, memory.data_len(store)))
        pages = int(memory.size(store))
    finally:
        activate(None)
    new_globals = []
    changed = []
    for index, (declared, new) in enumerate(zip(globals_, after, strict=True)):
        baked = wb.constant_init(declared.value_type, new) if declared.mutable else declared.init
        if baked != declared.init:
            changed.append(index)
        new_globals.append(wb.Global(declared.value_type, declared.mutable, baked))
    segments = _segments(image)
    tail = [_trimmed(s) for s in segments if s.offset + len(s.data) > segments[0].offset + DENSE_BYTES]
    segments = segments[: len(segments) - len(tail)]
    maximum = wb.read_memory(wb.find(sections, wb.MEMORY))[1]
    kept = [e for e in wb.read_exports(wb.find(sections, wb.EXPORT)) if e.name in KEPT_EXPORTS]
    replaced: dict[int, wb.Section | None] = {
        wb.GLOBAL: wb.write_globals(new_globals),
        wb.EXPORT: wb.write_exports(kept),
        wb.MEMORY: wb.write_memory(pages, maximum),
        wb.DATA: wb.write_data(segments),
        wb.DATA_COUNT: wb.Section(wb.DATA_COUNT, wb.unsigned_leb(len(segments)))
        if wb.find(sections, wb.DATA_COUNT) is not None
        else None,
    }
    snapshot = wb.write_module([*wb.replace_sections(sections, replaced), wb.write_tail(tail)])
    facts = SnapshotFacts(
        pages, sum(len(s.data) for s in segments), len(segments), sum(len(s.data) for s in tail), tuple(changed)
    )
    return snapshot, facts
