"""Validating one setting's value with pydantic, and turning the first error into one line."""

from typing import Any

from pydantic import TypeAdapter, ValidationError
from pydantic_core import ErrorDetails

from auto_runtime.settings.errors import SettingsError
from auto_runtime.settings.places import KeyPath, Place

_TYPE_WORDS = {
    "string_type": "expects text",
    "bool_type": "expects true or false",
    "int_type": "expects a whole number",
    "dict_type": "expects a mapping",
    "model_type": "expects a mapping",
    "model_attributes_type": "expects a mapping",
    "list_type": "expects a list",
    "tuple_type": "expects a list",
    "missing": "is required",
    "extra_forbidden": "is not a key the server knows",
}


def validate(adapter: TypeAdapter[Any], value: object, place: Place, path: KeyPath) -> Any:
    """``value`` validated by ``adapter``; raises SettingsError naming ``place`` and the key path."""
    try:
        return adapter.validate_python(value)
    except ValidationError as error:
        detail = error.errors(include_url=False, include_input=False, include_context=True)[0]
        problem_path, at_key = _problem_path(detail, value)
        raise SettingsError(f"{place.where((*path, *problem_path), at_key=at_key)}: {_words(detail)}") from None


def _problem_path(detail: ErrorDetails, value: object) -> tuple[KeyPath, bool]:
    """The part of the error's location that exists in ``value`` (pydantic adds union and key tags)."""
    path: list[str | int] = []
    current = value
    for part in detail["loc"]:
        if _holds(current, part):
            current = current[part]  # type: ignore[index]
            path.append(part)
    last = detail["loc"][-1] if detail["loc"] else None
    if detail["type"] == "missing" and isinstance(last, str):
        path.append(last)
    return tuple(path), detail["type"] in ("extra_forbidden", "missing")


def _holds(container: object, part: str | int) -> bool:
    if isinstance(container, dict):
        return part in container
    return isinstance(container, list) and isinstance(part, int) and 0 <= part < len(container)


def _words(detail: ErrorDetails) -> str:
    kind = detail["type"]
    if kind in _TYPE_WORDS:
        return _TYPE_WORDS[kind]
    message = detail["msg"]
    if kind == "value_error":
        return message.removeprefix("Value error, ")
    if kind == "literal_error":
        return "expects " + message.removeprefix("Input should be ")
    if kind == "too_short":
        least = (detail.get("ctx") or {}).get("min_length", 1)
        return f"expects at least {least} item" + ("" if least == 1 else "s")
    return message
