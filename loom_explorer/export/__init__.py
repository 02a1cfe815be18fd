"""Exports of a chosen schedule: the exporter protocol and its registry, the schedule JSON document, tt-npe
workloads (the TT-Lang kernels and TTNN program configs are their targets': ``targets/ttlang/``,
``targets/ttnn/``)."""
