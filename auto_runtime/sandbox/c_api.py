"""A run's hot path through Wasmtime's C API, called directly in the library the `wasmtime` package loaded.

Why: for a trivial program, wasmtime-py's conveniences cost more than the guest's work. `Func.__call__` reads the
function's type and converts every value at each call, `Instance.exports` builds a map of every export, and a
host function defined with `Linker.define_func` converts every argument and makes a `Caller` at each call. Here
the same C functions are called with raw values (`wasmtime_func_call_unchecked`,
`wasmtime_linker_define_func_unchecked`): the same engine, store, limits, fuel and epoch deadline, the same traps,
only less Python around them. The library is `wasmtime._ffi.dll`, the one wasmtime-py already loaded (the version
`artifact.WASMTIME_VERSION` pins), so nothing native is added; the prototypes are declared here, with plain
addresses for pointers, so they do not depend on how wasmtime-py declares its own.

Failures come back as wasmtime-py's own exceptions (`wasmtime.Trap`, `wasmtime.WasmtimeError`), made from the
pointers the C API returned, so the callers classify an ending as before.

Concurrency: nothing here holds state across calls but the callbacks themselves (`host_function`), which live
for the process. A `Memory` or `Function` belongs to one store and is used on the thread running that store.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any, Final

import wasmtime
from wasmtime import _ffi as ffi

_LIB = ffi.dll
_P = ctypes.c_void_p
_SIZE = ctypes.c_size_t
_U64 = ctypes.c_uint64


def _prototype(name: str, restype: Any, *argtypes: Any) -> Any:
    return ctypes.CFUNCTYPE(restype, *argtypes)((name, _LIB))


_instance_pre_instantiate = _prototype("wasmtime_instance_pre_instantiate", _P, _P, _P, _P, _P)
_instance_export_get = _prototype("wasmtime_instance_export_get", ctypes.c_bool, _P, _P, ctypes.c_char_p, _SIZE, _P)
_caller_export_get = _prototype("wasmtime_caller_export_get", ctypes.c_bool, _P, ctypes.c_char_p, _SIZE, _P)
_caller_context = _prototype("wasmtime_caller_context", _P, _P)
_func_call_unchecked = _prototype("wasmtime_func_call_unchecked", _P, _P, _P, _P, _SIZE, _P)
_memory_data = _prototype("wasmtime_memory_data", _P, _P, _P)
_memory_data_size = _prototype("wasmtime_memory_data_size", _SIZE, _P, _P)
_memory_size = _prototype("wasmtime_memory_size", _U64, _P, _P)
_memory_grow = _prototype("wasmtime_memory_grow", _P, _P, _P, _U64, _P)
_context_set_fuel = _prototype("wasmtime_context_set_fuel", _P, _P, _U64)
_context_get_fuel = _prototype("wasmtime_context_get_fuel", _P, _P, _P)
_error_delete = _prototype("wasmtime_error_delete", None, _P)
_linker_define_func_unchecked = _prototype(
    "wasmtime_linker_define_func_unchecked", _P, _P, ctypes.c_char_p, _SIZE, ctypes.c_char_p, _SIZE, _P, _P, _P, _P
)

_RAW = ffi.wasmtime_val_raw_t
_RAW_BYTES: Final = ctypes.sizeof(_RAW)
_OF: Final = ffi.wasmtime_extern_t.of.offset
"""Where an extern's item (the function or memory) starts in a `wasmtime_extern_t`."""
_EXTERN_FUNC: Final = 0
_EXTERN_MEMORY: Final = 3
_CALLBACK = ctypes.CFUNCTYPE(_SIZE, _P, _P, _P, _SIZE)
"""`wasmtime_func_unchecked_callback_t`: (environment, caller, values, count) -> a trap, or 0."""


def _raise_failure(error: int | None, trap: int | None) -> None:
    """Raise what the C API returned, as wasmtime-py would: the error, else the trap."""
    if error:
        raise wasmtime.WasmtimeError._from_ptr(ctypes.cast(error, ctypes.POINTER(ffi.wasmtime_error_t)))
    if trap:
        raise wasmtime.Trap._from_ptr(ctypes.cast(trap, ctypes.POINTER(ffi.wasm_trap_t)))


