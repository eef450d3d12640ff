"""The runtime's catalog: every operation it serves, assembled once at start."""

from __future__ import annotations

from collections.abc import Mapping

from auto_runtime.guides import Guide
from auto_runtime.operations.analytics_operations import ANALYTICS_OPERATIONS
from auto_runtime.operations.catalog import Catalog
from auto_runtime.operations.connection_operations import CONNECTION_OPERATIONS
from auto_runtime.operations.definition_operations import DEFINITION_OPERATIONS
from auto_runtime.operations.event_operations import EVENT_OPERATIONS
from auto_runtime.operations.guide_operations import guide_operation
from auto_runtime.operations.interaction_operations import INTERACTION_OPERATIONS
from auto_runtime.operations.model_operations import MODEL_OPERATIONS
from auto_runtime.operations.playbook_operations import PLAYBOOK_OPERATIONS
from auto_runtime.operations.prediction_operations import PREDICTION_OPERATIONS
from auto_runtime.operations.publish_operations import PUBLISH_OPERATIONS
from auto_runtime.operations.run_operations import RUN_OPERATIONS
from auto_runtime.operations.status_operations import STATUS_OPERATIONS
from auto_runtime.operations.tool_operations import TOOL_OPERATIONS


def build_catalog(guides: Mapping[str, Guide]) -> Catalog:
    return Catalog(
        [
            *PLAYBOOK_OPERATIONS,
            *MODEL_OPERATIONS,
            *DEFINITION_OPERATIONS,
            *RUN_OPERATIONS,
            *INTERACTION_OPERATIONS,
            *PREDICTION_OPERATIONS,
            *EVENT_OPERATIONS,
            *PUBLISH_OPERATIONS,
            *ANALYTICS_OPERATIONS,
            *TOOL_OPERATIONS,
            *CONNECTION_OPERATIONS,
            *STATUS_OPERATIONS,
            guide_operation(guides),
        ]
    )
