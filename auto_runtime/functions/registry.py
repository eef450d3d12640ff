"""The definition types this server runs, by name; a type whose support has not landed refuses documents."""

from __future__ import annotations

from auto_runtime.functions.function_type import DEFINITION_TYPES, FunctionType, TypeNotAvailable


def function_types() -> dict[str, FunctionType]:
    return {name: TypeNotAvailable(name) for name in DEFINITION_TYPES}