def address(pointer: Any) -> int:
    """The address a wasmtime-py pointer (`store._context()`, `pre.ptr()`, `linker.ptr()`) holds."""
    value = ctypes.cast(pointer, _P).value
    if not value:
        raise ValueError("a null pointer")
    return int(value)


def context_of(store: wasmtime.Store) -> int:
    """The address of `store`'s context, what every call here takes."""
    return address(store._context())


class Memory:
    """A linear memory of one store: copies in and out, its size, its growth."""

    __slots__ = ("_extern", "_item")

    def __init__(self, extern: Any) -> None:
        self._extern = extern
        self._item = ctypes.addressof(extern) + _OF

    def size(self, context: int) -> int:
        """Bytes the memory holds now."""
        return int(_memory_data_size(context, self._item))

    def pages(self, context: int) -> int:
        return int(_memory_size(context, self._item))

    def read(self, context: int, start: int, stop: int) -> bytes:
        """The bytes of `memory[start:stop]`, bounded as a slice is (as `wasmtime.Memory.read`), in one copy."""
        begin, end, _ = slice(start, stop).indices(_memory_data_size(context, self._item))
        if end <= begin:
            return b""
        return ctypes.string_at(_memory_data(context, self._item) + begin, end - begin)

    def write(self, context: int, data: bytes, start: int) -> None:
        """Copy `data` in at `start`; `IndexError` when it does not fit (as `wasmtime.Memory.write`)."""
        size = _memory_data_size(context, self._item)
        begin = slice(start, None).indices(size)[0]
        if begin >= size or begin + len(data) > size:
            raise IndexError("index out of range")
        if data:
            ctypes.memmove(_memory_data(context, self._item) + begin, data, len(data))

    def grow(self, context: int, pages: int) -> bool:
        """Grow by `pages`; False when the store's limit or the memory's maximum refuses."""
        previous = _U64()
        error = _memory_grow(context, self._item, pages, ctypes.addressof(previous))
        if error:
            _error_delete(error)
            return False
        return True


class Function:
    """A function of one store taking i32 arguments and giving at most one i32 result. The call is unchecked: the
    caller knows the function's type (the snapshot's `malloc` and `mp_js_do_exec`)."""

    __slots__ = ("_extern", "_item")

    def __init__(self, extern: Any) -> None:
        self._extern = extern
        self._item = ctypes.addressof(extern) + _OF

    def __call__(self, context: int, *arguments: int) -> int:
        """Call it and return its result; raise `wasmtime.Trap` or `wasmtime.WasmtimeError` as wasmtime-py does.
        For a function with no result the value returned means nothing (the first argument's slot)."""
        values = (_RAW * max(len(arguments), 1))()
        for index, argument in enumerate(arguments):
            values[index].i32 = argument
        trap = _P()
        error = _func_call_unchecked(context, self._item, ctypes.addressof(values), len(values), ctypes.byref(trap))
        if error or trap:
            _raise_failure(error, trap.value)
        return int(values[0].i32)


def _item(found: bool, extern: Any, kind: int, name: bytes) -> Any:
    if not found or extern.kind != kind:
        what = "memory" if kind == _EXTERN_MEMORY else "function"
        raise wasmtime.WasmtimeError(f"the instance has no {what} {name!r}")
    return extern


