"""Which of the artifact's functions are its `re` engine's, learned from the artifact itself.

MicroPython's `re` is a recursive backtracking engine: a pattern such as `(a*)*b`, or one of thousands of
nested groups, recurses without bound and overflows the sandbox's stack, a `STACK_OVERFLOW` trap. The page
counts re's steps as work, so such a trap while `main` runs is work used up, not the runtime breaking.

The snapshot carries no function names, so the first time an engine needs to know, two probes overflow the
stack on purpose, in re's matcher and in its compiler (executed in a fresh instance of the snapshot, where the
prelude's import guard allows `re`), and the functions on their traps' stacks are re's.
The answer is kept per engine (the module is fixed for an engine's life); the probes run on the calling
thread, under a lock, in small stores of their own, and cost a few milliseconds once.
"""

from __future__ import annotations

import threading
import time
import weakref

from auto_runtime.sandbox.bridge import Bridge
from auto_runtime.sandbox.engine import SandboxEngine
from auto_runtime.sandbox.interruption import RunControl
from auto_runtime.sandbox.limits import PRELUDE_FUEL
from auto_runtime.sandbox.store_run import StoreSession, run_store

PROBES = (
    "import re\nre.match('(a*)*b', 'a')\n",
    "import re\nre.compile('(' * 100000 + 'a' + ')' * 100000)\n",
)
PROBE_SECONDS = 5.0

_lock = threading.Lock()
_known: weakref.WeakKeyDictionary[SandboxEngine, frozenset[int]] = weakref.WeakKeyDictionary()


def _probe(engine: SandboxEngine, code: str) -> frozenset[int]:
    session = StoreSession(engine, PRELUDE_FUEL)
    ending = run_store(engine, session, code, Bridge((), {}, clock_ns=0), RunControl(time.monotonic() + PROBE_SECONDS))
    del session
    return frozenset(ending.trap_functions) if ending.trap == "STACK_OVERFLOW" else frozenset()


def regex_functions(engine: SandboxEngine) -> frozenset[int]:
    """The function indices found on the stack when re's matcher or compiler overflows it."""
    with _lock:
        known = _known.get(engine)
        if known is None:
            known = frozenset().union(*(_probe(engine, code) for code in PROBES))
            _known[engine] = known
        return known


def overflowed_in_regex(engine: SandboxEngine, trap_functions: tuple[int, ...]) -> bool:
    """Whether a stack overflow with these innermost frames happened inside re: most of them are re's."""
    if not trap_functions:
        return False
    functions = regex_functions(engine)
    inside = sum(1 for function in trap_functions if function in functions)
    return inside * 2 > len(trap_functions)
