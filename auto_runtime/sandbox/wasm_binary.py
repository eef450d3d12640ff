"""Just enough of the WebAssembly binary format to snapshot a module: its sections, and new sections written.

A module is a list of `Section`s (id and raw payload) in their order; the snapshotter (`snapshot.py`) reads the
global, export and memory sections, and writes new global, export, memory, data and data-count sections. Every
other section (types, imports, functions, tables, elements, code, tags) is kept byte for byte. Custom sections
(names, producers) are dropped, so the output depends on nothing but the code and the state written into it;
the one custom section written is the snapshot's tail (`TAIL_SECTION`, `write_tail`, `read_tail`).
"""

from __future__ import annotations

from dataclasses import dataclass

MAGIC = b"\x00asm\x01\x00\x00\x00"

CUSTOM = 0
TYPE = 1
IMPORT = 2
FUNCTION = 3
TABLE = 4
MEMORY = 5
GLOBAL = 6
EXPORT = 7
START = 8
ELEMENT = 9
CODE = 10
DATA = 11
DATA_COUNT = 12
TAG = 13

ORDER = (TYPE, IMPORT, FUNCTION, TABLE, MEMORY, TAG, GLOBAL, EXPORT, START, ELEMENT, DATA_COUNT, CODE, DATA)
"""The order sections stand in a module (the tag section sits between memory and global)."""

EXPORT_KINDS = {0: "func", 1: "table", 2: "memory", 3: "global", 4: "tag"}
_VALUE_TYPES = {0x7F: "i32", 0x7E: "i64", 0x7D: "f32", 0x7C: "f64", 0x7B: "v128", 0x70: "funcref", 0x6F: "externref"}
_END = 0x0B


class WasmFormatError(ValueError):
    """The bytes are not a module this reader understands."""


@dataclass(frozen=True)
class Section:
    id: int
    payload: bytes


@dataclass(frozen=True)
class Global:
    """A defined global: its type, whether it is mutable, and its initialiser expression (with its `end`)."""

    value_type: str
    mutable: bool
    init: bytes


@dataclass(frozen=True)
class Export:
    name: str
    kind: str
    index: int


@dataclass(frozen=True)
class DataSegment:
    """An active data segment of memory 0 at a constant offset."""

    offset: int
    data: bytes


class Reader:
    """Reads LEB128 numbers, names and bytes from a payload, front to back."""

    def __init__(self, data: bytes, position: int = 0) -> None:
        self.data = data
        self.position = position

    @property
    def done(self) -> bool:
        return self.position >= len(self.data)

    def byte(self) -> int:
        if self.position >= len(self.data):
            raise WasmFormatError("unexpected end of the module")
        value = self.data[self.position]
        self.position += 1
        return value

    def unsigned(self) -> int:
        result = 0
        shift = 0
        while True:
            byte = self.byte()
            result |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return result

    def signed(self) -> int:
        result = 0
        shift = 0
        while True:
            byte = self.byte()
            result |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                if byte & 0x40:
                    result -= 1 << shift
                return result

    def take(self, count: int) -> bytes:
        if self.position + count > len(self.data):
            raise WasmFormatError("unexpected end of the module")
        chunk = self.data[self.position : self.position + count]
        self.position += count
        return chunk

    def name(self) -> str:
        return self.take(self.unsigned()).decode("utf-8")


