"""Each working core's own flash-decoding work at a solved schedule, for the tiles a schedule moves
(``traffic/tiles.py``; attention's: ``families/attention/work.py``).

Core ``c`` is share ``c mod s`` of its groups; share 0 (a group's first core) streams the last run of
``n_k - (s - 1)*ceil(n_k/s)`` key chunks, every other share ``ceil(n_k / s)``, for each of its ``g`` groups:
``steps(c) = g * run(c)`` (its q reads, partials and writes are the same on every core). So
``sum_c steps(c) <= U * steps`` (the slowest core's), with equality when ``s`` divides ``n_k``.
"""

from __future__ import annotations

from collections.abc import Mapping

from loom_explorer.families.attention.program import analyse_attention
from loom_explorer.model.expr import evaluate
from loom_explorer.model.schedule import SymbolicSchedule


def core_flow_counts(schedule: SymbolicSchedule, values: Mapping[str, int]) -> dict[str, tuple[int, ...]]:
    """Repetitions of the k and v reads per working core (in core order, row by row), keyed by their names in
    ``latency.py``'s ``decode_flows`` (module docstring)."""
    problem, cand = schedule.problem, schedule.candidate
    st = analyse_attention(problem.program)
    _, k_in, v_in = st.streamed
    working = evaluate(schedule.cores_used, dict(values))
    kc = values["k_chunk_size"] // 32
    n_k = -(-problem.tiles(st.kv_dim) // kc)
    group_dim = cand.dim_on("xy")
    s, g = values["kv_cores"], values[f"per_core_{group_dim}"]
    run = -(-n_k // s)
    steps = tuple(g * (n_k - (s - 1) * run if c % s == 0 else run) for c in range(working))
    return {f"{k_in} read": steps, f"{v_in} read": steps}
