"""The runtime's own MicroPython code that runs before, around and after a program.

`PRELUDE_SETUP` runs once, when the snapshot is made (`guest.py`, `snapshot.py`): it turns the collector off
(`gc.disable()`: nothing is collected during a run), keeps private references to what it needs, guards
imports, replaces the refused builtins, and defines the writer. Every run starts from that state and calls one
of its entry functions, which talk to the host through the bridge (`host.call`), whose functions answer once
each and in order:

- `_run` (`RUN_DEFINITION`, entered by `EVALUATE_ENTRY`) asks for `program`, then `input`, then calls `start`
  right before the entry function and `end` right after it, then sends `result` once. `dir()` without an
  argument lists the program's own top-level names, not the `__name__` the prelude gives it (MicroPython's
  lists the module the entry function was called from, which is the prelude's).
- `_compile_only` (`COMPILE_DEFINITION`, entered by `COMPILE_ENTRY`) asks for `program`, compiles it without
  running it, and sends `result`.

Isolation invariant: nothing the prelude hands to a program leads back to the prelude. In MicroPython a
function defined in Python exposes `__globals__` (its module's dict; there is no `__closure__`, no
`__defaults__`, no bound method `__self__`, no frame or traceback object), so a replaced builtin defined at
the prelude's top level would hand a program the prelude's globals: the real `__import__`, `exec`,
`compile`, the bridge, the allow list. The objects a program can reach (the import guard, `dir`, the
refused builtins' stand-in, the `time` stand-in, its class and its methods) are therefore made by one
factory, compiled with `exec` into a namespace of their own (`_guards`) that is emptied once the factory
ran: their `__globals__` is that empty dict, and everything they use is a closure cell, which MicroPython
gives no attribute to read (a closure's `repr` prints its cells' `repr`, text only). They look up no global
name when called, so what a program writes into that dict changes nothing they do. The factory reuses the
identifiers the prelude already has: every new identifier is a new interned string, and each `str` a
program creates searches the interned strings, so new ones would add work to every program. The
allowed modules are the artifact's native modules, whose functions have no `__globals__` and whose
`__dict__` holds only their own functions.

A result payload starts with one tag character:
`O` the output in the writer's wire form (see `wire.py`); `R` raised `[type, traceback, text]`;
`M` out of memory in the program `[traceback]`;
`W` not JSON `[what, tokens]` and `D` too deep `[tokens]`, each followed by a newline and the wire
form written before the problem, whose exact size the host measures; `L` too large; `H` the heap ran
out while writing; for the compile prelude, `C` compiled, `S` `[traceback, message]` a syntax error and
`E` followed by the type name of any other exception compiling raised (`MemoryError`, `RuntimeError`).

The writer builds bytes, never new `str` objects (creating a `str` costs the artifact a search of its
interned strings). It counts a lower bound of the output's JSON size as it writes (a float as 3 or 4
bytes; everything else exactly) and stops with `L` only when even that passes
the bound, so it never refuses an output that fits. The host measures exactly: the whole output, or the
text written before a problem, which is too large when it passes the bound before the walk got there.
"""

from __future__ import annotations