class Instance:
    """An instance made from an `InstancePre` in a store, and its exports looked up by name."""

    __slots__ = ("_instance", "context")

    def __init__(self, pre: wasmtime.InstancePre, context: int) -> None:
        """Instantiate `pre` in the store whose context is `context` (copy-on-write from the module's image)."""
        self.context = context
        self._instance = ffi.wasmtime_instance_t()
        trap = _P()
        error = _instance_pre_instantiate(
            address(pre.ptr()), context, ctypes.addressof(self._instance), ctypes.byref(trap)
        )
        if error or trap:
            _raise_failure(error, trap.value)

    def _export(self, name: bytes, kind: int) -> Any:
        extern = ffi.wasmtime_extern_t()
        instance = ctypes.addressof(self._instance)
        found = _instance_export_get(self.context, instance, name, len(name), ctypes.addressof(extern))
        return _item(found, extern, kind, name)

    def memory(self, name: bytes = b"memory") -> Memory:
        return Memory(self._export(name, _EXTERN_MEMORY))

    def function(self, name: bytes) -> Function:
        return Function(self._export(name, _EXTERN_FUNC))


def set_fuel(context: int, fuel: int) -> None:
    error = _context_set_fuel(context, fuel)
    _raise_failure(error, None)


def get_fuel(context: int) -> int:
    fuel = _U64()
    _raise_failure(_context_get_fuel(context, ctypes.addressof(fuel)), None)
    return int(fuel.value)


class Caller:
    """What a host function is given: the calling store's context, and the caller's exports by name."""

    __slots__ = ("_caller", "context")

    def __init__(self, caller: int) -> None:
        self._caller = caller
        self.context: int = int(_caller_context(caller))

    def _export(self, name: bytes, kind: int) -> Any:
        extern = ffi.wasmtime_extern_t()
        found = _caller_export_get(self._caller, name, len(name), ctypes.addressof(extern))
        return _item(found, extern, kind, name)

    def memory(self, name: bytes = b"memory") -> Memory:
        return Memory(self._export(name, _EXTERN_MEMORY))

    def function(self, name: bytes) -> Function:
        return Function(self._export(name, _EXTERN_FUNC))


HostAnswer = Callable[..., int | float | None]
"""A host function: called with a `Caller` and the import's parameters, it returns the import's result (or None
when the import has none)."""


def _field(kind: wasmtime.ValType) -> str:
    if kind == wasmtime.ValType.i32():
        return "i32"
    if kind == wasmtime.ValType.i64():
        return "i64"
    if kind == wasmtime.ValType.f64():
        return "f64"
    if kind == wasmtime.ValType.f32():
        return "f32"
    raise TypeError(f"a host function with a {kind} value")


def host_function(
    answer: HostAnswer, kind: wasmtime.FuncType, on_failure: Callable[[Caller, BaseException], None]
) -> Any:
    """The C callback for an import of type `kind` answered by `answer`. Keep it alive as long as any linker that
    defines it.

    An exception `answer` raises never crosses into Wasmtime: `on_failure` is given it (the host stops the guest,
    `host_imports.stop_guest`) and the import returns zero."""
    parameters = tuple(_field(value) for value in kind.params)
    results = tuple(_field(value) for value in kind.results)
    if len(results) > 1:
        raise TypeError("a host function with more than one result")
    slots: Any = _RAW * max(len(parameters), len(results), 1)
    result = results[0] if results else None

    def callback(_environment: int | None, caller_at: int, values_at: int, _count: int) -> int:
        caller = Caller(caller_at)
        values = slots.from_address(values_at)
        try:
            answered = answer(caller, *[getattr(values[index], field) for index, field in enumerate(parameters)])
            if result is not None:
                setattr(values[0], result, answered)
        except BaseException as failure:  # nothing may unwind through Wasmtime's frames
            on_failure(caller, failure)
            if result is not None:
                setattr(values[0], result, 0)
        return 0

    return _CALLBACK(callback)


def define_unchecked(linker: wasmtime.Linker, module: str, name: str, kind: wasmtime.FuncType, callback: Any) -> None:
    """Define `module.name` of type `kind` on `linker` as the C callback `callback` (from `host_function`)."""
    module_bytes = module.encode()
    name_bytes = name.encode()
    error = _linker_define_func_unchecked(
        address(linker.ptr()),
        module_bytes,
        len(module_bytes),
        name_bytes,
        len(name_bytes),
        address(kind.ptr()),
        ctypes.cast(callback, _P),
        None,
        None,
    )
    _raise_failure(error, None)
