"""A prediction document (prediction-format §2–§3): YAML front matter between two `---` lines, then notes for the
trainer (the body, which may be empty).

`parse_document` checks what the document alone can say (each field's rule, fields that are not fields) and
returns the typed document or the problems, each a `Problem` whose line counts the opening `---` as line 1. What
needs the playbook (the dataset, its columns, the trainer and the approving function) is `playbook_checks`'.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

from auto_runtime.functions.prediction.periods import DEFAULT_SEASON, FREQUENCIES, Frequency
from auto_runtime.functions.reasoning.front_matter import Problem, read_front_matter
from auto_runtime.problems import InputIssue, Rejection, invalid_input

MAX_LISTED: Final = 20
DIGEST: Final = re.compile(r"[0-9a-f]{64}")
COLUMN: Final = re.compile(r"[a-z][a-z0-9_]{0,63}")
DEFINITION_NAME: Final = re.compile(r"[a-z][a-z0-9-]{2,47}")
NOT_A_FIELD: Final = " is not a field of a prediction function"
CONTRACT_FIELDS: Final = ("period", "target", "features", "lags", "horizons", "coverage")
"""The fields a version is built to answer (§6): a change of any of them makes earlier versions unfit."""


@dataclass(frozen=True)
class PredictionDocument:
    """A document whose fields all keep their rules; defaults filled in (§3)."""

    source: str
    description: str | None
    dataset: str
    period: Frequency
    target: str
    features: tuple[str, ...]
    lags: int
    horizons: tuple[int, ...]
    season: int
    coverage: float
    coverage_slack: float
    beat_by: float
    backtest: int
    observed: int
    trainer: str
    approve: str | None
    shadow_periods: int
    notes: str
    lines: dict[str, int]
    """The document line of each field's key, by field name (`shadow.periods` for the nested one)."""

    @property
    def contract(self) -> dict[str, Any]:
        """What a version built under this document answers (§6)."""
        return {
            "period": self.period,
            "target": self.target,
            "features": list(self.features),
            "lags": self.lags,
            "horizons": list(self.horizons),
            "coverage": self.coverage,
        }


@dataclass(frozen=True)
class _Split:
    front_matter: str
    body: str


def _split(source: str) -> _Split | Problem:
    lines = source.split("\n")
    if lines[0].rstrip("\r") != "---":
        return Problem(1, "", "A prediction document begins with a line of three dashes, ---")
    for index in range(1, len(lines)):
        if lines[index].rstrip("\r") == "---":
            return _Split("\n".join(lines[1:index]), "\n".join(lines[index + 1 :]))
    return Problem(1, "", "The front matter has no closing line of three dashes, ---")


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _two_decimals(value: float) -> bool:
    exponent = Decimal(repr(value)).normalize().as_tuple().exponent
    return isinstance(exponent, int) and exponent >= -2


class _Fields:
    """The checks of §3, one field at a time; problems gather in `problems`."""

    def __init__(self, values: dict[str, Any], lines: dict[str, int]) -> None:
        self.values = values
        self.lines = lines
        self.problems: list[Problem] = []

    def line(self, name: str) -> int:
        return self.lines.get(name, 1)

    def refuse(self, name: str, words: str) -> None:
        self.problems.append(Problem(self.line(name), "", words))

    def required(self, name: str) -> Any:
        if name not in self.values:
            self.problems.append(Problem(1, "", f"The front matter needs {name}"))
        return self.values.get(name)

    def integer(self, name: str, low: int, high: int, default: int | None = None) -> int | None:
        if name not in self.values:
            if default is None:
                self.required(name)
            return default
        value = self.values[name]
        if not _is_integer(value) or not low <= value <= high:
            self.refuse(name, f"{name} is an integer from {low:,} to {high:,}")
            return None
        return int(value)

    def fraction(self, name: str, low: float, high: float, default: float, *, two_decimals: bool) -> float | None:
        if name not in self.values:
            return default
        value = self.values[name]
        if not _is_number(value) or not low <= value <= high:
            self.refuse(name, f"{name} is a number from {low:g} to {high:g}")
            return None
        if two_decimals and not _two_decimals(float(value)):
            self.refuse(name, f"{name} has at most two decimals")
            return None
        return float(value)

    def name(self, field: str, pattern: re.Pattern[str], words: str) -> str | None:
        value = self.values.get(field)
        if not isinstance(value, str) or pattern.fullmatch(value) is None:
            self.refuse(field, words)
            return None
        return value


