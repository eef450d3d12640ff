"""Build the sandbox's snapshots from the two pinned npm packages: `python -m auto_runtime.sandbox.build`.

`make install` (and the image's build) runs `npm ci` in `sandbox-build/` first, which fetches
`@micropython/micropython-webassembly-pyscript` 1.27.0 and `binaryen` 132.0.0 by their integrity in
`sandbox-build/package-lock.json`; nothing third-party is committed. This then:

1. checks the packages' versions and the module's SHA-256 (`artifact.SOURCE_SHA256`), and the module itself
   (`check_source`): the import set the host answers, no start function, a table of fixed size, and no
   instruction that writes a table or a data segment (read from Binaryen's `wasm-dis` text);
2. generates the exception-handling shim (`shim_text`): each `invoke_*` import is a function that calls the
   table entry inside `try_table`, and on the longjmp tag restores the C stack and calls `setThrew(1, 0)`,
   as MicroPython's JavaScript loader does; `_emscripten_throw_longjmp` charges a raise's unwinding as work
   (`THROW_CHARGE_ROUNDS`) and throws that tag;
3. merges it into the module with Binaryen's `wasm-merge` (the 11 `invoke_*` imports and the longjmp import go);
4. snapshots the merged module once per heap size (`artifact.HEAPS`, `snapshot.take_snapshot`) with the setup
   of `guest.SETUP_SCRIPT`, into `artifact.BUILT_FOLDER`;
5. compares each snapshot's SHA-256 with `artifact.SNAPSHOT_SHA256` and fails, naming both, on a difference
   (a changed prelude changes the snapshot: pin what this prints, after checking why).

Every step is deterministic: the same packages give the same bytes on every machine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import wasmtime

from auto_runtime.sandbox.artifact import (
    BINARYEN_VERSION,
    BUILT_FOLDER,
    HEAPS,
    SNAPSHOT_SHA256,
    SOURCE_PACKAGE,
    SOURCE_SHA256,
    SOURCE_VERSION,
    snapshot_path,
)
from auto_runtime.sandbox.guest import SETUP_SCRIPT
from auto_runtime.sandbox.host_imports import JS_PROXY_IMPORTS
from auto_runtime.sandbox.snapshot import take_snapshot

SOURCES = Path(__file__).resolve().parents[2] / "sandbox-build"
"""`sandbox-build/` of the checkout this package sits in (an editable install); the image passes its own."""

SETJMP_IMPORTS = ("_emscripten_throw_longjmp",)
EXPECTED_IMPORTS = frozenset(
    {
        *JS_PROXY_IMPORTS,
        *SETJMP_IMPORTS,
        "invoke_i",
        "invoke_ii",
        "invoke_iii",
        "invoke_iiii",
        "invoke_iiiii",
        "invoke_iiiiii",
        "invoke_v",
        "invoke_vi",
        "invoke_vii",
        "invoke_viii",
        "invoke_viiii",
        "mp_js_random_u32",
        "mp_js_ticks_ms",
        "mp_js_time_ms",
        "__syscall_chdir",
        "__syscall_getcwd",
        "__syscall_mkdirat",
        "__syscall_openat",
        "__syscall_poll",
        "__syscall_getdents64",
        "__syscall_renameat",
        "__syscall_rmdir",
        "__syscall_fstat64",
        "__syscall_stat64",
        "__syscall_newfstatat",
        "__syscall_lstat64",
        "__syscall_statfs64",
        "__syscall_unlinkat",
        "fd_close",
        "fd_sync",
        "fd_seek",
        "fd_read",
        "fd_write",
        "_abort_js",
        "emscripten_resize_heap",
    }
)
"""The pinned module's imports, by name: a module with any other is refused (the host answers exactly these)."""

FORBIDDEN_INSTRUCTIONS = (
    "memory.init",
    "data.drop",
    "table.set",
    "table.grow",
    "table.fill",
    "table.copy",
    "table.init",
    "elem.drop",
)
FEATURES = (
    "--enable-exception-handling",
    "--enable-bulk-memory",
    "--enable-sign-ext",
    "--enable-mutable-globals",
    "--enable-nontrapping-float-to-int",
    "--enable-reference-types",
)


