"""What every exported kernel file shares: its header (problem, candidate, prediction, parameters) and its
footer (the embedded schedule document and the main guard)."""

from __future__ import annotations

import textwrap

from loom_explorer.export.schedule_json import RebuiltSchedule, ScheduleDocument
from loom_explorer.hardware.schema import DataFormat

TTNN_DTYPES = {DataFormat.bfloat16: "bfloat16", DataFormat.bfloat8_b: "bfloat8_b",
               DataFormat.bfloat4_b: "bfloat4_b", DataFormat.float32: "float32"}


def header(built: RebuiltSchedule, doc: ScheduleDocument) -> str:
    """The module docstring and the parameter comment block of a TT-Lang file."""
    hw, problem, solution = built.hardware, built.problem, built.solution
    cand = built.schedule.candidate
    pins = ", ".join(f"{p}={x}" for p, x in doc.pins.items()) or "none"
    breakdown = ", ".join(f"{t} {c:,}" for t, c in solution.breakdown)
    params = "\n".join(f"#   {name:<18} = {value}" for name, value in solution.values().items())
    description = textwrap.fill(cand.description, 100, initial_indent="  ", subsequent_indent="  ")
    title = f"{problem.program.name} {problem.shape_text} on {hw.name}: TT-Lang kernel exported by loom-explorer."
    latency_us = hw.cycles_to_us(solution.latency_cycles)
    return (f'"""{title}\n\n'
            f"Candidate {cand.name}:\n{description}\nPins: {pins}\n"
            f"Predicted latency: {solution.latency_cycles:,} cycles ({latency_us:.2f} us); "
            f"{breakdown}\n\n"
            "Run it in Tenstorrent's simulator with `tt-lang-sim THIS_FILE.py` "
            "(or `loom-explorer verify THIS_FILE.py`,\n"
            "which also compares the simulated traffic with the model's), or on a card with `python THIS_FILE.py`.\n"
            '"""\n'
            f"# Schedule parameters (tiles of 32x32 unless named otherwise):\n{params}\n")


def footer(doc: ScheduleDocument) -> str:
    """The embedded schedule document (``loom-explorer verify`` reads it) and the main guard."""
    return ("# The schedule this file was exported from (loom-explorer's schedule JSON, schema_version 1).\n"
            f'LOOM_SCHEDULE = r"""\n{doc.to_json()}"""\n\nif __name__ == "__main__":\n    main()\n')
