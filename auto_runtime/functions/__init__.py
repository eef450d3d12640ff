"""The definition types, one package each, and the interface they plug in through (`function_type`)."""
