"""The MicroPython the snapshot holds set up, and the one line each kind of run executes in it.

`SETUP_SCRIPT` runs once, when the snapshot is made (`snapshot.py`), in `__main__` of an interpreter started with
the collector disabled:

1. The bridge. The build registers a JavaScript module, `host_imports.BRIDGE_MODULE`, whose one function
   (`call`) the host answers through its `calln` import. A Python stand-in named `host`, with today's
   `host.call(name, payload)`, goes into `sys.modules`, so the prelude's `import host` is unchanged. A text
   payload passes as a pointer to its bytes, a bytes payload as its address (`uctypes.addressof`) and length;
   the answer comes back as text, or None when the host refused the call (the stand-in raises then).
2. The prelude's setup (`prelude.PRELUDE_SETUP`), then the definitions of every entry: `_run` (a computation
   run, a recall answer), `_compile_only` (the save-time compile pass), `_serve` (workflow expressions) and
   `_fold_serve` (recall folds).
3. `js`, `jsffi`, the bridge's JavaScript module and `host` leave `sys.modules`; the prelude keeps its own
   reference to the stand-in's function. The bridge's names leave `__main__`.

Nothing of the setup reads a clock or a seed: what a run reads of them comes from the host at run time.
"""

from __future__ import annotations

from auto_runtime.sandbox.expression_prelude import SERVE_DEFINITION
from auto_runtime.sandbox.fold_prelude import FOLD_DEFINITION
from auto_runtime.sandbox.host_imports import BRIDGE_MODULE
from auto_runtime.sandbox.prelude import COMPILE_DEFINITION, PRELUDE_SETUP, RUN_DEFINITION

BRIDGE_SETUP = rf"""
import gc
gc.disable()
import sys
import uctypes
import {BRIDGE_MODULE}


def _bridge_factory(bridge, addressof, kind, text, size, RuntimeError):
    def call(name, payload):
        if kind(payload) is text:
            answer = bridge(name, payload, 0)
        elif payload:
            answer = bridge(name, addressof(payload), size(payload))
        else:
            answer = bridge(name, "", 0)
        if answer is None:
            raise RuntimeError("the host refused a bridge call")
        return answer

    return call


class _Host:
    call = _bridge_factory({BRIDGE_MODULE}.call, uctypes.addressof, type, str, len, RuntimeError)


sys.modules["host"] = _Host
"""

CLEANUP = rf"""
for _name in ("js", "jsffi", "{BRIDGE_MODULE}", "host"):
    if _name in sys.modules:
        del sys.modules[_name]
del _name
del _Host
del _bridge_factory
del {BRIDGE_MODULE}
del uctypes
"""

SETUP_SCRIPT = BRIDGE_SETUP + PRELUDE_SETUP + RUN_DEFINITION + COMPILE_DEFINITION + SERVE_DEFINITION + FOLD_DEFINITION
SETUP_SCRIPT += CLEANUP
"""Everything the snapshot runs once, in order."""