PRELUDE_SETUP = r"""
import gc
gc.disable()
import builtins
import host
import json
import sys
import io
import time as _clock_module
import struct as _struct_module
import binascii as _binascii_module
from collections import OrderedDict as _OrderedDict

_reserve = [None] * 16384
_call = host.call
_loads = json.loads
_dumps = json.dumps
_compile = compile
_exec = exec
_id = id
_setattr = setattr
_type = type
_len = len
_str = str
_pack = _struct_module.pack
_min = min
_SHORT_ESCAPES = (8, 9, 10, 12, 13)
_hexlify = _binascii_module.hexlify
_sorted = sorted
_int = int
_BaseException = BaseException
_MemoryError = MemoryError
_print_exception = sys.print_exception
_StringIO = io.StringIO
_import = builtins.__import__
_time = _clock_module.time
_time_ns = _clock_module.time_ns
_INF = float("inf")
_MAX_INT = 9007199254740991
_DEPTH = 512
_OUTSIDE = "an integer outside \u00b19,007,199,254,740,991"


# The stand-ins a program reaches are made in a namespace of their own (see the module docstring), emptied
# once made; its `__name__` gives `type(time).__module__` the "__main__" it had. `_program_names[0]` is
# the dict the program runs in, which `dir()` lists.
_guards = {"__name__": "__main__"}
_exec('''
def _guards(_import, _time, _time_ns, _int, _dir, _sorted, ImportError, NameError):
    _ALLOWED = ("math", "re", "json", "collections", "heapq")
    _program_names = [{}]
    _BEFORE = (0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334)

    def _gmtime(seconds):
        days = seconds // 86400
        rest = seconds - days * 86400
        era = (days + 719468) // 146097
        day = days + 719468 - era * 146097
        year = (day - day // 1460 + day // 36524 - day // 146096) // 365
        day -= 365 * year + year // 4 - year // 100
        month = (5 * day + 2) // 153
        date = day - (153 * month + 2) // 5 + 1
        month = month + 3 if month < 10 else month - 9
        year += era * 400 + (1 if month <= 2 else 0)
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return (year, month, date, rest // 3600, rest % 3600 // 60, rest % 60, (days + 3) % 7,
                _BEFORE[month - 1] + date + (1 if leap and month > 2 else 0), 0)

    class _RunClock:
        @staticmethod
        def time():
            return _time()

        @staticmethod
        def time_ns():
            return _time_ns()

        @staticmethod
        def gmtime(seconds=None):
            if seconds is None:
                return _gmtime(_time_ns() // 1000000000)
            return _gmtime(_int(seconds // 1))

    _run_clock = _RunClock()

    def _guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0:
            if name == "time":
                return _run_clock
            if name in _ALLOWED:
                return _import(name, globals, locals, fromlist, level)
        raise ImportError("no module named '" + name + "'")

    def _refused(*args, **kwargs):
        raise NameError("not available in the sandbox")

    def _program_dir(*args):
        if args:
            return _dir(*args)
        return _sorted([name for name in _program_names[0] if not name.startswith("__")])

    return _guarded_import, _refused, _program_dir, _program_names
''', _guards)
_guarded_import, _refused, _program_dir, _program_names = _guards.pop("_guards")(
    _import, _time, _time_ns, _int, dir, _sorted, ImportError, NameError
)
_guards.clear()
builtins.__import__ = _guarded_import
builtins.dir = _program_dir
for _name in ("eval", "exec", "compile", "open", "input", "print", "help", "globals", "locals", "vars",
              "getattr", "setattr", "delattr", "id", "breakpoint", "exit", "quit", "execfile"):
    try:
        _setattr(builtins, _name, _refused)
    except _BaseException:
        pass


def _lone_surrogate(encoded):
    at = encoded.find(b"\xed")
    while at >= 0:
        if encoded[at + 1] >= 0xA0:
            return True
        at = encoded.find(b"\xed", at + 1)
    return False


def _text_size(encoded):
    size = _len(encoded) + 2 + encoded.count(b'"') + encoded.count(b"\\")
    if encoded and _min(encoded) < 32:
        for byte in encoded:
            if byte < 32:
                size += 1 if byte in _SHORT_ESCAPES else 5
    return size


def _tokens(stack):
    tokens = []
    for frame in stack:
        if frame[1] is None:
            tokens.append(frame[3] - 1)
        else:
            tokens.append(frame[1][frame[3] - 1])
    return tokens


def _problem(tag, body, parts):
    parts[0] = tag + _dumps(body).encode() + b"\n"
    return b"".join(parts)


def _write(value, limit):
    parts = [b"O"]
    size = 0
    stack = []
    on_path = {}
    pending = value
    have = True
    while True:
        if have:
            have = False
            kind = _type(pending)
            if pending is None:
                parts.append(b"n")
                size += 4
            elif kind is bool:
                if pending:
                    parts.append(b"t")
                    size += 4
                else:
                    parts.append(b"f")
                    size += 5
            elif kind is str:
                encoded = pending.encode()
                if _lone_surrogate(encoded):
                    return _problem(b"W", ["text that is not valid Unicode", _tokens(stack)], parts)
                parts.append(b"s%d:" % _len(encoded))
                parts.append(encoded)
                size += _text_size(encoded)
            elif kind is int:
                if pending > _MAX_INT or pending < -_MAX_INT:
                    return _problem(b"W", [_OUTSIDE, _tokens(stack)], parts)
                written = b"i%d;" % pending
                parts.append(written)
                size += _len(written) - 2
            elif kind is float:
                if pending != pending or pending == _INF or pending == -_INF:
                    return _problem(b"W", ["a float that is not finite", _tokens(stack)], parts)
                parts.append(b"d")
                parts.append(_hexlify(_pack("<d", pending)))
                parts.append(b";")
                size += 3 if pending >= 0 else 4
            elif kind is list or kind is tuple or kind is dict or kind is _OrderedDict:
                ident = _id(pending)
                if ident in on_path:
                    return _problem(b"W", ["a container that contains itself", _tokens(stack)], parts)
                if _len(stack) >= _DEPTH:
                    return _problem(b"D", _tokens(stack), parts)
                if kind is list or kind is tuple:
                    parts.append(b"[")
                    stack.append([pending, None, _len(pending), 0])
                else:
                    keys = []
                    for key in pending:
                        if _type(key) is not str:
                            return _problem(b"W", ["a key that is not text", _tokens(stack)], parts)
                        if _lone_surrogate(key.encode()):
                            return _problem(b"W", ["text that is not valid Unicode", _tokens(stack)], parts)
                        keys.append(key)
                    if kind is dict:
                        keys = _sorted(keys)
                    parts.append(b"{")
                    stack.append([pending, keys, _len(keys), 0])
                on_path[ident] = True
                size += 2
            else:
                return _problem(b"W", ["a value of type " + kind.__name__, _tokens(stack)], parts)
            if size > limit:
                return "L"
        if not stack:
            break
        frame = stack[-1]
        container = frame[0]
        keys = frame[1]
        index = frame[3]
        if index == frame[2]:
            stack.pop()
            del on_path[_id(container)]
            parts.append(b"]" if keys is None else b"}")
            continue
        frame[3] = index + 1
        if index > 0:
            size += 1
        if keys is None:
            pending = container[index]
        else:
            key = keys[index]
            encoded = key.encode()
            parts.append(b"s%d:" % _len(encoded))
            parts.append(encoded)
            size += _text_size(encoded) + 1
            pending = container[key]
        have = True
    return b"".join(parts)


def _trace_head(error):
    stream = _StringIO()
    _print_exception(error, stream)
    trace = stream.getvalue()
    at = trace.find("\n") + 1
    while at > 0 and trace.startswith("  File ", at):
        at = trace.find("\n", at) + 1
    return trace[:at] if at > 0 else trace[:4096]


def _report_raised(error):
    head = _trace_head(error)
    if _type(error) is _MemoryError:
        return "M" + _dumps([head])
    try:
        text = _str(error)
    except _BaseException:
        text = ""
    if _len(text) > 1025:
        text = text[:1025]
    return "R" + _dumps([_type(error).__name__, head, text])
"""
"""The setup every entry shares: run once, in the snapshot."""

