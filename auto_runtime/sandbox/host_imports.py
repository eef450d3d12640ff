"""The host's answers to the snapshot module's imports: what the interpreter may ask of the world, and no more.

The module (MicroPython's WebAssembly port, `build.py`) imports 48 functions once its setjmp/longjmp
trampolines are merged in. The host answers them as the computation page says:

- Output: `fd_write` to 1 and 2 is kept, up to `LOG_BYTES` each, in the run's `Bridge` (`stdout`, `stderr`), for
  the log only; `fd_read` reads nothing, `fd_close` and `fd_sync` succeed, `fd_seek` fails (`ESPIPE`).
- Files: every `__syscall_*` fails, `ENOENT` for those that name a path and `ENOSYS` for the rest.
- Clocks and seeds: `mp_js_time_ms` and `mp_js_ticks_ms` answer the run's clock (`Bridge.clock_ns`), and
  `mp_js_random_u32` a value made from it, read at run time, never from the snapshot.
- Memory: `emscripten_resize_heap` grows the memory to the size asked, as far as the store's limit allows.
- The bridge: the prelude's `host.call(name, payload)` is a call of one JavaScript function (`BRIDGE_REF`) through
  `calln`; its answer comes back as a string the host places in the guest's memory with the guest's `malloc`.
- Every other JavaScript-proxy import (`call0`, `lookup_attr`, `js_subscr_load`, ...), `_abort_js`, and `calln`
  of anything but the bridge, traps. The build answers one `lookup_attr` more (`build_lookup`), while it sets the
  bridge up in the snapshot; a run never can.

Every function finds its run through `bridge.active_bridge()` (a thread-local: a store runs on one thread). Each is
defined on the linker as a C callback taking raw values (`c_api.host_function`): wasmtime-py's trampolines cost
more than the calls' work. The callbacks are made once per process and import (`_CALLBACKS`), since a linker
keeps only their addresses.

How the host stops a guest: never by raising from a host function (nothing may unwind through Wasmtime's frames):
a host function records why on the run's bridge (`Bridge.stopped`) and takes the store's fuel away, and the guest
traps `OUT_OF_FUEL` at its next instruction that counts fuel; an exception a host function raises anyway stops
the guest the same way, with the exception as the reason. `store_run` reads `Bridge.stopped` to tell that trap
from work used up. The bridge's `result` stops the guest the same way (`FINISHED`): nothing of a run goes on after
its result.
"""

from __future__ import annotations

import struct
from typing import Any

import wasmtime

from auto_runtime.sandbox import c_api
from auto_runtime.sandbox.bridge import FINISHED, Bridge, active_bridge
from auto_runtime.sandbox.c_api import Caller, Memory

BRIDGE_MODULE = "_host_bridge"
"""The name the bridge's JavaScript module is registered under while the snapshot is made (then removed)."""
BRIDGE_MODULE_REF = 2
"""The JavaScript reference of the bridge's module object (0 and 1 are `globalThis` and `undefined`)."""
BRIDGE_REF = 3
"""The JavaScript reference of the bridge's one function, `call`."""

# The kinds of a 12-byte proxy value (MicroPython's proxy_js.js, 1.27.0).
MP_INT = 3
MP_STR = 5
JS_NULL = 1
JS_STRING = 5
JS_OBJECT = 7

_ENOENT = 44
_ENOSYS = 52
_ESPIPE = 70
_PAGE = 65536

_PATH_SYSCALLS = (
    "__syscall_chdir",
    "__syscall_mkdirat",
    "__syscall_openat",
    "__syscall_renameat",
    "__syscall_rmdir",
    "__syscall_stat64",
    "__syscall_newfstatat",
    "__syscall_lstat64",
    "__syscall_statfs64",
    "__syscall_unlinkat",
)

JS_PROXY_IMPORTS = (
    "proxy_convert_mp_to_js_then_js_to_mp_obj_jsside",
    "proxy_convert_mp_to_js_then_js_to_js_then_js_to_mp_obj_jsside",
    "js_get_proxy_js_ref_info",
    "call0_kwarg",
    "calln_kwarg",
    "call1",
    "call2",
    "calln",
    "call0",
    "lookup_attr",
    "store_attr",
    "js_subscr_load",
    "js_subscr_store",
    "has_attr",
    "js_get_iter",
    "proxy_js_free_obj",
    "js_reflect_construct",
    "js_iter_next",
    "js_check_existing",
    "js_get_error_info",
    "js_then_resolve",
    "create_promise",
    "js_then_continue",
    "js_then_reject",
)
"""The imports that reach JavaScript objects: all trap but `calln` of the bridge."""


