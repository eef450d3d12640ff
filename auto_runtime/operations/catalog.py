"""The catalog: every operation of the runtime, checked once when it is assembled."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from auto_runtime.operations.operation import Operation

SCOPE_PARAMETERS = frozenset({"org"})


class Catalog:
    """An ordered, immutable set of operations with unique names and unique method + path pairs."""

    def __init__(self, operations: Iterable[Operation]) -> None:
        self._operations: tuple[Operation, ...] = tuple(operations)
        names: set[tuple[str, str]] = set()
        routes: set[tuple[str, str]] = set()
        for operation in self._operations:
            name_key = (operation.name, operation.scope if operation.name == "search" else "")
            if name_key in names:
                raise ValueError(f"operation {operation.name} is defined twice")
            names.add(name_key)
            route_key = (operation.method, operation.path)
            if route_key in routes:
                raise ValueError(f"route {operation.method} {operation.path} is defined twice")
            routes.add(route_key)
            fields = set(operation.input_model.model_fields)
            for parameter in operation.path_fields:
                if parameter not in fields:
                    raise ValueError(f"{operation.name}: path parameter {parameter} is not an input field")
            if fields & SCOPE_PARAMETERS:
                raise ValueError(f"{operation.name}: an input may not name the org")

    def __iter__(self) -> Iterator[Operation]:
        return iter(self._operations)

    def __len__(self) -> int:
        return len(self._operations)

    def named(self, name: str, scope: str | None = None) -> Operation:
        for operation in self._operations:
            if operation.name == name and (scope is None or operation.scope == scope):
                return operation
        raise KeyError(name)
