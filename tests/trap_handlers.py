"""The sandbox's trap handlers stay installed for as long as the test process lives.

Wasmtime turns a guest's trap (an `unreachable`, a stack overflow, a division by zero) into an error through
handlers of SIGILL, SIGSEGV and SIGFPE that it installs once per process, when the first engine is made, chained
to the handlers installed before it. Anything that later restores an older disposition removes them, and the
next trap of any guest in that process kills it with an `Illegal instruction`, far from the cause. Python's
`faulthandler.disable()` restores the dispositions it found, and so does the end of a pytest session run inside
this one (pytest's faulthandler plugin disables and enables it again at its `unconfigure`: a `pytester.inline_run`
or `inline_genitems` without `-p no:faulthandler`); under `pytest-xdist` the worker then died in some later test
of a module that had nothing to do with it.

`handlers_of_wasmtime` reads the signals whose handler lives in Wasmtime's library now; the root conftest reads
them around every test, and when one was replaced during a test it puts Wasmtime's back (so the rest of the
session runs as it would have) and fails that test (`tests/conftest.py`, `sandbox_trap_handlers_kept`). Linux
only, as the suite is: dispositions are read and written with `sigaction(2)`, their library found with
`dladdr(3)`.
"""

from __future__ import annotations

import ctypes
import signal
from typing import Final

WASMTIME_LIBRARY: Final = "_libwasmtime.so"
SIGNALS: Final = (signal.SIGILL, signal.SIGSEGV, signal.SIGFPE)
"""The signals Wasmtime handles on x86-64 Linux (`foreach_handler` in its `signals.rs`)."""


class _SigAction(ctypes.Structure):
    """glibc's `struct sigaction` on x86-64: the handler, a 1024-bit mask, the flags and the restorer."""

    _fields_ = [
        ("handler", ctypes.c_void_p),
        ("mask", ctypes.c_ulong * 16),
        ("flags", ctypes.c_int),
        ("restorer", ctypes.c_void_p),
    ]


class _DlInfo(ctypes.Structure):
    _fields_ = [
        ("fname", ctypes.c_char_p),
        ("fbase", ctypes.c_void_p),
        ("sname", ctypes.c_char_p),
        ("saddr", ctypes.c_void_p),
    ]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.sigaction.argtypes = [ctypes.c_int, ctypes.POINTER(_SigAction), ctypes.POINTER(_SigAction)]
_libc.dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]


def _library_of(address: int) -> str:
    info = _DlInfo()
    if address in (0, 1) or not _libc.dladdr(address, ctypes.byref(info)) or not info.fname:
        return ""
    return bytes(info.fname).decode(errors="replace")


def _disposition(signum: int) -> _SigAction:
    found = _SigAction()
    if _libc.sigaction(signum, None, ctypes.byref(found)) != 0:
        raise OSError(ctypes.get_errno(), f"sigaction({signum}) could not be read")
    return found


def handlers_of_wasmtime() -> dict[signal.Signals, _SigAction]:
    """Each of `SIGNALS` whose handler is Wasmtime's now, with its whole disposition."""
    found = {signum: _disposition(signum) for signum in SIGNALS}
    return {
        signum: action
        for signum, action in found.items()
        if _library_of(action.handler or 0).endswith(WASMTIME_LIBRARY)
    }


def put_back(before: dict[signal.Signals, _SigAction]) -> list[str]:
    """Install again each disposition of `before` that has been replaced since, and name each one that was,
    with where the signal had gone: what a test must never leave behind."""
    replaced = []
    for signum, action in before.items():
        now = _disposition(signum).handler or 0
        if now == (action.handler or 0):
            continue
        where = _library_of(now) or ("the default action" if now == 0 else "ignored" if now == 1 else hex(now))
        replaced.append(f"{signum.name} went to {where}")
        if _libc.sigaction(signum, ctypes.byref(action), None) != 0:
            raise OSError(ctypes.get_errno(), f"sigaction({signum}) could not be set")
    return replaced
