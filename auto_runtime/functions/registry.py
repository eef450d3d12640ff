"""The definition types this server runs, by name; a type whose support has not landed refuses documents."""

from __future__ import annotations

from auto_runtime.functions.function_type import DEFINITION_TYPES, FunctionType, TypeNotAvailable


def function_types(*available: FunctionType) -> dict[str, FunctionType]:
    """Every definition type: the ones given, and `TypeNotAvailable` for the others."""
    given = {function_type.name: function_type for function_type in available}
    return {name: given.get(name, TypeNotAvailable(name)) for name in DEFINITION_TYPES}
