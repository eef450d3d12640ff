"""Which entries of a published key set the server keeps: public signing keys with a `kid`, never a symmetric
or private key, a key for encryption, or an RSA key under 2,048 bits; at most `MAX_KEYS`."""

from __future__ import annotations

import json
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from auto_runtime.auth.issuer_keys import MAX_KEYS, KeySetError, parse_key_set


def jwk_of(public_key: Any, kid: str, **members: Any) -> dict[str, Any]:
    algorithm = jwt.get_algorithm_by_name("EdDSA" if isinstance(public_key, ed25519.Ed25519PublicKey) else "ES256")
    if isinstance(public_key, rsa.RSAPublicKey):
        algorithm = jwt.get_algorithm_by_name("RS256")
    return {**json.loads(algorithm.to_jwk(public_key)), "kid": kid, **members}


RSA_2048 = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_P256 = ec.generate_private_key(ec.SECP256R1())


def test_public_signing_keys_are_kept() -> None:
    keys = parse_key_set(
        {
            "keys": [
                jwk_of(RSA_2048.public_key(), "rsa", use="sig"),
                jwk_of(EC_P256.public_key(), "ec", alg="ES256"),
                jwk_of(ed25519.Ed25519PrivateKey.generate().public_key(), "ed"),
            ]
        }
    )
    assert set(keys) == {"rsa", "ec", "ed"}
    assert keys["rsa"].fits("RS256") and keys["rsa"].fits("PS256") and not keys["rsa"].fits("ES256")
    assert keys["ec"].fits("ES256") and not keys["ec"].fits("ES384")
    assert keys["ed"].fits("EdDSA") and not keys["ed"].fits("RS256")


def test_entries_the_server_does_not_take_are_left_out() -> None:
    private = json.loads(jwt.get_algorithm_by_name("ES256").to_jwk(EC_P256))
    keys = parse_key_set(
        {
            "keys": [
                {"kty": "oct", "k": "c2VjcmV0", "kid": "symmetric"},
                {**private, "kid": "private"},
                jwk_of(EC_P256.public_key(), "encryption", use="enc"),
                jwk_of(rsa.generate_private_key(public_exponent=65537, key_size=1024).public_key(), "short"),
                jwk_of(EC_P256.public_key(), "hmac", alg="HS256"),
                {k: v for k, v in jwk_of(EC_P256.public_key(), "x").items() if k != "kid"},
                "not an object",
            ]
        }
    )
    assert keys == {}


def test_at_most_max_keys_are_kept() -> None:
    entries = [jwk_of(EC_P256.public_key(), f"k{n}") for n in range(MAX_KEYS + 5)]
    assert len(parse_key_set({"keys": entries})) == MAX_KEYS


@pytest.mark.parametrize("document", [[], {"keys": {}}, {"nokeys": []}, "keys"])
def test_a_document_that_is_no_key_set_is_a_failed_fetch(document: object) -> None:
    with pytest.raises(KeySetError):
        parse_key_set(document)
