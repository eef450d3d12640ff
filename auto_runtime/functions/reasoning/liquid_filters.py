"""The filters of reasoning-format §3.3 that python-liquid does not ship, registered as our own.

Each behaves as the LiquidJS filter of that name did for the predecessor; `money`, `clip` and `words` are this
format's own. A filter that refuses its value raises `FilterValueError`: the run ends `invalid_input` with the
template's line.
"""

from __future__ import annotations

import html
import json
import re
import unicodedata
from collections.abc import Callable, Mapping
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from liquid.exceptions import FilterValueError

Filter = Callable[..., Any]


def _refuse(words: str) -> FilterValueError:
    return FilterValueError(words, token=None)


def text(value: Any) -> str:
    """A value as Liquid writes it."""
    if value is None:
        return ""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, list | tuple | range):
        return "".join(text(item) for item in value)
    if isinstance(value, Mapping):
        return json.dumps(dict(value), ensure_ascii=False, default=str)
    return str(value)


def number(value: Any) -> int | float:
    if isinstance(value, bool) or value is None:
        return 0
    if isinstance(value, int | float):
        return value
    try:
        parsed = float(str(value).strip())
    except ValueError:
        return 0
    return int(parsed) if parsed.is_integer() and "." not in str(value) else parsed


def _items(value: Any) -> list[Any]:
    if isinstance(value, list | tuple | range):
        return list(value)
    if value is None:
        return []
    return [value]


def _get(item: Any, key: Any) -> Any:
    if isinstance(item, Mapping):
        return item.get(str(key))
    return None


def money(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise _refuse("money expects a number or a text holding a decimal number")
    try:
        amount = Decimal(str(value).strip())
    except InvalidOperation:
        raise _refuse(f"money expects a number, not {str(value)[:40]!r}") from None
    if not amount.is_finite():
        raise _refuse("money expects a finite number")
    sign = "-" if amount < 0 else ""
    amount = abs(amount)
    if amount == amount.to_integral_value():
        return f"{sign}${int(amount):,}"
    cents = amount.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    return f"{sign}${cents:,.2f}"


def clip(value: Any, length: Any = 400) -> str:
    words_ = text(value)
    count = int(number(length))
    return words_ if len(words_) <= count else words_[: max(count, 0)] + "…"


def words(value: Any) -> int:
    return len(text(value).split())


def _group_by(value: Any, key: Any) -> list[dict[str, Any]]:
    groups: dict[str, list[Any]] = {}
    for item in _items(value):
        groups.setdefault(text(_get(item, key)), []).append(item)
    return [{"name": name, "items": items} for name, items in groups.items()]


def _sentence(value: Any, connector: Any = "and") -> str:
    items = [text(item) for item in _items(value)]
    if len(items) <= 1:
        return "".join(items)
    if len(items) == 2:
        return f"{items[0]} {text(connector)} {items[1]}"
    return ", ".join(items[:-1]) + f", {text(connector)} {items[-1]}"


def _slugify(value: Any, mode: Any = "default", cased: Any = False) -> str:
    words_ = unicodedata.normalize("NFKD", text(value)) if mode == "latin" else text(value)
    if mode == "latin":
        words_ = words_.encode("ascii", "ignore").decode()
    pattern = {"raw": r"\s+", "pretty": r"[^\w.~!$&'()+,;=@-]+", "none": None}.get(str(mode), r"[^\w]+")
    if pattern is not None:
        words_ = re.sub(pattern, "-", words_).strip("-")
    return words_ if cased else words_.lower()


def _json(value: Any, indent: Any = None) -> str:
    spaces = int(number(indent)) if indent else None
    return json.dumps(value, ensure_ascii=False, indent=spaces, default=_plain)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, range):
        return list(value)
    return str(value)


FILTERS: dict[str, Filter] = {
    "array_to_sentence_string": _sentence,
    "group_by": _group_by,
    "json": _json,
    "normalize_whitespace": lambda v: re.sub(r"\s+", " ", text(v)),
    "number_of_words": lambda v, mode=None: len(text(v).split()),
    "pop": lambda v, n=1: _items(v)[: max(len(_items(v)) - int(number(n)), 0)],
    "push": lambda v, a: [*_items(v), a],
    "raw": lambda v: v,
    "shift": lambda v, n=1: _items(v)[int(number(n)) :],
    "slugify": _slugify,
    "to_integer": lambda v: int(number(v)),
    "unshift": lambda v, a: [a, *_items(v)],
    "xml_escape": lambda v: html.escape(text(v), quote=True).replace("&#x27;", "&apos;"),
    "money": money,
    "clip": clip,
    "words": words,
}
