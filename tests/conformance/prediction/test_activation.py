"""prediction-format §9, `activate_version`'s refusals that need no built version: `not_found` for a version the
function did not build, `conflict`, `retired` for a retired function. The rest of activation is in the full
cycle (`test_full_cycle`)."""

from __future__ import annotations

import httpx

from tests.conformance.helpers import problem
from tests.conformance.prediction.test_builds import _function


def test_a_version_the_function_did_not_build_is_not_found(client: httpx.Client, playbook: str) -> None:
    function = _function(client, playbook)
    problem(client.post(f"{function}/activate", json={"version": 1}), 404, "not_found")


def test_a_retired_function_activates_nothing(client: httpx.Client, playbook: str) -> None:
    function = _function(client, playbook)
    assert client.post(f"{function}/retire").status_code == 200
    problem(client.post(f"{function}/activate", json={"version": 1}), 409, "conflict", "retired")
