"""The durable host core of workflow runs: engine transitions turned into ledger facts and side effects.

A room of its own above `playbooks` and `functions`: it runs callees through the playbooks' run service and
drives the workflow engine, so neither of those rooms imports it; only the composition root will.

- `run_state`: the `workflow_runs` projection that keeps each run's engine state and stream version.
- `run_store`: `RunStore.start_run` and `RunStore.apply_input`, one append per applied input.
- `timer_loop`: `TimerLoop`, which fires due timers while it holds the workflow lease.

Not wired into the server yet: the workflow type stays "not available".
"""
