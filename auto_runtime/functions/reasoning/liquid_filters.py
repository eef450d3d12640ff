"""The filters a prompt template may use (reasoning-format §3.3), each as its LiquidJS namesake behaves.

A filter takes the value, its positional arguments and its keyword arguments. `FilterError` stops the render:
the run ends `invalid_input` with the template's line.
"""

from __future__ import annotations

import base64
import binascii
import html
import json
import math
import re
import unicodedata
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

Filter = Callable[..., Any]


class FilterError(Exception):
    """A filter refused its value."""


def text(value: Any) -> str:
    """A value as Liquid writes it."""
    if value is None:
        return ""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, list):
        return "".join(text(item) for item in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return f"{value:.1f}"
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
    if isinstance(value, list):
        return value
    if value is None:
        return []
    if isinstance(value, dict):
        return [value]
    return [value]


def _get(item: Any, key: Any) -> Any:
    if isinstance(item, dict):
        return item.get(str(key))
    return None


def _whole(result: float) -> int | float:
    return int(result) if isinstance(result, float) and result.is_integer() else result


def money(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise FilterError("money expects a number or a text holding a decimal number")
    try:
        amount = Decimal(str(value).strip())
    except InvalidOperation:
        raise FilterError(f"money expects a number, not {str(value)[:40]!r}") from None
    if not amount.is_finite():
        raise FilterError("money expects a finite number")
    sign = "-" if amount < 0 else ""
    amount = abs(amount)
    if amount == amount.to_integral_value():
        return f"{sign}${int(amount):,}"
    cents = amount.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    return f"{sign}${cents:,.2f}"


def clip(value: Any, length: Any = 400) -> str:
    words = text(value)
    count = int(number(length))
    return words if len(words) <= count else words[: max(count, 0)] + "…"


def words(value: Any) -> int:
    return len(text(value).split())


def _slice(value: Any, start: Any, length: Any = 1) -> Any:
    begin, size = int(number(start)), int(number(length))
    sequence: Any = value if isinstance(value, list) else text(value)
    if begin < 0:
        begin = max(len(sequence) + begin, 0)
    return sequence[begin : begin + size]


def _truncate(value: Any, length: Any = 50, ending: Any = "...") -> str:
    words_, count, tail = text(value), int(number(length)), text(ending)
    if len(words_) <= count:
        return words_
    return words_[: max(count - len(tail), 0)] + tail


def _truncatewords(value: Any, count: Any = 15, ending: Any = "...") -> str:
    parts, limit = text(value).split(), max(int(number(count)), 1)
    if len(parts) <= limit:
        return " ".join(parts)
    return " ".join(parts[:limit]) + text(ending)


def _sort(value: Any, key: Any = None, natural: bool = False) -> list[Any]:
    items = list(_items(value))

    def order(item: Any) -> tuple[int, Any]:
        chosen = _get(item, key) if key is not None else item
        if chosen is None:
            return (2, "")
        if isinstance(chosen, bool):
            return (1, str(chosen))
        if isinstance(chosen, int | float):
            return (0, chosen)
        return (1, str(chosen).lower() if natural else str(chosen))

    return sorted(items, key=order)


def _where(value: Any, key: Any, *target: Any) -> list[Any]:
    if target:
        return [item for item in _items(value) if _get(item, key) == target[0]]
    return [item for item in _items(value) if _get(item, key) not in (None, False)]


def _reject(value: Any, key: Any, *target: Any) -> list[Any]:
    kept = _where(value, key, *target)
    return [item for item in _items(value) if item not in kept]


def _find(value: Any, key: Any, target: Any) -> Any:
    return next((item for item in _items(value) if _get(item, key) == target), None)


def _find_index(value: Any, key: Any, target: Any) -> Any:
    return next((index for index, item in enumerate(_items(value)) if _get(item, key) == target), None)


def _has(value: Any, key: Any, *target: Any) -> bool:
    return bool(_where(value, key, *target))


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


def _base64_decode(value: Any) -> str:
    try:
        return base64.b64decode(text(value), validate=False).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        raise FilterError("base64_decode expects base64 text") from None


def _divided_by(value: Any, divisor: Any) -> Any:
    left, right = number(value), number(divisor)
    if right == 0:
        raise FilterError("divided_by cannot divide by zero")
    if isinstance(left, int) and isinstance(right, int):
        return left // right
    return left / right


def _modulo(value: Any, divisor: Any) -> Any:
    left, right = number(value), number(divisor)
    if right == 0:
        raise FilterError("modulo cannot divide by zero")
    return math.fmod(left, right) if isinstance(left, float) or isinstance(right, float) else left % right


def _round(value: Any, digits: Any = 0) -> Any:
    places = int(number(digits))
    rounded = Decimal(str(number(value))).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    return int(rounded) if places <= 0 else float(rounded)


def _map(value: Any, key: Any) -> list[Any]:
    return [_get(item, key) for item in _items(value)]


def _sum(value: Any, key: Any = None) -> Any:
    return _whole(sum(number(_get(item, key) if key is not None else item) for item in _items(value)))


def _uniq(value: Any) -> list[Any]:
    seen: list[Any] = []
    for item in _items(value):
        if item not in seen:
            seen.append(item)
    return seen


def _default(value: Any, fallback: Any = "", allow_false: Any = False) -> Any:
    if value is False and allow_false:
        return value
    if value in (None, False, "") or value == [] or value == {}:
        return fallback
    return value


FILTERS: dict[str, Filter] = {
    "abs": lambda v: abs(number(v)),
    "append": lambda v, a: text(v) + text(a),
    "array_to_sentence_string": _sentence,
    "at_least": lambda v, a: max(number(v), number(a)),
    "at_most": lambda v, a: min(number(v), number(a)),
    "base64_decode": _base64_decode,
    "base64_encode": lambda v: base64.b64encode(text(v).encode()).decode(),
    "capitalize": lambda v: text(v)[:1].upper() + text(v)[1:].lower(),
    "ceil": lambda v: math.ceil(number(v)),
    "compact": lambda v, k=None: [i for i in _items(v) if (_get(i, k) if k is not None else i) is not None],
    "concat": lambda v, a: _items(v) + _items(a),
    "default": _default,
    "divided_by": _divided_by,
    "downcase": lambda v: text(v).lower(),
    "escape": lambda v: html.escape(text(v)),
    "escape_once": lambda v: html.escape(html.unescape(text(v))),
    "find": _find,
    "find_index": _find_index,
    "first": lambda v: (v[0] if v else None) if isinstance(v, list | str) else None,
    "floor": lambda v: math.floor(number(v)),
    "group_by": _group_by,
    "has": _has,
    "join": lambda v, s=" ": text(s).join(text(i) for i in _items(v)),
    "json": lambda v, indent=None: json.dumps(v, ensure_ascii=False, indent=int(number(indent)) if indent else None),
    "last": lambda v: (v[-1] if v else None) if isinstance(v, list | str) else None,
    "lstrip": lambda v: text(v).lstrip(),
    "map": _map,
    "minus": lambda v, a: _whole(number(v) - number(a)),
    "modulo": _modulo,
    "newline_to_br": lambda v: text(v).replace("\r\n", "\n").replace("\n", "<br />\n"),
    "normalize_whitespace": lambda v: re.sub(r"\s+", " ", text(v)),
    "number_of_words": lambda v, mode=None: len(text(v).split()),
    "plus": lambda v, a: _whole(number(v) + number(a)),
    "pop": lambda v, n=1: _items(v)[: max(len(_items(v)) - int(number(n)), 0)],
    "prepend": lambda v, a: text(a) + text(v),
    "push": lambda v, a: [*_items(v), a],
    "raw": lambda v: v,
    "reject": _reject,
    "remove": lambda v, a: text(v).replace(text(a), ""),
    "remove_first": lambda v, a: text(v).replace(text(a), "", 1),
    "remove_last": lambda v, a: _replace_last(text(v), text(a), ""),
    "replace": lambda v, a, b="": text(v).replace(text(a), text(b)),
    "replace_first": lambda v, a, b="": text(v).replace(text(a), text(b), 1),
    "replace_last": lambda v, a, b="": _replace_last(text(v), text(a), text(b)),
    "reverse": lambda v: list(reversed(_items(v))),
    "round": _round,
    "rstrip": lambda v: text(v).rstrip(),
    "shift": lambda v, n=1: _items(v)[int(number(n)) :],
    "size": lambda v: len(v) if isinstance(v, list | str | dict) else 0,
    "slice": _slice,
    "slugify": _slugify,
    "sort": lambda v, k=None: _sort(v, k),
    "sort_natural": lambda v, k=None: _sort(v, k, natural=True),
    "split": lambda v, s: text(v).split(text(s)) if text(s) else list(text(v)),
    "squish": lambda v: " ".join(text(v).split()),
    "strip": lambda v: text(v).strip(),
    "strip_newlines": lambda v: text(v).replace("\r", "").replace("\n", ""),
    "sum": _sum,
    "times": lambda v, a: _whole(number(v) * number(a)),
    "to_integer": lambda v: int(number(v)),
    "truncate": _truncate,
    "truncatewords": _truncatewords,
    "uniq": _uniq,
    "unshift": lambda v, a: [a, *_items(v)],
    "upcase": lambda v: text(v).upper(),
    "where": _where,
    "xml_escape": lambda v: html.escape(text(v), quote=True).replace("&#x27;", "&apos;"),
    "money": money,
    "clip": clip,
    "words": words,
}


def _replace_last(value: str, old: str, new: str) -> str:
    index = value.rfind(old)
    return value if index < 0 or not old else value[:index] + new + value[index + len(old) :]
