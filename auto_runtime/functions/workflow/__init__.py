"""The workflow type: durable YAML workflows (spec/workflow-format.md).

Documents (checked when saved):

- `yaml_reader`: YAML 1.2 core values with the line and column of every pointer; refuses anchors, aliases,
  custom tags, duplicate keys, non-finite numbers and values nested deeper than 512.
- `expressions`, `places`: runtime expressions (`${ … }`), the `ast` rules of spec 4.2 and the names each
  place binds (4.4).
- `durations`, `cron`: literal durations (5) and five-field cron expressions (10).
- `document`: the walk of every field and task kind, each refusal at its pointer (`check_document`).
- `issues`: `Line l, column c: at <pointer>: <words>` and the `invalid_input` listing.
- `check`, `overview`, `workflow_type`: the sandbox's compile pass on a checker, the overview, and
  `WorkflowType.check(source) -> CheckedDocument`.

Runs: `engine` (the pure decider and its sandbox evaluator). The type is not registered in the server yet.
"""
