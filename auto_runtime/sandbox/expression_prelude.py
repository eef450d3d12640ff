"""The workflow expression prelude's loop, defined in the snapshot beside the computation prelude.

`SERVE_DEFINITION` is defined in the snapshot after the prelude's setup (`prelude.py`: the collector off, the
import guard, the refused builtins, the writer); an expression instance executes `EXPRESSION_ENTRY`. `_serve` asks
the host for each request through the bridge and answers every expression of it (workflow-format.md 4.5): it
reads the request's values (`value`, long strings as text of their own), runs each expression in its own
namespace between `start` and `end`, and sends one `answer` each, stopping at the first that raises. Since the
setup is in the snapshot, an input that evaluates an expression no longer compiles the prelude: its first
expression runs at once.
"""

from __future__ import annotations

SERVE_DEFINITION = r"""
_values = {}


def _serve():
    while True:
        request = _loads(_call("request", ""))
        if request is None:
            return
        for key in request["values"]:
            value = _loads(_call("value", ""))
            for path in request["long"].get(key, ()):
                text = _call("value", "")
                if not path:
                    value = text
                    continue
                target = value
                for token in path[:-1]:
                    target = target[token]
                target[path[-1]] = text
            _values[key] = value
        names = {}
        for name, key in request["names"].items():
            names[name] = _values[key]
        condition = request["condition"]
        for source in request["expressions"]:
            scope = dict(names)
            code = _compile("__r = (" + source + "\n)", "expression", "exec")
            _call("start", "")
            try:
                _exec(code, scope)
                value = scope["__r"]
                if condition:
                    value = "T" if value else "F"
                failure = None
            except _BaseException as error:
                failure = error
            _call("end", "")
            if failure is not None:
                _call("answer", _report_raised(failure))
                break
            try:
                answer = value if condition else _write(value, request["limit"])
            except _MemoryError:
                answer = "H"
            _call("answer", answer)
            if not condition and (_type(answer) is not bytes or answer[:1] != b"O"):
                break
"""

EXPRESSION_ENTRY = "_serve()"
"""What an expression instance executes in a fresh instance of the snapshot."""
