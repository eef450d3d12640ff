"""Fitting the record in the 1 MiB the output shares with it (reasoning-format §9)."""

from __future__ import annotations

import json

from auto_runtime.functions.reasoning.record import fit_prompt
from auto_runtime.json_limits import json_size


def test_a_prompt_that_fits_is_kept_whole() -> None:
    record = fit_prompt("answer", {"usage": {}}, "rules", "message")
    assert record is not None
    assert record["prompt"] == {"instructions": "rules", "message": "message", "truncated": False}


def test_a_long_prompt_is_cut_so_output_and_record_fit_in_one_mib() -> None:
    output = "o" * 600_000
    record = fit_prompt(output, {"usage": {}}, "i" * 400_000, "m" * 400_000)
    assert record is not None and record["prompt"]["truncated"] is True
    assert record["prompt"]["message"].startswith("m") and record["prompt"]["instructions"].startswith("i")
    assert json_size(output) + json_size(record) <= 1_048_576
    without_instructions = fit_prompt(output, {}, None, "é" * 500_000)
    assert without_instructions is not None and "instructions" not in without_instructions["prompt"]
    assert json_size(output) + json_size(without_instructions) <= 1_048_576


def test_an_answer_that_leaves_under_1024_bytes_for_the_prompt_has_no_record() -> None:
    output = "o" * (1_048_576 - 1000)
    assert fit_prompt(output, {}, None, "m") is None
    assert json.dumps(output)
