"""A model process (prediction-format §13): `python -m auto_runtime.functions.prediction.model_worker`.

Its actor (`model_process_actor`) starts it under `RLIMIT_DATA` at `PREDICTION_PROCESS_MEMORY`: the launcher of
`supervision.owned_process` sets the limit and then `exec`s this module, so it holds before ONNX Runtime (or
anything else) is imported. It prints `ready`, then answers one JSON line per JSON line on stdin, one job at a
time:

- `{"op": "run", "model": <path>, "fresh": bool, "inputs": {name: tensor}}` runs the model (loaded afresh with
  `fresh`, else from the models this process keeps) and answers `{"ok": true, "outputs": {value, low, high}}`;
- `{"op": "probe"}` answers `{"ok": true, "pid": <pid>}` (tests and health).

A tensor is `{"shape": [...], "data": <base64 of little-endian float32>}`. A failure answers `{"ok": false,
"because": ...}`: `not_loadable` (the session cannot be made), `failed_to_run` (the run raised) or
`out_of_memory` (an allocation failed past the limit), after which the process exits, so no half-freed memory
serves the next job. ONNX Runtime runs on its CPU provider with one intra-op and one inter-op thread.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from typing import Any

from cachetools import LRUCache

KEPT_MODELS = 8
OUT_OF_MEMORY_WORDS = ("Failed to allocate memory", "bad_alloc", "std::bad_alloc", "MemoryError")
OUT_OF_MEMORY_EXIT = 3


def main() -> None:
    import numpy as np
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    kept: LRUCache[str, Any] = LRUCache(KEPT_MODELS)

    def session(path: str, fresh: bool) -> Any:
        if not fresh and path in kept:
            return kept[path]
        made = ort.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"])
        if not fresh:
            kept[path] = made
        return made

    def tensor(value: dict[str, Any]) -> Any:
        data = np.frombuffer(base64.b64decode(value["data"]), dtype="<f4")
        return data.reshape(value["shape"])

    def shown(array: Any) -> dict[str, Any]:
        as_float = np.ascontiguousarray(array, dtype="<f4")
        return {"shape": list(as_float.shape), "data": base64.b64encode(as_float.tobytes()).decode("ascii")}

    def run(request: dict[str, Any]) -> dict[str, Any]:
        try:
            model = session(request["model"], bool(request.get("fresh")))
        except MemoryError:
            raise
        except Exception as error:
            if any(words in str(error) for words in OUT_OF_MEMORY_WORDS):
                raise MemoryError(str(error)) from error
            return {"ok": False, "because": "not_loadable", "detail": str(error)[:1024]}
        feeds = {name: tensor(value) for name, value in request["inputs"].items()}
        try:
            values = model.run(["value", "low", "high"], feeds)
        except MemoryError:
            raise
        except Exception as error:
            if any(words in str(error) for words in OUT_OF_MEMORY_WORDS):
                raise MemoryError(str(error)) from error
            return {"ok": False, "because": "failed_to_run", "detail": str(error)[:1024]}
        return {
            "ok": True,
            "outputs": {name: shown(v) for name, v in zip(("value", "low", "high"), values, strict=True)},
        }

    out = sys.stdout
    out.write("ready\n")
    out.flush()
    for line in sys.stdin:
        try:
            request = json.loads(line)
            if request.get("op") == "probe":
                reply: dict[str, Any] = {"ok": True, "pid": os.getpid()}
            else:
                reply = run(request)
        except MemoryError as error:
            out.write(json.dumps({"ok": False, "because": "out_of_memory", "detail": str(error)[:1024]}) + "\n")
            out.flush()
            os._exit(OUT_OF_MEMORY_EXIT)
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
