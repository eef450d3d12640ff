"""prediction-format §2–§3 and §7 (seeds, "Prediction functions"): saving a prediction function, every
save-time refusal at `/source` with its line, `PREDICTION_MAX_FUNCTIONS`, the schemas and the overview; and
output-shapes.md: every prediction function shows the `series` schema and `details.shape`."""

from __future__ import annotations

import httpx

from tests.conformance.helpers import problem
from tests.conformance.prediction.helpers import SALES, create, digest, document, uploaded


def _details(response: httpx.Response) -> list[str]:
    body = problem(response, 422, "invalid_input")
    assert {error["pointer"] for error in body["errors"]} == {"/source"}
    return [error["detail"] for error in body["errors"]]


def test_a_function_saves_with_its_schemas_shape_and_overview(client: httpx.Client, playbook: str) -> None:
    dataset = uploaded(client, playbook)["dataset"]
    response = create(client, playbook, "units-ahead", document(dataset))
    assert response.status_code == 201, response.text
    saved = response.json()
    assert saved["type"] == "prediction" and saved["version"] == 1
    assert saved["details"] == {"shape": "series"}
    assert saved["output_schema"]["$id"] == "https://on.auto/schemas/runtime/shapes/series"
    question, build = saved["input_schema"]["oneOf"]
    assert question["required"] == ["series"] and question["properties"]["horizon"] == {
        "enum": [1, 2],
        "description": "One of the function's horizons",
    }
    assert build["properties"]["build"]["maxProperties"] == 0
    listed = client.get(f"{playbook}/definitions/prediction").json()["definitions"]
    assert listed[0]["details"] == {"shape": "series"} and listed[0]["output_schema"] == saved["output_schema"]
    overview = client.get(f"{playbook}/definitions/prediction/units-ahead").json()["overview"]
    assert overview.startswith("# units-ahead\n")
    trainer = client.get(f"{playbook}/definitions/interaction/train-forecasts").json()["overview"]
    assert "- the prediction `units-ahead`, which sends it builds to train" in trainer


def test_an_approving_function_lists_the_function_under_used_by(client: httpx.Client, playbook: str) -> None:
    dataset = uploaded(client, playbook)["dataset"]
    assert create(client, playbook, "approved", document(dataset, approve="approve-versions")).status_code == 201
    overview = client.get(f"{playbook}/definitions/interaction/approve-versions").json()["overview"]
    assert "- the prediction `approved`, which asks it to approve a version" in overview


def test_the_dataset_must_be_uploaded_to_this_playbook(client: httpx.Client, playbook: str) -> None:
    details = _details(create(client, playbook, "no-data", document(digest(b"never uploaded"))))
    assert len(details) == 1 and details[0].startswith("Line 3: dataset names no dataset uploaded")


def test_period_target_and_features_must_fit_the_dataset(client: httpx.Client, playbook: str) -> None:
    dataset = uploaded(client, playbook)["dataset"]
    source = document(dataset, period="week", target="revenue", features="[price, period, discount]")
    details = _details(create(client, playbook, "misfit", source))
    assert [detail.split(":")[0] for detail in details] == ["Line 4", "Line 5", "Line 6", "Line 6"]
    assert "month" in details[0]


def test_trainer_and_approve_must_name_fitting_interaction_functions(client: httpx.Client, playbook: str) -> None:
    dataset = uploaded(client, playbook)["dataset"]
    for trainer in ("no-such-function", "call-tool", "read-replies"):
        details = _details(create(client, playbook, "trainers", document(dataset, trainer=trainer)))
        assert len(details) == 1 and details[0].startswith("Line 12: trainer "), details
    details = _details(create(client, playbook, "approvers", document(dataset, approve="no-decision")))
    assert len(details) == 1 and details[0].startswith("Line 13: approve "), details


def test_field_rules(client: httpx.Client, playbook: str) -> None:
    dataset = uploaded(client, playbook)["dataset"]
    cases = {
        "description": ('""', 2),
        "dataset": ("ABC", 3),
        "period": ("fortnight", 4),
        "target": ("Units", 5),
        "features": ("[units]", 6),
        "lags": (513, 7),
        "horizons": ("[2, 1]", 8),
        "season": (0, 9),
        "coverage": (0.995, 10),
        "backtest": (53, 11),
        "trainer": ("X", 12),
    }
    for field, (value, line) in cases.items():
        details = _details(create(client, playbook, "fields", document(dataset, **{field: value})))
        assert details[0].startswith(f"Line {line}: {field}"), (field, details)
    more = {
        "coverage_slack": 0.31,
        "beat_by": 0.6,
        "observed": 0,
        "approve": "[x]",
        "shadow": "{ periods: 25 }",
    }
    for field, value in more.items():
        details = _details(create(client, playbook, "fields", document(dataset, **{field: value})))
        assert details[0].startswith(f"Line 13: {field}"), (field, details)


