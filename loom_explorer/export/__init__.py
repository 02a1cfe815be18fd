"""Exports of a chosen schedule (tt-npe workloads now; TT-Lang, TTNN and JSON come with the export issue)."""
