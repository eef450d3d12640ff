"""The run's hot path through Wasmtime's C API (`sandbox/c_api.py`) behaves as wasmtime-py's own calls did: the
same bounds on memory, the same exceptions for traps, and a host function that fails stops its guest instead of
unwinding through Wasmtime. No ledger: the subject is the sandbox alone."""

from __future__ import annotations

import time

import pytest
import wasmtime

from auto_runtime.sandbox import c_api
from auto_runtime.sandbox.bridge import Bridge
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.interruption import RunControl
from auto_runtime.sandbox.store_run import StoreSession, run_store

MODULE = """(module
  (memory (export "memory") 1)
  (data (i32.const 0) "abcdefghij")
  (func (export "add") (param i32 i32) (result i32) (i32.add (local.get 0) (local.get 1)))
  (func (export "broken") unreachable)
  (func (export "spin") (loop (br 0))))"""
PAGE = 65536


def _store(engine: SandboxEngine) -> wasmtime.Store:
    store = wasmtime.Store(engine.engine)
    store.set_fuel(10**6)
    store.set_epoch_deadline(10**9)
    return store


@pytest.fixture
def pre(engine: SandboxEngine) -> wasmtime.InstancePre:
    module = wasmtime.Module(engine.engine, wasmtime.wat2wasm(MODULE))
    return wasmtime.Linker(engine.engine).instantiate_pre(module)


def test_memory_is_bounded_as_wasmtime_memory_bounds_it(engine: SandboxEngine, pre: wasmtime.InstancePre) -> None:
    theirs_store = _store(engine)
    theirs = pre.instantiate(theirs_store).exports(theirs_store)["memory"]
    assert isinstance(theirs, wasmtime.Memory)
    ours_store = _store(engine)
    context = c_api.context_of(ours_store)
    ours = c_api.Instance(pre, context).memory()
    assert ours.size(context) == theirs.data_len(theirs_store) == PAGE
    for start, stop in ((0, 10), (2, 5), (5, 2), (-3, PAGE), (PAGE - 2, PAGE + 10), (PAGE, PAGE + 1), (-PAGE * 2, 4)):
        assert ours.read(context, start, stop) == bytes(theirs.read(theirs_store, start, stop)), (start, stop)
    for start, data in ((0, b"xy"), (PAGE - 2, b"zz"), (-2, b"ww")):
        theirs.write(theirs_store, data, start)
        ours.write(context, data, start)
    assert ours.read(context, 0, PAGE) == bytes(theirs.read(theirs_store, 0, PAGE))
    for start, data in ((PAGE - 1, b"ab"), (PAGE, b"a"), (PAGE * 2, b"")):
        with pytest.raises(IndexError):
            theirs.write(theirs_store, data, start)
        with pytest.raises(IndexError):
            ours.write(context, data, start)
    assert ours.pages(context) == 1
    assert ours.grow(context, 2) and ours.pages(context) == 3
    assert not ours.grow(context, 1 << 20)


def test_calls_answer_and_trap_as_wasmtime_py_calls_do(engine: SandboxEngine, pre: wasmtime.InstancePre) -> None:
    store = _store(engine)
    context = c_api.context_of(store)
    instance = c_api.Instance(pre, context)
    assert instance.function(b"add")(context, 40, 2) == 42
    assert instance.function(b"add")(context, -1, 0) == -1
    with pytest.raises(wasmtime.Trap) as broken:
        instance.function(b"broken")(context)
    assert broken.value.trap_code == wasmtime.TrapCode.UNREACHABLE
    c_api.set_fuel(context, 1000)
    with pytest.raises(wasmtime.Trap) as spun:
        instance.function(b"spin")(context)
    assert spun.value.trap_code == wasmtime.TrapCode.OUT_OF_FUEL
    assert c_api.get_fuel(context) == 0
    with pytest.raises(wasmtime.WasmtimeError, match="no function b'missing'"):
        instance.function(b"missing")
    with pytest.raises(wasmtime.WasmtimeError, match="no memory b'add'"):
        instance.memory(b"add")


def test_a_host_function_that_fails_stops_its_guest_with_the_failure_as_the_reason(engine: SandboxEngine) -> None:
    def failing() -> None:
        raise RuntimeError("the hook broke")

    bridge = Bridge(("input",), {"input": b"1"}, clock_ns=0, on_call={"input": failing})
    code = "_a = _call('input', '')\n_import('builtins').print('went on')"
    ending = run_store(engine, StoreSession(engine, 10**10), code, bridge, RunControl(time.monotonic() + 10))
    assert ending.exit_code is None and ending.trap is None
    assert ending.error == "the host stopped the guest: a host function failed: RuntimeError: the hook broke"
    assert ending.stdout == ""
    after = run_store(
        engine,
        StoreSession(engine, 10**10),
        "_import('builtins').print(1)",
        Bridge((), {}, 0),
        RunControl(time.monotonic() + 10),
    )
    assert after.clean and after.stdout == "1\n"
