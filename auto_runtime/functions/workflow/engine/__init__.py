"""The pure engine core: a deterministic decider that applies one input to a run's state."""
