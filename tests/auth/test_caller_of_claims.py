"""The caller a verified token names: the person, the active org and the org permissions, in both versions of
the identity service's claims."""

from __future__ import annotations

from typing import Any

import pytest

from auto_runtime.auth.access_tokens import InvalidToken, caller_of_claims
from auto_runtime.auth.caller import Permission
from auto_runtime.problems import Rejection
from tests.auth.conftest import claims_for

EVERY = frozenset(Permission)


def caller(**claims: Any) -> Any:
    return caller_of_claims(claims_for("https://issuer.example", "https://runtime.example", **claims))


@pytest.mark.parametrize("version", [1, 2])
def test_the_person_acts_in_the_active_org_with_its_permissions(version: int) -> None:
    person = caller(version=version, sub="user_2abc", org="org_2xyz")
    assert (person.id, person.org, person.permissions, person.playbooks) == ("user_2abc", "org_2xyz", EVERY, None)
    assert person.is_person and not person.is_local
    assert person.may_act_in_org("org_2xyz") and not person.may_act_in_org("acme")


@pytest.mark.parametrize("version", [1, 2])
def test_only_the_org_permissions_that_name_a_runtime_permission_count(version: int) -> None:
    person = caller(version=version, permissions=["org:playbook:read", "org:billing:manage", "org:playbook:delete"])
    assert person.permissions == {Permission.PLAYBOOK_READ}
    assert caller(version=version, permissions=[]).permissions == frozenset()


def test_version_2_grants_action_j_for_bit_j_of_each_feature() -> None:
    claims = {
        "sub": "user_1",
        "v": 2,
        "fea": "u:ignored,o:org,o:playbook,o:billing",
        "o": {"id": "acme", "rol": "member", "per": "read,write,manage", "fpm": "1,3,7"},
    }
    person = caller_of_claims(claims)
    assert person.permissions == {Permission.ORG_READ, Permission.PLAYBOOK_READ, Permission.PLAYBOOK_WRITE}


@pytest.mark.parametrize("version", [1, 2])
def test_a_token_without_an_org_is_forbidden(version: int) -> None:
    with pytest.raises(Rejection) as refused:
        caller(version=version, org=None)
    assert refused.value.reason == "forbidden"
    assert refused.value.headers["WWW-Authenticate"] == 'Bearer error="insufficient_scope"'


@pytest.mark.parametrize(
    ("claims", "words"),
    [
        ({"org": "a/b"}, "org id"),
        ({"org": "x" * 65}, "org id"),
        ({"sub": ""}, "names no person"),
        ({"sub": 42}, "names no person"),
    ],
)
def test_claims_the_runtime_cannot_take_are_an_invalid_token(claims: dict[str, Any], words: str) -> None:
    with pytest.raises(InvalidToken) as refused:
        caller(**claims)
    assert words in refused.value.detail