THROW_CHARGE_ROUNDS = 4000
"""Rounds of a counting loop each longjmp runs before it throws, about 16,000 units: unwinding a WebAssembly
exception costs Wasmtime several microseconds that fuel does not count, so without this a program that raises and
catches in a loop used up its time long before its work (measured: 5,948 units and 9.7 us an iteration)."""


class BuildError(RuntimeError):
    """A package, the module or a snapshot is not what the build pins."""


def source_module(sources: Path) -> Path:
    return sources / "node_modules" / SOURCE_PACKAGE / "micropython.wasm"


def _package_version(folder: Path) -> str:
    try:
        return str(json.loads((folder / "package.json").read_text())["version"])
    except (OSError, ValueError, KeyError) as error:
        raise BuildError(
            f"{folder} is not an installed npm package ({error}); run `npm ci` in sandbox-build"
        ) from error


def check_packages(sources: Path) -> bytes:
    """The pinned module's bytes, after the two packages' versions and the module's digest are checked."""
    found = _package_version(sources / "node_modules" / SOURCE_PACKAGE)
    if found != SOURCE_VERSION:
        raise BuildError(f"{SOURCE_PACKAGE} {found} is installed, not {SOURCE_VERSION}")
    binaryen = _package_version(sources / "node_modules" / "binaryen")
    if binaryen != BINARYEN_VERSION:
        raise BuildError(f"binaryen {binaryen} is installed, not {BINARYEN_VERSION}")
    module = source_module(sources).read_bytes()
    digest = hashlib.sha256(module).hexdigest()
    if digest != SOURCE_SHA256:
        raise BuildError(f"{source_module(sources)} has SHA-256 {digest}, not the pinned {SOURCE_SHA256}")
    return module


def _binaryen(sources: Path, tool: str, *arguments: str) -> bytes:
    command = ["node", str(sources / "node_modules" / "binaryen" / "bin" / tool), *arguments]
    done = subprocess.run(command, capture_output=True, check=False)
    if done.returncode != 0:
        raise BuildError(f"{tool} failed: {done.stderr.decode(errors='replace')[-2000:]}")
    return done.stdout


def _module_imports(module: bytes) -> list[wasmtime.ImportType]:
    config = wasmtime.Config()
    config.wasm_exceptions = True
    return list(wasmtime.Module(wasmtime.Engine(config), module).imports)


def check_source(sources: Path, module: bytes, path: Path) -> None:
    """The module's imports are the pinned set, its table is fixed, and no instruction writes a table or a
    data segment (what the snapshot relies on)."""
    names = {item.name or "" for item in _module_imports(module)}
    if names != EXPECTED_IMPORTS:
        raise BuildError(
            f"the module's imports differ from the pinned set: new {sorted(names - EXPECTED_IMPORTS)}, "
            f"gone {sorted(EXPECTED_IMPORTS - names)}"
        )
    text = _binaryen(sources, "wasm-dis", str(path), *FEATURES).decode("utf-8", "replace")
    found = sorted({name for name in FORBIDDEN_INSTRUCTIONS if re.search(rf"\({re.escape(name)}\b", text)})
    if found:
        raise BuildError(f"the module uses {', '.join(found)}: a snapshot of its memory would not be its state")
    if re.search(r"^\s*\(start ", text, re.MULTILINE):
        raise BuildError("the module has a start function")
    table = re.search(r"^\s*\(table \$\S+ (\d+) (\d+) funcref\)", text, re.MULTILINE)
    if table is None or table.group(1) != table.group(2):
        raise BuildError("the module's table is not of a fixed size")


