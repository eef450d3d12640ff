"""The pure engine core: a deterministic decider that applies one input to a run's state.

- `model`: inputs (`Started`, `CallAnswered`, `TimerFired`, `EventReceived`, `EventOffered`,
  `CancelRequested`), outputs (timers, calls, listeners, emitted events, `Settle`), facts, `Transition`.
- `state`, `task_runs`, `state_codec`: the run's state between inputs (`EngineState`, its task runs one
  dataclass per kind, the decider's queued messages) and its stored JSON form.
- `decider`: `new_state(...)` and `apply(state, input, evaluator) -> Transition`; `handlers`: its tables'
  lookup, which refuses a type it has no handler for.
- `errors`: error objects, catching (7.3), callee endings (6.1) and run endings (8).
- `evaluation`: the `Evaluator` protocol and templates; `sandbox_evaluator`: one MicroPython instance per input.
- `run_values`: a run's input and output against the document's schemas.
"""
