"""The durable host of workflow runs, on the holders of their partitions: it carries out what the runs' decisions
armed.

A room of its own above `playbooks`, `runs` and `functions`: it runs callees through the playbooks' run service
and sends each workflow run's messages to its actor, so none of those rooms imports it; only the composition
root does. A workflow run's facts, its `workflow_runs` projection, its outbox and its decisions are the type's
own (`functions.workflow`: `run_state`, `outbox`, `listeners`, `decisions`).

- `run_store`: `RunStore`, the workflow runs' state as stored and the senders of their messages (`start_run`,
  `apply_input`, `fail_run`), whose handlers decide in the run's actor and append one input per append.
- `timer_loop`: `TimerLoop`, which fires the due work of the partitions this server holds (`partition_leases`:
  their leases and fences; `partition_balance`: each server's share).
- `forwarded`: starts and sent events taken for runs of another server's partition, applied by its holder.
- `calls`: the calls to functions that finish within their request, and their answers to the caller.
- `reactions`: the ledger's feed: offered events, triggers, schedules.
- `workflow_runtime`: `WorkflowRuntime`, the runs' start, events and cancels, and the supervisor of the timer loop
  and the followers.
"""