def test_horizons_not_strictly_ascending(client: httpx.Client, playbook: str) -> None:
    dataset = uploaded(client, playbook)["dataset"]
    details = _details(create(client, playbook, "ascending", document(dataset, horizons="[1, 1]")))
    assert details == ["Line 8: horizons is not strictly ascending: list each horizon once, smallest first."]


def test_other_fields_are_refused_with_their_line(client: httpx.Client, playbook: str) -> None:
    dataset = uploaded(client, playbook)["dataset"]
    source = document(dataset, input="{}", output="{}", model="x", tools="[]", config="{}", language="python")
    details = _details(create(client, playbook, "others", source))
    assert details == [
        f"Line {line}: {field} is not a field of a prediction function."
        for line, field in zip(range(13, 19), ("input", "output", "model", "tools", "config", "language"), strict=True)
    ]


def test_required_fields(client: httpx.Client, playbook: str) -> None:
    dataset = uploaded(client, playbook)["dataset"]
    source = document(dataset, dataset=None, period=None, target=None, lags=None, horizons=None, trainer=None)
    details = _details(create(client, playbook, "bare", source))
    assert [detail.rsplit(" ", 1)[-1] for detail in details] == [
        "dataset.", "period.", "target.", "lags.", "horizons.", "trainer."
    ]  # fmt: skip


def test_at_most_twenty_problems_then_a_count(client: httpx.Client, playbook: str) -> None:
    dataset = uploaded(client, playbook)["dataset"]
    extra = {f"extra_{index:02d}": 1 for index in range(25)}
    details = _details(create(client, playbook, "many", document(dataset, **extra)))
    assert len(details) == 21 and details[-1] == "And 5 more problems."


def test_prediction_max_functions_refuses_one_more_as_conflict(client: httpx.Client, playbook: str) -> None:
    """The test server runs with `PREDICTION_MAX_FUNCTIONS=3`."""
    dataset = uploaded(client, playbook)["dataset"]
    for index in range(3):
        assert create(client, playbook, f"function-{index}", document(dataset)).status_code == 201
    refused = problem(create(client, playbook, "function-3", document(dataset)), 409, "conflict")
    assert refused["detail"] == (
        "This playbook keeps 3 active prediction functions and may keep at most 3; retire one first"
    )
    assert client.post(f"{playbook}/definitions/prediction/function-0/retire").status_code == 200
    assert create(client, playbook, "function-3", document(dataset)).status_code == 201


def test_a_question_before_any_build_is_no_version(client: httpx.Client, playbook: str) -> None:
    dataset = uploaded(client, playbook)["dataset"]
    assert create(client, playbook, "asked", document(dataset)).status_code == 201
    run = client.post(f"{playbook}/definitions/prediction/asked/run", json={"input": {"series": "north"}})
    problem(run, 409, "conflict", "no_version")


def test_question_inputs_are_checked_against_the_schema(client: httpx.Client, playbook: str) -> None:
    dataset = uploaded(client, playbook)["dataset"]
    assert create(client, playbook, "checked", document(dataset)).status_code == 201
    url = f"{playbook}/definitions/prediction/checked/run"
    cases = [
        ({"series": "north", "horizon": 3}, ["/input/horizon"]),
        ({"series": ""}, ["/input/series"]),
        ({"series": "north", "extra": 1}, ["/input/extra"]),
        ({"build": {"now": True}}, ["/input/build"]),
    ]
    for value, expected in cases:
        body = problem(client.post(url, json={"input": value}), 422, "invalid_input")
        assert [error["pointer"] for error in body["errors"]] == expected, value


def test_the_sample_of_the_spec_saves(client: httpx.Client, playbook: str) -> None:
    dataset = uploaded(client, playbook, SALES)["dataset"]
    source = (
        f"---\ndescription: Units sold per region, one and two months ahead\ndataset: {dataset}\nperiod: month\n"
        "target: units\nfeatures: [price]\nlags: 3\nhorizons: [1, 2]\nseason: 1\ncoverage: 0.8\nbacktest: 2\n"
        "trainer: train-forecasts\nshadow:\n  periods: 1\n---\nUnits are whole boxes. Prices changed in March.\n"
    )
    assert create(client, playbook, "sample", source).status_code == 201
