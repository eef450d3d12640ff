"""The domain services handlers reach through `OperationContext.services`, filled by the composition root."""

from __future__ import annotations

from dataclasses import dataclass

from auto_runtime.actors import Registry
from auto_runtime.functions.prediction.activation import Activation
from auto_runtime.functions.prediction.builds import Builds
from auto_runtime.functions.prediction.cache_folder import CacheFolder
from auto_runtime.functions.prediction.candidates import Candidates
from auto_runtime.functions.prediction.datasets import Datasets
from auto_runtime.functions.prediction.model_pool import ModelPool
from auto_runtime.interaction_host.interaction_runtime import InteractionRuntime
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
from auto_runtime.workflow_host.workflow_runtime import WorkflowRuntime


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
    prediction_datasets: Datasets | None = None
    model_pool: ModelPool | None = None
    prediction_builds: Builds | None = None
    prediction_cache: CacheFolder | None = None
    prediction_candidates: Candidates | None = None

    def activation(self) -> Activation:
        """Activating prediction functions' versions by hand."""
        return Activation(self.builds())

    def candidates(self) -> Candidates:
        """The candidate uploads of prediction builds (composed with the prediction type)."""
        if self.prediction_candidates is None:
            raise TypeError("the runtime was composed without prediction functions")
        return self.prediction_candidates

    def builds(self) -> Builds:
        """The prediction functions' builds (composed with the prediction type)."""
        if self.prediction_builds is None:
            raise TypeError("the runtime was composed without prediction functions")
        return self.prediction_builds

    def datasets(self) -> Datasets:
        """The playbooks' datasets of prediction functions (composed with the prediction type)."""
        if self.prediction_datasets is None:
            raise TypeError("the runtime was composed without prediction functions")
        return self.prediction_datasets


def services_of(services: object) -> RuntimeServices:
    if not isinstance(services, RuntimeServices):
        raise TypeError("the dispatcher was composed without the runtime's services")
    return services
