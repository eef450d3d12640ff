"""API_KEYS / api_keys: the entries the key command prints."""

import hashlib
import json

import pytest

from tests.settings.start_folder import StartFolder

DIGEST = hashlib.sha256(b"abk_example-secret").hexdigest()
ENTRY = {
    "id": "0123abcd",
    "org": "acme",
    "permissions": ["playbook:read", "playbook:write"],
    "sha256": DIGEST,
}


def test_entries_from_the_environment_are_typed(start: StartFolder) -> None:
    entries = [ENTRY, {**ENTRY, "id": "89abcdef", "sha256": "0" * 64, "playbooks": ["sales"]}]
    settings = start.load({"API_KEYS": json.dumps(entries, separators=(",", ":"))}).settings
    first, second = settings.api_keys
    assert (first.id, first.org, first.permissions, first.playbooks, first.sha256) == (
        "0123abcd",
        "acme",
        ("playbook:read", "playbook:write"),
        None,
        DIGEST,
    )
    assert second.playbooks == ("sales",)
    assert not settings.local_mode


def test_entries_from_the_file(start: StartFolder) -> None:
    start.file(f"api_keys:\n  - id: 0123abcd\n    org: acme\n    permissions: [org:read]\n    sha256: {DIGEST}\n")
    assert start.load().settings.api_keys[0].permissions == ("org:read",)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"id": "0123ABCD"}, "API_KEYS: [0].id: expects 8 lowercase hexadecimal digits"),
        ({"id": "0123abc"}, "API_KEYS: [0].id: expects 8 lowercase hexadecimal digits"),
        ({"permissions": []}, "API_KEYS: [0].permissions: expects at least 1 item"),
        ({"permissions": ["admin"]}, "API_KEYS: [0].permissions[0]: expects 'org:read', 'org:write'"),
        ({"permissions": ["org:read", "org:read"]}, "API_KEYS: [0].permissions: expects each item once"),
        ({"sha256": "A" * 64}, "API_KEYS: [0].sha256: expects the SHA-256 of the key as 64 lowercase"),
        ({"playbooks": ["X"]}, "API_KEYS: [0].playbooks[0]: expects a playbook id"),
        ({"note": "extra"}, "API_KEYS: [0].note: is not a key the server knows"),
        ({"org": ""}, "API_KEYS: [0].org: expects an org id"),
    ],
)
def test_an_entry_the_server_refuses(start: StartFolder, change: dict[str, object], expected: str) -> None:
    entry = {**ENTRY, **change}
    message = start.refused({"API_KEYS": json.dumps([entry])}, hidden=[DIGEST] if "sha256" not in change else [])
    assert message.startswith(expected)


def test_a_missing_field_is_named(start: StartFolder) -> None:
    entry = {key: value for key, value in ENTRY.items() if key != "sha256"}
    assert start.refused({"API_KEYS": json.dumps([entry])}) == "API_KEYS: [0].sha256: is required"


def test_an_id_given_twice(start: StartFolder) -> None:
    entries = [ENTRY, {**ENTRY, "sha256": "1" * 64}]
    assert start.refused({"API_KEYS": json.dumps(entries)}) == "API_KEYS: [1]: expects each key's id once"
