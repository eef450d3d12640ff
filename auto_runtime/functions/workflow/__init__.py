"""The workflow type: durable YAML workflows (spec/workflow-format.md)."""