RUN_DEFINITION = r"""
def _run():
    request = _loads(_call("program", ""))
    names = {"__name__": "program"}
    _program_names[0] = names
    try:
        _exec(_compile("\n" * (request["first_line"] - 1) + request["source"], "program", "exec"), names)
        entry = names[request["entry"]]
    except _BaseException as error:
        _reserve.clear()
        return _report_raised(error)
    argument = _loads(_call("input", ""))
    _call("start", "")
    try:
        value = entry(argument)
        failure = None
    except _BaseException as error:
        value = None
        failure = error
    _call("end", "")
    if failure is not None:
        _reserve.clear()
        return _report_raised(failure)
    try:
        return _write(value, request["limit"])
    except _MemoryError:
        _reserve.clear()
        return "H"
"""

COMPILE_DEFINITION = r"""
def _compile_only():
    request = _loads(_call("program", ""))
    try:
        _compile("\n" * (request["first_line"] - 1) + request["source"], "program", "exec")
        return "C"
    except SyntaxError as error:
        stream = _StringIO()
        _print_exception(error, stream)
        return "S" + _dumps([stream.getvalue(), _str(error.args[0]) if error.args else ""])
    except _BaseException as error:
        return "E" + _type(error).__name__
"""

EVALUATE_ENTRY = '_call("result", _run())'
"""What a computation run, a recall answer or a `where` test executes in a fresh instance of the snapshot."""

COMPILE_ENTRY = '_call("result", _compile_only())'
"""What the save-time compile pass executes in a fresh instance of the snapshot."""
