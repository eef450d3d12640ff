"""An https gateway with a certificate of a private authority: untrusted until NODE_EXTRA_CA_CERTS names it."""

from __future__ import annotations

import datetime
import ipaddress
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

# cryptography makes the test authority; it is installed here but no declared dependency requires it
# (it should join the dev extras), so a clean environment without it skips these two tests.
pytest.importorskip("cryptography")
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from auto_runtime.models import ModelCallFailure, ModelDirectory, ModelRequest, UserTurn
from tests.fakes.gateway_process import FakeGatewayProcess, start_fake_gateway
from tests.models.conftest import settings_of


def self_signed(folder: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fake gateway test authority")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    certificate_path, key_path = folder / "gateway.pem", folder / "gateway.key"
    certificate_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return certificate_path, key_path


@pytest.fixture(scope="module")
def tls_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeGatewayProcess, Path]]:
    folder = tmp_path_factory.mktemp("tls-gateway")
    certificate, key = self_signed(folder)
    process = start_fake_gateway(tls=(certificate, key))
    yield process, certificate
    process.stop()


def environ_for(gateway: FakeGatewayProcess) -> dict[str, str]:
    return {"MODEL_GATEWAYS": json.dumps([{"name": "secure", "base_url": gateway.base_url}])}


async def test_an_untrusted_certificate_makes_the_provider_unusable(
    tmp_path: Path, tls_gateway: tuple[FakeGatewayProcess, Path]
) -> None:
    gateway, _ = tls_gateway
    model = gateway.new_script({"content": "unused"})
    directory = ModelDirectory.from_settings(settings_of(tmp_path, environ_for(gateway)))
    try:
        with pytest.raises(ModelCallFailure) as raised:
            await directory.call(directory.resolve(f"secure/{model}"), ModelRequest(turns=(UserTurn("Hi"),)))
    finally:
        await directory.aclose()
    assert raised.value.kind == "certificate_untrusted"
    assert "certificate authority" in raised.value.detail
    assert gateway.requests(model) == []


async def test_the_operators_authority_makes_it_trusted(
    tmp_path: Path, tls_gateway: tuple[FakeGatewayProcess, Path]
) -> None:
    gateway, certificate = tls_gateway
    model = gateway.new_script({"content": "over TLS"})
    environ = {**environ_for(gateway), "NODE_EXTRA_CA_CERTS": str(certificate)}
    directory = ModelDirectory.from_settings(settings_of(tmp_path, environ))
    try:
        answer = await directory.call(directory.resolve(f"secure/{model}"), ModelRequest(turns=(UserTurn("Hi"),)))
    finally:
        await directory.aclose()
    assert answer.text == "over TLS"
