"""Reading an uploaded dataset (prediction-format §4, "CSV rules"): one pass over its lines, in a worker thread.

The reader takes the body's lines as bytes, one at a time (a file read line by line), so a 64 MiB upload is
never whole in memory; it keeps the summary, the problems (at most `MAX_ERRORS`, in line order, and whether the
first is of the `not_in_order` or `not_finite` kind), and, when asked (`keep_values`), each series' values as
arrays of doubles, for builds and questions.

Pointers: `/body/{line}` for a row, `/body/{line}/{column}` for a cell (the column's name), line 1 the header.
"""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from auto_runtime.functions.prediction.periods import FORM_EXAMPLES, Frequency, form_of, ordinal_of, period_text
from auto_runtime.problems import InputIssue

MAX_ERRORS: Final = 20
MAX_COLUMNS: Final = 64
MAX_SERIES: Final = 10_000
MAX_ROWS: Final = 5_000_000
MAX_SERIES_NAME: Final = 64
COLUMN_NAME: Final = re.compile(r"[a-z][a-z0-9_]{0,63}")
NUMBER: Final = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")
NOT_FINITE_WORDS: Final = frozenset({"nan", "inf", "infinity"})
CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f]")
BOM: Final = b"\xef\xbb\xbf"


@dataclass
class SeriesValues:
    """One series: the ordinal of its first period, and each number column's values in period order."""

    first: int
    columns: dict[str, array[float]]

    @property
    def length(self) -> int:
        return len(next(iter(self.columns.values())))


@dataclass
class DatasetReading:
    """What one pass found: the problems, else the summary and (with `keep_values`) the series."""

    errors: list[InputIssue] = field(default_factory=list)
    error_count: int = 0
    because: str | None = None
    rows: int = 0
    columns: list[dict[str, str]] = field(default_factory=list)
    period: Frequency | None = None
    first: int | None = None
    last: int | None = None
    series: dict[str, SeriesValues] = field(default_factory=dict)
    series_count: int = 0

    def summary(self, dataset: str, size: int) -> dict[str, Any]:
        """The upload's answer (§4): only for a reading without problems."""
        assert self.period is not None and self.first is not None and self.last is not None
        return {
            "dataset": dataset,
            "bytes": size,
            "rows": self.rows,
            "series": self.series_count,
            "columns": self.columns,
            "period": self.period,
            "first_period": period_text(self.period, self.first),
            "last_period": period_text(self.period, self.last),
        }


class _Unquoted(Exception):
    """A quoted field that does not end on its line, or text after a closing quote."""


def split_fields(line: str) -> list[str]:
    """The comma-separated fields of one line, quotes read (`""` inside a quoted field is one quote).

    Not the `csv` module's reader: it refuses a lone carriage return in an unquoted field ("new-line character
    seen in unquoted field"), which the rules read as a character of the cell (lines end in LF or CRLF only), so
    the cell's own refusal and pointer would be lost; and a reader per line costs about three times this."""
    fields: list[str] = []
    position, length = 0, len(line)
    while True:
        if position < length and line[position] == '"':
            value: list[str] = []
            position += 1
            while True:
                end = line.find('"', position)
                if end < 0:
                    raise _Unquoted
                value.append(line[position:end])
                if end + 1 < length and line[end + 1] == '"':
                    value.append('"')
                    position = end + 2
                    continue
                position = end + 1
                break
            fields.append("".join(value))
            if position == length:
                return fields
            if line[position] != ",":
                raise _Unquoted
            position += 1
        else:
            end = line.find(",", position)
            if end < 0:
                fields.append(line[position:])
                return fields
            fields.append(line[position:end])
            position = end + 1


