"""Fakes the tool-server tests share: the OpenAPI service and OAuth authorization servers, real processes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.gateway_process import HttpFakeProcess, start_oauth_server, start_openapi_service

SIGNING_KEY = "signing-key-for-the-fakes-0123456789"
AUDIENCE = "billing-api"


@pytest.fixture(scope="session")
def openapi_service() -> Iterator[HttpFakeProcess]:
    service = start_openapi_service(SIGNING_KEY, AUDIENCE)
    yield service
    service.stop()


@pytest.fixture(scope="session")
def oauth_server() -> Iterator[HttpFakeProcess]:
    server = start_oauth_server(SIGNING_KEY, AUDIENCE)
    yield server
    server.stop()
