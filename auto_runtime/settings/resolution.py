"""One pass over a list or map setting as written: references resolved, credentials refused.

The pass walks the value as it was read (from the file, or from TOOL_SERVERS) and, for each string:

* splits it into the text written out and its references;
* refuses it when it is a credential written out (:mod:`auto_runtime.settings.credentials`);
* refuses a reference where its rules allow none, and a missing reference where they require one;
* replaces the references with the values of the variables they name.

It gathers the secrets: each value a reference took from the environment; the whole value of a
field that holds secrets, when a reference in it took a value from the environment; and the
credential after the scheme of a referenced value such as ``Bearer <key>``.
"""

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from auto_runtime.settings.credentials import argument_problem, names_a_credential, written_out_problem
from auto_runtime.settings.errors import SettingsError
from auto_runtime.settings.places import KeyPath, Place
from auto_runtime.settings.references import MalformedReferenceError, UnsetReferenceError, parse_template

_SCHEME_AND_CREDENTIAL = re.compile(r"^[A-Za-z][A-Za-z0-9._-]*\s+(\S+)$")


def _never(path: KeyPath) -> bool:
    return False


def _always(path: KeyPath) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class Rules:
    """What the pass does for one setting. Every predicate takes the full key path."""

    reference_allowed: Callable[[KeyPath], bool] = _always
    reference_required: Callable[[KeyPath], bool] = _never
    holds_secrets: Callable[[KeyPath], bool] = _never
    is_argument: Callable[[KeyPath], bool] = _never
    judged_by_shape_only: Callable[[KeyPath], bool] = _never
    where_references_go: str = ""
    resolve: bool = True


@dataclass(slots=True)
class Resolution:
    """What the pass found: the secrets and the variables the references name."""

    secrets: set[str] = field(default_factory=set)
    referenced_variables: set[str] = field(default_factory=set)


def resolve_setting(
    value: object,
    path: KeyPath,
    place: Place,
    environment: Mapping[str, str],
    rules: Rules,
    resolution: Resolution,
) -> object:
    """``value`` with its references resolved; raises SettingsError at the first problem."""
    return _Pass(place, environment, rules, resolution).value(value, path)


@dataclass(slots=True)
class _Pass:
    place: Place
    environment: Mapping[str, str]
    rules: Rules
    resolution: Resolution

    def value(self, value: object, path: KeyPath) -> object:
        if isinstance(value, dict):
            return {key: self.value(item, (*path, key)) for key, item in value.items()}
        if isinstance(value, list):
            return [self.value(item, (*path, index)) for index, item in enumerate(value)]
        if isinstance(value, str):
            return self.text(value, path)
        if isinstance(value, int | float) and not isinstance(value, bool):
            self.number(path)
        return value

    def fail(self, path: KeyPath, expects: str) -> SettingsError:
        return SettingsError(f"{self.place.where(path)}: {expects}")

    def number(self, path: KeyPath) -> None:
        key = _key_of(path)
        judged = not self.rules.judged_by_shape_only(path)
        if judged and key is not None and names_a_credential(key):
            raise self.fail(path, "its key names a credential, so it expects a ${NAME} reference")

    def text(self, text: str, path: KeyPath) -> str:
        try:
            template = parse_template(text)
        except MalformedReferenceError as malformed:
            raise self.fail(path, str(malformed)) from None
        if template.has_reference and not self.rules.reference_allowed(path):
            raise self.fail(path, f"expects no reference here; {self.rules.where_references_go}")
        if not template.has_reference and self.rules.reference_required(path):
            raise self.fail(path, "expects a ${NAME} reference to the variable that holds the credential")
        if self.rules.is_argument(path):
            problem = argument_problem(template)
        else:
            judge_key = not self.rules.judged_by_shape_only(path)
            problem = written_out_problem(template, _key_of(path), judge_key=judge_key)
        if problem is not None:
            raise self.fail(path, problem)
        if not self.rules.resolve:
            return text
        try:
            resolved = template.resolve(self.environment)
        except UnsetReferenceError as unset:
            raise self.fail(path, f"refers to {unset.name}, which is not set") from None
        self.resolution.referenced_variables.update(reference.name for reference in template.references)
        for taken in resolved.taken:
            self.resolution.secrets.add(taken)
            scheme_and_credential = _SCHEME_AND_CREDENTIAL.match(taken)
            if scheme_and_credential:
                self.resolution.secrets.add(scheme_and_credential.group(1))
        if resolved.taken and self.rules.holds_secrets(path):
            self.resolution.secrets.add(resolved.value)
        return resolved.value


def _key_of(path: KeyPath) -> str | None:
    """The mapping key a value is written under; a list item counts under its list's key."""
    for part in reversed(path):
        if isinstance(part, str):
            return part
    return None
