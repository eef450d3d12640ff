"""The words for a value the sandbox's writer cannot write as JSON (computation page, "How a run ends").

A computation's output and a workflow expression's value are written by the same writer and refused in the
same words (README settled point 19): `W at P` for something JSON cannot carry, `it nests deeper than 512
levels at P` past the depth bound, P the JSON Pointer of the place or `the top` for the value itself.
"""

from __future__ import annotations

from auto_runtime.sandbox.limits import MAX_DEPTH

THE_TOP = "the top"


def place_words(pointer: str) -> str:
    """The place as the detail names it: its JSON Pointer, or `the top` for the value itself (`""`)."""
    return pointer if pointer else THE_TOP


def not_json_words(what: str, pointer: str) -> str:
    """`W at P`: the first thing JSON cannot carry (`what`, the page's W) and where it stands."""
    return f"{what} at {place_words(pointer)}"


def too_deep_words(pointer: str) -> str:
    """`it nests deeper than 512 levels at P`, P the first place past the bound."""
    return f"it nests deeper than {MAX_DEPTH} levels at {place_words(pointer)}"