def unsigned_leb(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def signed_leb(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if (value == 0 and not byte & 0x40) or (value == -1 and byte & 0x40):
            out.append(byte)
            return bytes(out)
        out.append(byte | 0x80)


def name_bytes(text: str) -> bytes:
    encoded = text.encode("utf-8")
    return unsigned_leb(len(encoded)) + encoded


def vector(items: list[bytes]) -> bytes:
    return unsigned_leb(len(items)) + b"".join(items)


def read_sections(module: bytes) -> list[Section]:
    if module[:8] != MAGIC:
        raise WasmFormatError("not a WebAssembly module (version 1)")
    reader = Reader(module, 8)
    sections = []
    while not reader.done:
        section_id = reader.byte()
        sections.append(Section(section_id, reader.take(reader.unsigned())))
    return sections


def write_module(sections: list[Section]) -> bytes:
    return MAGIC + b"".join(bytes([s.id]) + unsigned_leb(len(s.payload)) + s.payload for s in sections)


def find(sections: list[Section], section_id: int) -> Section | None:
    return next((section for section in sections if section.id == section_id), None)


def replace_sections(sections: list[Section], new: dict[int, Section | None]) -> list[Section]:
    """The module's non-custom sections with those in `new` replaced, added or (None) removed, in order."""
    kept = {section.id: section for section in sections if section.id != CUSTOM}
    for section_id, section in new.items():
        if section is None:
            kept.pop(section_id, None)
        else:
            kept[section_id] = section
    return [kept[section_id] for section_id in ORDER if section_id in kept]


def _constant_expression(reader: Reader) -> bytes:
    """The bytes of a constant expression up to and including its `end` (the opcodes globals use)."""
    start = reader.position
    while True:
        opcode = reader.byte()
        if opcode == _END:
            return reader.data[start : reader.position]
        if opcode in (0x41, 0x42):
            reader.signed()
        elif opcode == 0x43:
            reader.take(4)
        elif opcode == 0x44:
            reader.take(8)
        elif opcode in (0x23, 0xD2):
            reader.unsigned()
        elif opcode == 0xD0:
            reader.byte()
        else:
            raise WasmFormatError(f"opcode {opcode:#x} in a constant expression")


def read_globals(section: Section | None) -> list[Global]:
    if section is None:
        return []
    reader = Reader(section.payload)
    globals_ = []
    for _ in range(reader.unsigned()):
        value_type = _VALUE_TYPES.get(reader.byte(), "other")
        mutable = reader.byte() == 1
        globals_.append(Global(value_type, mutable, _constant_expression(reader)))
    return globals_


def write_globals(globals_: list[Global]) -> Section:
    codes = {name: code for code, name in _VALUE_TYPES.items()}
    return Section(GLOBAL, vector([bytes([codes[g.value_type], 1 if g.mutable else 0]) + g.init for g in globals_]))


def constant_init(value_type: str, value: int | float) -> bytes:
    """The initialiser expression of a global holding `value`."""
    import struct

    if value_type == "i32":
        return b"\x41" + signed_leb(int(value) - (1 << 32) if int(value) >= 1 << 31 else int(value)) + b"\x0b"
    if value_type == "i64":
        return b"\x42" + signed_leb(int(value)) + b"\x0b"
    if value_type == "f32":
        return b"\x43" + struct.pack("<f", value) + b"\x0b"
    if value_type == "f64":
        return b"\x44" + struct.pack("<d", value) + b"\x0b"
    raise WasmFormatError(f"a global of type {value_type} cannot be written")


def read_exports(section: Section | None) -> list[Export]:
    if section is None:
        return []
    reader = Reader(section.payload)
    exports = []
    for _ in range(reader.unsigned()):
        name = reader.name()
        kind = EXPORT_KINDS.get(reader.byte(), "other")
        exports.append(Export(name, kind, reader.unsigned()))
    return exports


def write_exports(exports: list[Export]) -> Section:
    kinds = {name: code for code, name in EXPORT_KINDS.items()}
    return Section(
        EXPORT, vector([name_bytes(e.name) + bytes([kinds[e.kind]]) + unsigned_leb(e.index) for e in exports])
    )


def count_imports(section: Section | None, kind: int) -> int:
    """How many imports of one kind (0 function, 1 table, 2 memory, 3 global, 4 tag) the module has."""
    if section is None:
        return 0
    reader = Reader(section.payload)
    count = 0
    for _ in range(reader.unsigned()):
        reader.name()
        reader.name()
        import_kind = reader.byte()
        if import_kind == 0:
            reader.unsigned()
        elif import_kind == 1:
            reader.byte()
            _limits(reader)
        elif import_kind == 2:
            _limits(reader)
        elif import_kind == 3:
            reader.byte()
            reader.byte()
        elif import_kind == 4:
            reader.byte()
            reader.unsigned()
        else:
            raise WasmFormatError(f"import kind {import_kind}")
        count += import_kind == kind
    return count


def _limits(reader: Reader) -> tuple[int, int | None]:
    flags = reader.byte()
    minimum = reader.unsigned()
    maximum = reader.unsigned() if flags & 1 else None
    return minimum, maximum


def read_memory(section: Section | None) -> tuple[int, int | None]:
    """The one defined memory's limits, in 64 KiB pages."""
    if section is None:
        raise WasmFormatError("the module defines no memory")
    reader = Reader(section.payload)
    if reader.unsigned() != 1:
        raise WasmFormatError("the module defines more than one memory")
    return _limits(reader)


def write_memory(minimum: int, maximum: int | None) -> Section:
    limits = (
        b"\x01" + unsigned_leb(minimum) + unsigned_leb(maximum)
        if maximum is not None
        else b"\x00" + unsigned_leb(minimum)
    )
    return Section(MEMORY, b"\x01" + limits)


def read_data(section: Section | None) -> list[DataSegment]:
    """The module's data segments; each must be active, of memory 0, at an `i32.const` offset."""
    if section is None:
        return []
    reader = Reader(section.payload)
    segments = []
    for _ in range(reader.unsigned()):
        flags = reader.unsigned()
        if flags != 0:
            raise WasmFormatError(f"a data segment with flags {flags} (passive or of another memory)")
        if reader.byte() != 0x41:
            raise WasmFormatError("a data segment whose offset is not an i32 constant")
        offset = reader.signed() & 0xFFFFFFFF
        if reader.byte() != _END:
            raise WasmFormatError("a data segment's offset expression is longer than one constant")
        segments.append(DataSegment(offset, reader.take(reader.unsigned())))
    return segments


def write_data(segments: list[DataSegment]) -> Section:
    return Section(
        DATA,
        vector(
            [
                b"\x00\x41"
                + signed_leb(s.offset if s.offset < 1 << 31 else s.offset - (1 << 32))
                + b"\x0b"
                + unsigned_leb(len(s.data))
                + s.data
                for s in segments
            ]
        ),
    )


TAIL_SECTION = "auto-runtime.snapshot-tail"
"""The custom section of the memory a snapshot holds far above the rest (`snapshot.py` says why)."""


def write_tail(segments: list[DataSegment]) -> Section:
    items = [unsigned_leb(segment.offset) + unsigned_leb(len(segment.data)) + segment.data for segment in segments]
    return Section(CUSTOM, name_bytes(TAIL_SECTION) + vector(items))


def read_tail(module: bytes) -> list[DataSegment]:
    """The tail a snapshot module carries, or none."""
    for section in read_sections(module):
        if section.id != CUSTOM:
            continue
        reader = Reader(section.payload)
        if reader.name() != TAIL_SECTION:
            continue
        segments = []
        for _ in range(reader.unsigned()):
            offset = reader.unsigned()
            segments.append(DataSegment(offset, reader.take(reader.unsigned())))
        return segments
    return []