def shim_text(imports: list[wasmtime.ImportType]) -> str:
    """The shim module, as text: the `invoke_*` trampolines and the longjmp throw, with exception handling."""
    lines = [
        "(module",
        '  (import "mp" "__indirect_function_table" (table $table 0 funcref))',
        '  (import "mp" "setThrew" (func $set_threw (param i32 i32)))',
        '  (import "mp" "_emscripten_stack_restore" (func $stack_restore (param i32)))',
        '  (import "mp" "emscripten_stack_get_current" (func $stack_current (result i32)))',
        "  (tag $longjmp)",
        '  (func (export "_emscripten_throw_longjmp") (local $left i32)',
        f"    (local.set $left (i32.const {THROW_CHARGE_ROUNDS}))",
        "    (loop $charge (br_if $charge (local.tee $left (i32.sub (local.get $left) (i32.const 1)))))",
        "    (throw $longjmp))",
    ]
    for item in sorted(imports, key=lambda imported: imported.name or ""):
        kind = item.type
        if (
            item.module != "env"
            or not (item.name or "").startswith("invoke_")
            or not isinstance(kind, wasmtime.FuncType)
        ):
            continue
        params = [str(value) for value in kind.params][1:]
        results = [str(value) for value in kind.results]
        declared = "".join(f" (param $a{index} {value})" for index, value in enumerate(params))
        returns = "".join(f" (result {value})" for value in results)
        signature = "".join(f" (param {value})" for value in params) + returns
        arguments = "".join(f" (local.get $a{index})" for index in range(len(params)))
        call = f"(call_indirect $table{signature}{arguments} (local.get $f))"
        body = f"(return {call})" if results else f"{call} (return)"
        fallback = " (i32.const 0)" if results else ""
        lines += [
            f'  (func (export "{item.name}") (param $f i32){declared}{returns} (local $sp i32)',
            "    (local.set $sp (call $stack_current))",
            f"    (block $caught (try_table (catch $longjmp $caught) {body}))",
            "    (call $stack_restore (local.get $sp))",
            f"    (call $set_threw (i32.const 1) (i32.const 0)){fallback})",
        ]
    lines.append(")")
    return "\n".join(lines) + "\n"


def merge(sources: Path, module_path: Path, module: bytes, folder: Path) -> bytes:
    """The module with the shim merged in by `wasm-merge`: no setjmp/longjmp import is left."""
    shim = folder / "shim.wasm"
    shim.write_bytes(wasmtime.wat2wasm(shim_text(_module_imports(module))))
    merged = folder / "merged.wasm"
    _binaryen(sources, "wasm-merge", str(module_path), "mp", str(shim), "env", "-o", str(merged), *FEATURES)
    data = merged.read_bytes()
    left = [item.name for item in _module_imports(data) if (item.name or "").startswith("invoke_")]
    left += [item.name for item in _module_imports(data) if item.name in SETJMP_IMPORTS]
    if left:
        raise BuildError(f"the merged module still imports {left}")
    return data


def build(sources: Path = SOURCES, into: Path = BUILT_FOLDER) -> dict[str, str]:
    """Build every snapshot into `into`; each heap's SHA-256. Raises `BuildError` on anything not pinned."""
    module = check_packages(sources)
    path = source_module(sources)
    check_source(sources, module, path)
    into.mkdir(parents=True, exist_ok=True)
    digests: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="sandbox-build-") as folder:
        merged = merge(sources, path, module, Path(folder))
        for heap, heap_bytes in HEAPS.items():
            snapshot, facts = take_snapshot(merged, heap_bytes, SETUP_SCRIPT)
            target = snapshot_path(heap, into)
            partial = target.with_suffix(".partial")
            partial.write_bytes(snapshot)
            os.replace(partial, target)
            digests[heap] = hashlib.sha256(snapshot).hexdigest()
            print(
                f"sandbox snapshot {heap}: {len(snapshot):,} bytes, {facts.segments} data segments "
                f"({facts.data_bytes:,} bytes), {facts.memory_pages} pages of memory, "
                f"SHA-256 {digests[heap]}"
            )
    return digests


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the sandbox's snapshots from the pinned npm packages.")
    parser.add_argument("--sources", type=Path, default=SOURCES, help="the folder npm ci ran in (sandbox-build)")
    parser.add_argument("--into", type=Path, default=BUILT_FOLDER, help="where the snapshots are written")
    arguments = parser.parse_args(argv)
    try:
        digests = build(arguments.sources, arguments.into)
    except (BuildError, OSError) as error:
        print(f"The sandbox cannot be built: {error}", file=sys.stderr)
        return 1
    wrong = {heap: digest for heap, digest in digests.items() if digest != SNAPSHOT_SHA256[heap]}
    for heap, digest in wrong.items():
        print(
            f"The {heap} snapshot has SHA-256 {digest}, not the pinned {SNAPSHOT_SHA256[heap]} "
            "(auto_runtime/sandbox/artifact.py)",
            file=sys.stderr,
        )
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