class DatasetReader:
    """One pass over a dataset's lines (see the module). Feed every line to `line`, then call `finish`."""

    def __init__(self, keep_values: bool = False) -> None:
        self.keep_values = keep_values
        self.reading = DatasetReading()
        self.number = 0
        self.header: list[str] | None = None
        self.numbers: list[tuple[int, str]] = []
        self.period_at = -1
        self.series_at = -1
        self.expected: dict[str, int] = {}
        self.too_many_series = False
        self.too_many_rows = False
        self.header_refused = False

    def _error(self, detail: str, pointer: str, kind: str | None = None) -> None:
        reading = self.reading
        if reading.error_count == 0:
            reading.because = kind
        reading.error_count += 1
        if len(reading.errors) < MAX_ERRORS:
            reading.errors.append(InputIssue(f"Line {self.number}: {detail}", pointer))

    def line(self, raw: bytes) -> None:
        self.number += 1
        if self.number == 1 and raw.startswith(BOM):
            raw = raw[len(BOM) :]
        if raw.endswith(b"\r\n"):
            raw = raw[:-2]
        elif raw.endswith(b"\n"):
            raw = raw[:-1]
        where = f"/body/{self.number}"
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            self._error("the line is not UTF-8 text.", where)
            return
        if text == "":
            self._error("the line is empty; a dataset has no empty lines.", where)
            return
        try:
            cells = split_fields(text)
        except _Unquoted:
            self._error(
                "a quoted field does not end on its line: a quoted field may not hold a line break, and its "
                "closing quote is followed by a comma or the end of the line.",
                where,
            )
            return
        if self.header is None:
            self._read_header(cells)
        elif not self.header_refused:
            self._read_row(cells)

    def _read_header(self, names: list[str]) -> None:
        self.header = names
        where = "/body/1"
        problems = len(self.reading.errors)
        if len(names) > MAX_COLUMNS:
            self._error(f"the header names {len(names)} columns; a dataset has at most {MAX_COLUMNS}.", where)
        seen: set[str] = set()
        for name in names:
            if COLUMN_NAME.fullmatch(name) is None:
                self._error(
                    f"the column name {name!r} does not match ^[a-z][a-z0-9_]{{0,63}}$: a lowercase letter, then "
                    "lowercase letters, digits and underscores.",
                    where,
                )
            elif name in seen:
                self._error(f"the column {name} is named twice.", where)
            seen.add(name)
        for required in ("period", "series"):
            if required not in seen:
                self._error(f"the header has no {required} column; a dataset needs period and series.", where)
        if len(seen - {"period", "series"}) == 0:
            self._error("the header names no column besides period and series; a dataset needs one.", where)
        if len(self.reading.errors) > problems:
            self.header_refused = True
            return
        self.period_at = names.index("period")
        self.series_at = names.index("series")
        self.numbers = [(index, name) for index, name in enumerate(names) if name not in ("period", "series")]
        self.reading.columns = [
            {"name": name, "kind": name if name in ("period", "series") else "number"} for name in names
        ]

    def _read_row(self, cells: list[str]) -> None:
        assert self.header is not None
        where = f"/body/{self.number}"
        reading = self.reading
        reading.rows += 1
        if reading.rows > MAX_ROWS:
            if not self.too_many_rows:
                self._error(f"the dataset has more than {MAX_ROWS:,} rows.", where)
                self.too_many_rows = True
            return
        if len(cells) != len(self.header):
            self._error(f"the row has {len(cells)} fields, not the {len(self.header)} of the header.", where)
            return
        ordinal = self._period(cells[self.period_at], where + "/period")
        name = cells[self.series_at]
        series_ok = self._series_name(name, where + "/series")
        values: list[float] = []
        for index, column in self.numbers:
            value = self._number(cells[index], f"{where}/{column}", column)
            values.append(value if value is not None else math.nan)
        if not series_ok:
            return
        known = name in self.expected
        if not known:
            if len(self.expected) >= MAX_SERIES:
                if not self.too_many_series:
                    self._error(f"the dataset has more than {MAX_SERIES:,} series.", where + "/series")
                    self.too_many_series = True
                return
            reading.series_count += 1
        if ordinal is None:
            return
        if known and ordinal != self.expected[name]:
            assert reading.period is not None
            self._error(
                f"the series {name} holds {period_text(reading.period, self.expected[name])} next, the period "
                f"right after its previous row; this row holds {period_text(reading.period, ordinal)}.",
                where + "/period",
                "not_in_order",
            )
        self.expected[name] = ordinal + 1
        reading.first = ordinal if reading.first is None else min(reading.first, ordinal)
        reading.last = ordinal if reading.last is None else max(reading.last, ordinal)
        if self.keep_values and reading.error_count == 0:
            kept = reading.series.get(name)
            if kept is None:
                kept = SeriesValues(ordinal, {column: array("d") for _, column in self.numbers})
                reading.series[name] = kept
            for (_, column), value in zip(self.numbers, values, strict=True):
                kept.columns[column].append(value)

    def _period(self, text: str, where: str) -> int | None:
        reading = self.reading
        if reading.period is None:
            frequency = form_of(text)
            if frequency is None:
                self._error(
                    f"the period {text!r} has none of the forms 2026-07-01T13:00:00Z, 2026-07-01, 2026-W27, "
                    "2026-07, 2026-Q3 or 2026.",
                    where,
                )
                return None
            reading.period = frequency
        ordinal = ordinal_of(reading.period, text)
        if ordinal is None:
            example = FORM_EXAMPLES[reading.period]
            self._error(
                f"the period {text!r} is not a real {reading.period} in the form of {example}, the dataset's form.",
                where,
            )
        return ordinal

    def _series_name(self, name: str, where: str) -> bool:
        if not 1 <= len(name) <= MAX_SERIES_NAME:
            self._error(f"a series name is 1 to {MAX_SERIES_NAME} characters.", where)
            return False
        if CONTROL.search(name) is not None:
            self._error("a series name holds no control characters.", where)
            return False
        if name != name.strip(" "):
            self._error("a series name has no leading or trailing spaces.", where)
            return False
        return True

    def _number(self, text: str, where: str, column: str) -> float | None:
        if text == "":
            self._error(f"the cell of {column} is empty; every cell holds a value.", where)
            return None
        if text.lstrip("+-").lower() in NOT_FINITE_WORDS:
            self._error(f"the value of {column}, {text}, is not finite.", where, "not_finite")
            return None
        if NUMBER.fullmatch(text) is None:
            self._error(f"the cell of {column}, {text!r}, is not a number.", where)
            return None
        value = float(text)
        if not math.isfinite(value):
            self._error(
                f"the value of {column}, {text}, is not finite: it is too large for a double.", where, "not_finite"
            )
            return None
        return value

    def finish(self) -> DatasetReading:
        reading = self.reading
        if self.header is None:
            self.number = max(self.number, 1)
            self._error("the dataset is empty; its first line is the header.", "/body/1")
        elif reading.rows == 0 and not self.header_refused:
            self._error("the dataset has a header and no rows.", "/body/1")
        return reading


def read_dataset(lines: Iterable[bytes], keep_values: bool = False) -> DatasetReading:
    """One pass over `lines` (each with its line break, as a binary file yields them)."""
    reader = DatasetReader(keep_values)
    for raw in lines:
        reader.line(raw)
    return reader.finish()