class HostRefused(RuntimeError):
    """The module imports something this host does not answer (raised while the linker is set up)."""


_NO_RUN = Bridge((), {}, clock_ns=0)
"""Answers a host function called on a thread with no active run (it stops the guest)."""


def _bridge() -> Bridge:
    bridge = active_bridge()
    if bridge is None:
        _NO_RUN.stopped = "a host function was called with no run active on its thread"
        return _NO_RUN
    return bridge


def stop_guest(caller: Caller, bridge: Bridge, why: str) -> None:
    """Record why on the bridge (the first reason stays) and take the store's fuel: the guest traps at once."""
    if bridge.stopped is None:
        bridge.stopped = why
    c_api.set_fuel(caller.context, 0)


def _failed(caller: Caller, failure: BaseException) -> None:
    stop_guest(caller, _bridge(), f"a host function failed: {type(failure).__name__}: {failure}")


def _memory(caller: Caller, bridge: Bridge) -> Memory:
    if bridge.memory is None:
        bridge.memory = caller.memory()
    return bridge.memory


def _fd_write(caller: Caller, fd: int, iovs: int, count: int, written_at: int) -> int:
    bridge = _bridge()
    memory = _memory(caller, bridge)
    context = caller.context
    vectors = memory.read(context, iovs, iovs + 8 * count)
    total = 0
    log = bridge.stdout if fd == 1 else bridge.stderr
    for index in range(len(vectors) // 8):
        pointer, length = struct.unpack_from("<II", vectors, 8 * index)
        if fd in (1, 2):
            log.write(memory.read(context, pointer, pointer + length))
        total += length
    memory.write(context, struct.pack("<I", total), written_at)
    return 0


def _fd_read(caller: Caller, _fd: int, _iovs: int, _count: int, read_at: int) -> int:
    _memory(caller, _bridge()).write(caller.context, struct.pack("<I", 0), read_at)
    return 0


_NULL_ANSWER = struct.pack("<iII", JS_NULL, 0, 0)


def _calln(caller: Caller, function: int, _via_call: int, count: int, values: int, out: int) -> int:
    """The bridge: `host.call(name, payload, length)`, the payload a string, or an address and a length."""
    bridge = _bridge()
    if function != BRIDGE_REF or count != 3:
        stop_guest(caller, bridge, f"a call of JavaScript reference {function} with {count} arguments")
        return 0
    memory = _memory(caller, bridge)
    context = caller.context
    cells = memory.read(context, values, values + 36)
    name_kind, name_length, name_at = struct.unpack_from("<iII", cells, 0)
    payload_kind, first, second = struct.unpack_from("<iII", cells, 12)
    length_kind, length = struct.unpack_from("<iI", cells, 24)
    if name_kind != MP_STR or length_kind != MP_INT:
        stop_guest(caller, bridge, "a bridge call with arguments of the wrong kinds")
        return 0
    name = memory.read(context, name_at, name_at + name_length).decode("utf-8", "replace")
    if payload_kind == MP_STR:
        payload = memory.read(context, second, second + first)
    elif payload_kind == MP_INT:
        payload = memory.read(context, first, first + length) if length else b""
    else:
        stop_guest(caller, bridge, "a bridge payload that is neither text nor an address")
        return 0
    answer = bridge.call(name, payload)
    if answer is None:
        memory.write(context, _NULL_ANSWER, out)
        stop_guest(caller, bridge, bridge.refused or f"the bridge call {name!r} was refused")
        return 0
    if name == "result" and bridge.result is not None:
        memory.write(context, _NULL_ANSWER, out)
        stop_guest(caller, bridge, FINISHED)
        return 0
    if bridge.malloc is None:
        bridge.malloc = caller.function(b"malloc")
    place = bridge.malloc(context, len(answer) + 1)
    if place == 0:
        memory.write(context, _NULL_ANSWER, out)
        stop_guest(caller, bridge, "the guest had no memory left for a bridge answer")
        return 0
    memory.write(context, answer + b"\x00", place)
    memory.write(context, struct.pack("<iII", JS_STRING, len(answer), place), out)
    return 0


def _time_ms(_caller: Caller) -> float:
    return float(_bridge().clock_ns // 1_000_000)


def _ticks_ms(_caller: Caller) -> int:
    return (_bridge().clock_ns // 1_000_000) & 0x3FFFFFFF


def _random_u32(_caller: Caller) -> int:
    value = ((_bridge().clock_ns // 1_000_000) * 2654435761) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _resize_heap(caller: Caller, requested: int) -> int:
    memory = _memory(caller, _bridge())
    current = memory.pages(caller.context)
    wanted = ((requested & 0xFFFFFFFF) + _PAGE - 1) // _PAGE
    if wanted <= current:
        return 1
    return 1 if memory.grow(caller.context, wanted - current) else 0


def _failing(errno: int) -> c_api.HostAnswer:
    def syscall(_caller: Caller, *_args: int) -> int:
        return -errno

    return syscall


def _refusing(name: str, results: int) -> c_api.HostAnswer:
    """A host function that stops the guest; its result (if the import has one) is never read."""

    def refused(caller: Caller, *_args: Any) -> int | None:
        stop_guest(caller, _bridge(), f"the sandbox gives no {name}")
        return 0 if results else None

    return refused


def _constant(value: int) -> c_api.HostAnswer:
    def answer(_caller: Caller, *_args: int) -> int:
        return value

    return answer


_CALLBACKS: dict[tuple[str, str, str], Any] = {}
"""The C callbacks made so far, by (what answers, import name, type): made once, kept for the process (a linker
keeps only their addresses). Bounded by the imports of the pinned module and the build's few answers."""


def _signature(kind: wasmtime.FuncType) -> str:
    return f"{[str(value) for value in kind.params]}->{[str(value) for value in kind.results]}"


def _define(
    linker: wasmtime.Linker, imported: wasmtime.ImportType, kind: wasmtime.FuncType, key: str, answer: c_api.HostAnswer
) -> None:
    name = imported.name or ""
    slot = (key, name, _signature(kind))
    callback = _CALLBACKS.get(slot)
    if callback is None:
        callback = _CALLBACKS[slot] = c_api.host_function(answer, kind, _failed)
    c_api.define_unchecked(linker, imported.module, name, kind, callback)


def define_host(
    linker: wasmtime.Linker, module: wasmtime.Module, build: dict[str, c_api.HostAnswer] | None = None
) -> None:
    """Define an answer for every import of `module` on `linker`; `build` answers a few JavaScript-proxy imports
    while the snapshot is made (never at run time).

    An import this host does not know stops here (`HostRefused`): a new module is checked, never guessed at."""
    answers: dict[str, c_api.HostAnswer] = {
        "_abort_js": _refusing("abort", 0),
        "fd_write": _fd_write,
        "fd_read": _fd_read,
        "calln": _calln,
        "emscripten_resize_heap": _resize_heap,
        "fd_close": _constant(0),
        "fd_sync": _constant(0),
        "fd_seek": _constant(_ESPIPE),
        "mp_js_time_ms": _time_ms,
        "mp_js_ticks_ms": _ticks_ms,
        "mp_js_random_u32": _random_u32,
    }
    for imported in module.imports:
        name = imported.name
        kind = imported.type
        if not isinstance(kind, wasmtime.FuncType) or name is None:
            raise HostRefused(f"the module imports {imported.module}.{name}, which is not a function")
        if build is not None and name in build:
            _define(linker, imported, kind, "build", build[name])
        elif name in answers:
            _define(linker, imported, kind, "run", answers[name])
        elif name.startswith("__syscall_"):
            _define(linker, imported, kind, "run", _failing(_ENOENT if name in _PATH_SYSCALLS else _ENOSYS))
        elif name in JS_PROXY_IMPORTS:
            _define(linker, imported, kind, "run", _refusing(f"JavaScript ({name})", len(kind.results)))
        else:
            raise HostRefused(f"the module imports {imported.module}.{name}, which this host does not answer")
