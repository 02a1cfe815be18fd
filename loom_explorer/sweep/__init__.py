"""Sweeps: schedule every op of a model on every target (``loom-explorer sweep`` / ``report``)."""
