"""The domain services handlers reach through `OperationContext.services`, filled by the composition root."""

from __future__ import annotations

from dataclasses import dataclass

from auto_runtime.interaction_host.runtime import InteractionRuntime
from auto_runtime.actors import Registry
from auto_runtime.models import ModelDirectory
from auto_runtime.playbooks.analytics import PlaybookAnalytics
from auto_runtime.playbooks.definition_registry import DefinitionRegistry
from auto_runtime.playbooks.event_publishing import EventPublishing
from auto_runtime.playbooks.event_reads import EventReads
from auto_runtime.playbooks.playbook_registry import PlaybookRegistry
from auto_runtime.playbooks.run_service import RunService
from auto_runtime.recall_host.views_actor import PassViews, ViewsKey
from auto_runtime.tools.connections import Connections
from auto_runtime.tools.playbook_tools import PlaybookTools
from auto_runtime.workflow_host.runtime import WorkflowRuntime


@dataclass(frozen=True)
class RuntimeServices:
    playbooks: PlaybookRegistry
    definitions: DefinitionRegistry
    runs: RunService
    events: EventReads
    publishing: EventPublishing
    analytics: PlaybookAnalytics
    models: ModelDirectory
    workflows: WorkflowRuntime
    tools: PlaybookTools | None = None
    connections: Connections | None = None
    interactions: InteractionRuntime | None = None
    recall_views: Registry[ViewsKey, PassViews, bool] | None = None
    """The recall views actors (`recall_host.views_actor`), a child of the `playbooks` supervisor."""


def services_of(services: object) -> RuntimeServices:
    if not isinstance(services, RuntimeServices):
        raise TypeError("the dispatcher was composed without the runtime's services")
    return services
