"""Fakes that tests run as real processes: the model gateway."""
