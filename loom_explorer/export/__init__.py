"""Exports of a chosen schedule: the exporter protocol and its registry, TTNN program configs, the schedule JSON
document, tt-npe workloads (the TT-Lang kernels are their target's: ``targets/ttlang/``)."""
