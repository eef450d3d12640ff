"""The dataset reader's field splitter against the CSV rules (prediction-format §4, rule 2), and where the
standard `csv` module reads a line otherwise (why the splitter stays)."""

from __future__ import annotations

import csv

import pytest

from auto_runtime.functions.prediction import dataset_csv

SPLITS: list[tuple[str, list[str] | None]] = [
    ("a,b", ["a", "b"]),
    ('"a,b",c', ["a,b", "c"]),
    ('"a""b"', ['a"b']),
    ('ab"c', ['ab"c']),
    (' "a"', [' "a"']),
    ("a,", ["a", ""]),
    (",", ["", ""]),
    ('"",""', ["", ""]),
    ("a\rb", ["a\rb"]),
    ('"a\rb"', ["a\rb"]),
    ('"ab"c', None),
    ('"abc', None),
    ('a,"b', None),
    ('"a" ,b', None),
]


def _split(line: str) -> list[str] | None:
    try:
        return dataset_csv.split_fields(line)
    except dataset_csv._Unquoted:
        return None


@pytest.mark.parametrize(("line", "fields"), SPLITS, ids=range(len(SPLITS)))
def test_fields_are_split_as_the_rules_say(line: str, fields: list[str] | None) -> None:
    assert _split(line) == fields


def test_the_csv_module_refuses_a_lone_carriage_return_the_rules_keep_in_its_cell() -> None:
    with pytest.raises(csv.Error, match="new-line character seen in unquoted field"):
        next(csv.reader(["a\rb"], strict=True))
    assert _split("a\rb") == ["a\rb"]
