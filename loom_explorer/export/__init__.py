"""Exports of a chosen schedule: TT-Lang kernels, TTNN program configs, the schedule JSON document, tt-npe workloads."""
