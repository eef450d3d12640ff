"""The snapshotter's invariants on the pinned module (`auto_runtime/sandbox/build.py`, `snapshot.py`).

The build runs `npm ci` first (`make install`), so `sandbox-build/node_modules` holds the two pinned packages.
These tests read them again: the module's import set, no instruction that writes a table or a data segment, the
shim merged, the snapshot's globals (only those the setup left elsewhere are baked, the C stack back at its
start), its data laid within the span Wasmtime maps copy-on-write, and a rebuild giving the pinned bytes.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest
import wasmtime

from auto_runtime.sandbox import wasm_binary as wb
from auto_runtime.sandbox.artifact import HEAPS, SNAPSHOT_SHA256, load_artifact
from auto_runtime.sandbox.build import (
    EXPECTED_IMPORTS,
    SOURCES,
    BuildError,
    build,
    check_packages,
    check_source,
    merge,
    shim_text,
    source_module,
)
from auto_runtime.sandbox.snapshot import DENSE_BYTES, KEPT_EXPORTS

STACK_POINTER = 0
"""The module's global 0 is Emscripten's `__stack_pointer`; the C stack is the first 64 KiB of memory."""


@pytest.fixture(scope="module")
def merged(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    module = check_packages(SOURCES)
    return merge(SOURCES, source_module(SOURCES), module, tmp_path_factory.mktemp("merge"))


def _imports(module: bytes) -> set[str]:
    config = wasmtime.Config()
    config.wasm_exceptions = True
    return {item.name or "" for item in wasmtime.Module(wasmtime.Engine(config), module).imports}


def test_the_pinned_module_has_the_import_set_the_host_answers() -> None:
    module = check_packages(SOURCES)
    assert _imports(module) == EXPECTED_IMPORTS
    check_source(SOURCES, module, source_module(SOURCES))


def test_a_module_with_other_imports_is_refused(tmp_path: Path) -> None:
    other = wasmtime.wat2wasm('(module (import "env" "fetch" (func)) (memory 1) (table 1 1 funcref))')
    path = tmp_path / "other.wasm"
    path.write_bytes(other)
    with pytest.raises(BuildError, match="new \\['fetch'\\]"):
        check_source(SOURCES, other, path)


def test_the_shim_replaces_every_setjmp_import(merged: bytes) -> None:
    names = _imports(merged)
    assert not {name for name in names if name.startswith("invoke_")}
    assert "_emscripten_throw_longjmp" not in names
    assert names == {name for name in EXPECTED_IMPORTS if not name.startswith("invoke_")} - {
        "_emscripten_throw_longjmp"
    }
    assert shim_text([]).count("(export ") == 1
    assert "(loop $charge" in shim_text([])


def test_the_snapshot_keeps_the_code_and_bakes_only_the_state(merged: bytes) -> None:
    source = wb.read_sections(merged)
    for heap in HEAPS:
        snapshot = wb.read_sections(load_artifact(heap).wasm)
        for section_id in (wb.TYPE, wb.IMPORT, wb.FUNCTION, wb.TABLE, wb.ELEMENT, wb.CODE, wb.TAG):
            assert wb.find(snapshot, section_id) == wb.find(source, section_id), section_id
        assert wb.find(snapshot, wb.START) is None
        before = wb.read_globals(wb.find(source, wb.GLOBAL))
        after = wb.read_globals(wb.find(snapshot, wb.GLOBAL))
        changed = [index for index, (old, new) in enumerate(zip(before, after, strict=True)) if old != new]
        assert all(before[index].mutable for index in changed)
        assert STACK_POINTER not in changed and before[STACK_POINTER].init == b"\x41\x80\x80\x04\x0b"
        assert len(changed) <= 1, "the setup leaves the mutable globals at their start (stack bounds aside)"
        exports = wb.read_exports(wb.find(snapshot, wb.EXPORT))
        assert sorted(export.name for export in exports) == sorted(KEPT_EXPORTS)
        segments = wb.read_data(wb.find(snapshot, wb.DATA))
        assert segments[-1].offset + len(segments[-1].data) - segments[0].offset <= DENSE_BYTES
        tail = wb.read_tail(load_artifact(heap).wasm)
        assert sum(len(segment.data) for segment in tail) < 8192
        assert HEAPS[heap] < wb.read_memory(wb.find(snapshot, wb.MEMORY))[0] * 65536 < HEAPS[heap] + (1 << 20)


@pytest.mark.slow
def test_a_rebuild_gives_the_pinned_bytes(tmp_path: Path) -> None:
    digests = build(SOURCES, tmp_path)
    assert digests == SNAPSHOT_SHA256
    for heap, digest in digests.items():
        assert hashlib.sha256(next(tmp_path.glob(f"*-{heap}.wasm")).read_bytes()).hexdigest() == digest


def test_the_build_refuses_another_module(tmp_path: Path) -> None:
    package = tmp_path / "node_modules" / "@micropython" / "micropython-webassembly-pyscript"
    package.mkdir(parents=True)
    (package / "package.json").write_text('{"version": "1.27.0"}')
    (package / "micropython.wasm").write_bytes(b"\0asm\1\0\0\0")
    binaryen = tmp_path / "node_modules" / "binaryen"
    binaryen.mkdir()
    (binaryen / "package.json").write_text('{"version": "132.0.0"}')
    with pytest.raises(BuildError, match="not the pinned"):
        check_packages(tmp_path)
    (binaryen / "package.json").write_text('{"version": "131.0.0"}')
    with pytest.raises(BuildError, match=r"binaryen 131\.0\.0 is installed, not 132\.0\.0"):
        check_packages(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "auto_runtime.sandbox.build", "--sources", str(tmp_path), "--into", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr == "The sandbox cannot be built: binaryen 131.0.0 is installed, not 132.0.0\n"
