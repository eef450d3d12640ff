"""`TEST_CLOCK`: a test's setting, refused unless the environment consents (`AUTO_RUNTIME_TEST_CLOCK=1`), and
always in the image, so that no deployment can have its clock moved by a caller."""

from pathlib import Path

import pytest

from auto_runtime.settings import SettingsError, load_settings

REFUSED = "TEST_CLOCK: a test's setting, refused unless AUTO_RUNTIME_TEST_CLOCK=1 is set beside it"


def test_the_clock_is_the_wall_clock_by_default(tmp_path: Path) -> None:
    assert load_settings({"HOME": str(tmp_path)}, tmp_path).settings.test_clock is False


@pytest.mark.parametrize("guard", [None, "0", "true", "yes"])
def test_the_test_clock_is_refused_without_the_environment_s_consent(tmp_path: Path, guard: str | None) -> None:
    environment = {"HOME": str(tmp_path), "TEST_CLOCK": "true"}
    if guard is not None:
        environment["AUTO_RUNTIME_TEST_CLOCK"] = guard
    with pytest.raises(SettingsError) as refused:
        load_settings(environment, tmp_path)
    assert str(refused.value) == REFUSED


def test_the_test_clock_is_taken_with_consent_on_the_command_line_and_never_in_the_image(tmp_path: Path) -> None:
    environment = {"HOME": str(tmp_path), "TEST_CLOCK": "true", "AUTO_RUNTIME_TEST_CLOCK": "1"}
    assert load_settings(environment, tmp_path).settings.test_clock is True
    with pytest.raises(SettingsError) as refused:
        load_settings({**environment, "HOST": "127.0.0.1"}, tmp_path, "image")
    assert str(refused.value) == "TEST_CLOCK: a test's setting, refused in the image"


def test_the_consent_alone_changes_nothing(tmp_path: Path) -> None:
    environment = {"HOME": str(tmp_path), "AUTO_RUNTIME_TEST_CLOCK": "1"}
    assert load_settings(environment, tmp_path).settings.test_clock is False