def _read_fields(
    values: dict[str, Any], lines: dict[str, int], source: str, body: str
) -> PredictionDocument | list[Problem]:
    fields = _Fields(values, lines)
    description: str | None = None
    if "description" in values:
        text = values["description"]
        if not isinstance(text, str) or not 1 <= len(text) <= 1000:
            fields.refuse("description", "description is 1 to 1,000 characters of text")
        else:
            description = text
    dataset = None
    if "dataset" in values:
        dataset = fields.name(
            "dataset", DIGEST, "dataset is the SHA-256 of an uploaded dataset: 64 lowercase hex digits"
        )
    else:
        fields.required("dataset")
    period: Frequency | None = None
    if "period" in values:
        if values["period"] not in FREQUENCIES:
            fields.refuse("period", "period is one of hour, day, week, month, quarter or year")
        else:
            period = values["period"]
    else:
        fields.required("period")
    target = None
    if "target" in values:
        target = fields.name("target", COLUMN, "target names a number column of the dataset")
    else:
        fields.required("target")
    features: tuple[str, ...] = ()
    if "features" in values:
        listed = values["features"]
        if (
            not isinstance(listed, list)
            or len(listed) > 16
            or not all(isinstance(item, str) and COLUMN.fullmatch(item) for item in listed)
        ):
            fields.refuse("features", "features lists 0 to 16 number columns of the dataset")
        elif len(set(listed)) != len(listed):
            fields.refuse("features", "features names each column once")
        elif target is not None and target in listed:
            fields.refuse("features", f"features does not name the target, {target}")
        else:
            features = tuple(listed)
    lags = fields.integer("lags", 1, 512)
    horizons: tuple[int, ...] | None = None
    if "horizons" in values:
        listed = values["horizons"]
        if (
            not isinstance(listed, list)
            or not 1 <= len(listed) <= 24
            or not all(_is_integer(item) and 1 <= item <= 500 for item in listed)
        ):
            fields.refuse("horizons", "horizons lists 1 to 24 integers from 1 to 500")
        elif any(later <= earlier for earlier, later in itertools.pairwise(listed)):
            fields.refuse("horizons", "horizons is not strictly ascending: list each horizon once, smallest first")
        else:
            horizons = tuple(int(item) for item in listed)
    else:
        fields.required("horizons")
    season = fields.integer("season", 1, 8784, DEFAULT_SEASON[period] if period is not None else 1)
    coverage = fields.fraction("coverage", 0.5, 0.99, 0.8, two_decimals=True)
    coverage_slack = fields.fraction("coverage_slack", 0, 0.3, 0.1, two_decimals=True)
    beat_by = fields.fraction("beat_by", 0, 0.5, 0.0, two_decimals=False)
    backtest = fields.integer("backtest", 1, 52, 8)
    observed = fields.integer("observed", 1, 120, 12)
    trainer = None
    if "trainer" in values:
        trainer = fields.name("trainer", DEFINITION_NAME, "trainer names an interaction function of the playbook")
    else:
        fields.required("trainer")
    approve = None
    if "approve" in values:
        approve = fields.name("approve", DEFINITION_NAME, "approve names an interaction function of the playbook")
    shadow_periods: int | None = 1
    if "shadow" in values:
        shadow = values["shadow"]
        if not isinstance(shadow, dict):
            fields.refuse("shadow", "shadow takes periods")
            shadow_periods = None
        else:
            for key in shadow:
                if key != "periods":
                    fields.problems.append(
                        Problem(lines.get(f"shadow.{key}", fields.line("shadow")), "", f"shadow.{key}{NOT_A_FIELD}")
                    )
            if "periods" in shadow:
                value = shadow["periods"]
                if not _is_integer(value) or not 0 <= value <= 24:
                    fields.problems.append(
                        Problem(
                            lines.get("shadow.periods", fields.line("shadow")),
                            "",
                            "shadow.periods is an integer from 0 to 24",
                        )
                    )
                    shadow_periods = None
                else:
                    shadow_periods = int(value)
    known = {
        "description", "dataset", "period", "target", "features", "lags", "horizons", "season", "coverage",
        "coverage_slack", "beat_by", "backtest", "observed", "trainer", "approve", "shadow",
    }  # fmt: skip
    for key in values:
        if key not in known:
            fields.refuse(key, f"{key}{NOT_A_FIELD}")
    if fields.problems:
        return fields.problems
    assert dataset is not None and period is not None and target is not None and lags is not None
    assert horizons is not None and season is not None and coverage is not None and coverage_slack is not None
    assert beat_by is not None and backtest is not None and observed is not None and trainer is not None
    assert shadow_periods is not None
    return PredictionDocument(
        source=source,
        description=description,
        dataset=dataset,
        period=period,
        target=target,
        features=features,
        lags=lags,
        horizons=horizons,
        season=season,
        coverage=coverage,
        coverage_slack=coverage_slack,
        beat_by=beat_by,
        backtest=backtest,
        observed=observed,
        trainer=trainer,
        approve=approve,
        shadow_periods=shadow_periods,
        notes=body,
        lines=lines,
    )


def _key_lines(raw_lines: dict[str, int]) -> dict[str, int]:
    """The line of each top-level key (`/lags` → `lags`) and of shadow's keys (`/shadow/periods` →
    `shadow.periods`), from the reader's pointer lines."""
    keys: dict[str, int] = {}
    for pointer, line in raw_lines.items():
        parts = pointer.split("/")[1:]
        if len(parts) == 1:
            keys[parts[0]] = line
        elif len(parts) == 2 and parts[0] == "shadow":
            keys[f"shadow.{parts[1]}"] = line
    return keys


def parse_document(source: str) -> PredictionDocument | list[Problem]:
    """The document, or its problems sorted by line."""
    split = _split(source)
    if isinstance(split, Problem):
        return [split]
    front = read_front_matter(split.front_matter, 2)
    if front.problems:
        return sorted(front.problems, key=lambda problem: problem.line)
    if not isinstance(front.value, dict):
        return [Problem(2, "", "The front matter is a mapping of fields")]
    read = _read_fields(front.value, _key_lines(front.lines), source, split.body.strip("\n") and split.body)
    if isinstance(read, list):
        return sorted(read, key=lambda problem: problem.line)
    return read


def refusal(problems: list[Problem]) -> Rejection:
    """`invalid_input` at `/source`: `Line N: ` and the words, at most 20, then a count (§3)."""
    issues = [InputIssue(f"Line {problem.line}: {problem.words}.", "/source") for problem in problems[:MAX_LISTED]]
    if len(problems) > MAX_LISTED:
        issues.append(InputIssue(f"And {len(problems) - MAX_LISTED} more problems.", "/source"))
    return invalid_input(issues)
