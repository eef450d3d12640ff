"""The domain services handlers reach through `OperationContext.services`, filled by the composition root."""

from __future__ import annotations

from dataclasses import dataclass

from auto_runtime.playbooks.playbook_registry import PlaybookRegistry


@dataclass(frozen=True)
class RuntimeServices:
    playbooks: PlaybookRegistry


def services_of(services: object) -> RuntimeServices:
    if not isinstance(services, RuntimeServices):
        raise TypeError("the dispatcher was composed without the runtime's services")
    return services
