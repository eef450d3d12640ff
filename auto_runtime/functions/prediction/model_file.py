"""Reading a candidate's ONNX file without running it (prediction-format §5, §8.6 steps 1–3): its opset imports,
its graph's declared inputs and outputs, and whether any tensor is stored outside the file.

The file is walked as protocol buffers (`ModelProto`), only the fields these checks need; everything else is
skipped by its length, so a 64 MiB file of weights is walked in one pass without copying. Pure Python with no
state: run it in a worker thread.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

FLOAT: Final = 1
MAX_DEPTH: Final = 16
"""How deep subgraphs (`If`, `Loop`, `Scan` bodies) are searched for external tensors."""


class NotLoadable(Exception):
    """The bytes are not an ONNX model this check can read, or hold tensors stored outside the file."""


@dataclass(frozen=True)
class Declared:
    """One declared input or output: its name, element type (0 when unset) and dims (int, str or None)."""

    name: str
    elem_type: int
    dims: tuple[int | str | None, ...] | None


@dataclass
class ModelFile:
    opsets: dict[str, int] = field(default_factory=dict)
    inputs: list[Declared] = field(default_factory=list)
    outputs: list[Declared] = field(default_factory=list)
    initializers: set[str] = field(default_factory=set)
    external: bool = False


def _varint(data: memoryview, position: int) -> tuple[int, int]:
    result, shift = 0, 0
    while True:
        if position >= len(data) or shift > 63:
            raise NotLoadable("a varint runs past the end")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, position
        shift += 7


def fields(data: memoryview) -> Iterator[tuple[int, int, int | memoryview]]:
    """(field number, wire type, value) for each field of one message; a length-delimited value as a view."""
    position = 0
    while position < len(data):
        key, position = _varint(data, position)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, position = _varint(data, position)
            yield number, wire, value
        elif wire == 1:
            position += 8
        elif wire == 5:
            position += 4
        elif wire == 2:
            length, position = _varint(data, position)
            if position + length > len(data):
                raise NotLoadable("a field runs past the end")
            yield number, wire, data[position : position + length]
            position += length
        else:
            raise NotLoadable("a field of an unknown wire type")
        if position > len(data):
            raise NotLoadable("a field runs past the end")


def _text(value: int | memoryview) -> str:
    if not isinstance(value, memoryview):
        raise NotLoadable("a text field is not text")
    try:
        return bytes(value).decode("utf-8")
    except UnicodeDecodeError:
        raise NotLoadable("a text field is not UTF-8") from None


def _message(value: int | memoryview) -> memoryview:
    if not isinstance(value, memoryview):
        raise NotLoadable("a message field is not a message")
    return value


def _declared(data: memoryview) -> Declared:
    name, elem_type, dims = "", 0, None
    for number, _, value in fields(data):
        if number == 1:
            name = _text(value)
        elif number == 2:
            for type_number, _, type_value in fields(_message(value)):
                if type_number != 1:
                    continue
                for tensor_number, _, tensor_value in fields(_message(type_value)):
                    if tensor_number == 1 and isinstance(tensor_value, int):
                        elem_type = tensor_value
                    elif tensor_number == 2:
                        found: list[int | str | None] = []
                        for dim_number, _, dim in fields(_message(tensor_value)):
                            if dim_number != 1:
                                continue
                            size: int | str | None = None
                            for part, _, part_value in fields(_message(dim)):
                                if part == 1 and isinstance(part_value, int):
                                    size = part_value
                                elif part == 2:
                                    size = _text(part_value)
                            found.append(size)
                        dims = tuple(found)
    return Declared(name, elem_type, dims)


def _tensor_is_external(data: memoryview) -> bool:
    return any((number == 14 and value == 1) or number == 13 for number, _, value in fields(data))


def _graph(data: memoryview, model: ModelFile, depth: int, top: bool) -> None:
    if depth > MAX_DEPTH:
        raise NotLoadable("subgraphs nest too deep")
    for number, _, value in fields(data):
        if number == 5:
            tensor = _message(value)
            if _tensor_is_external(tensor):
                model.external = True
            if top:
                for tensor_number, _, tensor_value in fields(tensor):
                    if tensor_number == 8:
                        model.initializers.add(_text(tensor_value))
        elif number == 1:
            _node(_message(value), model, depth)
        elif top and number == 11:
            model.inputs.append(_declared(_message(value)))
        elif top and number == 12:
            model.outputs.append(_declared(_message(value)))


def _node(data: memoryview, model: ModelFile, depth: int) -> None:
    for number, _, value in fields(data):
        if number != 5:
            continue
        for attribute_number, _, attribute_value in fields(_message(value)):
            if attribute_number in (5, 10) and _tensor_is_external(_message(attribute_value)):
                model.external = True
            elif attribute_number in (6, 11):
                _graph(_message(attribute_value), model, depth + 1, top=False)


def read_model_file(data: bytes) -> ModelFile:
    """The parts of the model the checks read; `NotLoadable` when the bytes are not a model."""
    view = memoryview(data)
    model = ModelFile()
    has_graph = False
    for number, _, value in fields(view):
        if number == 8:
            domain, version = "", 0
            for opset_number, _, opset_value in fields(_message(value)):
                if opset_number == 1:
                    domain = _text(opset_value)
                elif opset_number == 2 and isinstance(opset_value, int):
                    version = opset_value
            domain = "" if domain == "ai.onnx" else domain
            model.opsets[domain] = max(model.opsets.get(domain, 0), version)
        elif number == 7:
            has_graph = True
            _graph(_message(value), model, 0, top=True)
    if not has_graph:
        raise NotLoadable("the file holds no graph")
    return model


def opset_problem(model: ModelFile) -> str | None:
    """Why the opsets are refused (§5), or None."""
    others = sorted(domain for domain in model.opsets if domain not in ("", "ai.onnx.ml"))
    if others:
        return f"the model imports the domain {others[0]}; only the default domain and ai.onnx.ml are allowed"
    version = model.opsets.get("")
    if version is None:
        return "the model does not import the default domain"
    if version < 13:
        return f"the model imports the default domain at version {version}; version 13 or later is needed"
    return None


def _shape_problem(declared: Declared, width: int, what: str) -> str | None:
    if declared.elem_type != FLOAT:
        return f"{what} {declared.name} is not tensor(float)"
    if declared.dims is None or len(declared.dims) != 2:
        return f"{what} {declared.name} does not have two dimensions"
    first, second = declared.dims
    if isinstance(first, int):
        return f"the first dimension of {what} {declared.name} is fixed at {first}; it must be symbolic or unset"
    if isinstance(second, int) and second != width:
        return f"the second dimension of {what} {declared.name} is {second}, not {width}"
    return None


def signature_problem(model: ModelFile, lags: int, features: int, horizons: int) -> str | None:
    """Why the declared inputs and outputs do not have the signature of §5, or None."""
    inputs = {declared.name: declared for declared in model.inputs if declared.name not in model.initializers}
    wanted = {"history": lags, **({"covariates": features} if features else {})}
    for name in inputs:
        if name not in wanted:
            return f"the model takes an input {name}; its inputs are {' and '.join(wanted)}"
    for name, width in wanted.items():
        if name not in inputs:
            return f"the model has no input {name}"
        problem = _shape_problem(inputs[name], width, "the input")
        if problem:
            return problem
    outputs = {declared.name: declared for declared in model.outputs}
    for name in ("value", "low", "high"):
        if name not in outputs:
            return f"the model has no output {name}"
        problem = _shape_problem(outputs[name], horizons, "the output")
        if problem:
            return problem
    return None
