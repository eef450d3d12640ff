"""A handler that breaks answers `500 internal` with an incident reference, and logs no input."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from auto_runtime.auth.access import AccessGate
from auto_runtime.auth.api_keys import KeyRing
from auto_runtime.http.app import PublishedDocuments, create_app
from auto_runtime.operations.catalog import Catalog
from auto_runtime.operations.dispatcher import Dispatcher
from auto_runtime.operations.operation import Hints, Operation, OperationContext
from auto_runtime.problems import Rejection


class SecretInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    secret: str


async def breaks(context: OperationContext, data: SecretInput) -> dict[str, Any]:
    raise RuntimeError("the handler broke")


async def refuses_undeclared(context: OperationContext, data: SecretInput) -> dict[str, Any]:
    raise Rejection("conflict", "a conflict the operation does not declare")


def _operation(name: str, handler: Any) -> Operation:
    return Operation(
        name=name,
        title=name,
        description=name,
        scope="org",
        permissions=frozenset(),
        method="POST",
        route=f"/{name}",
        input_model=SecretInput,
        output_model=None,
        handler=handler,
        hints=Hints(read_only=False, destructive=False, idempotent=False, open_world=False),
        tag="test",
    )


@pytest.fixture
def app() -> Any:
    catalog = Catalog([_operation("breaks", breaks), _operation("undeclared", refuses_undeclared)])
    gate = AccessGate.build(local_mode=True, keys=KeyRing([]), allowed_origins=())
    return create_app(
        catalog=catalog,
        dispatcher=Dispatcher(services=None, playbooks=None),
        gate=gate,
        documents=PublishedDocuments(openapi=b"{}", guides={}),
        public_url=None,
    )


@pytest.mark.parametrize("name", ["breaks", "undeclared"])
async def test_a_broken_handler_is_an_internal_error_with_an_incident(
    app: Any, name: str, caplog: pytest.LogCaptureFixture
) -> None:
    client = app.test_client()
    with caplog.at_level(logging.ERROR):
        response = await client.post(f"/v1/orgs/acme/{name}", json={"secret": "do-not-log-this-value"})
    assert response.status_code == 500
    problem = await response.get_json()
    assert problem["type"] == "https://on.auto/problems/internal"
    assert problem["reason"] == "internal"
    assert problem["instance"].startswith("urn:uuid:")
    request_id = response.headers["x-request-id"]
    assert request_id
    logged = caplog.text
    assert problem["instance"] in logged and request_id in logged
    assert "do-not-log-this-value" not in logged
