"""Each working core's own attention work at a solved schedule: the repetitions of every flow whose count
differs between cores, for the tiles a schedule moves (``traffic/tiles.py``).

The latency (``latency.py``) costs every core at the slowest core's ``chunks`` and ``steps``
(``quantities.py``): that core bounds the time. The tiles moved are instead the sum of every core's own
work, which differs between cores where the tasks differ:

* flattened split (``B*H*Sq@xy``, TTNN's SDPA and the exported TT-Lang kernel): core ``c`` (numbered row by
  row) runs the tasks ``c*P .. (c+1)*P - 1`` of the flattened index, ``P = per_core_<dims>``, the list
  padded to whole cores (``U*P`` tasks on ``U`` working cores: a padding task does the work of its index).
  Task ``t`` is query chunk ``t mod n_q``, or under the causal mask the balanced pair
  ``(j, n_q - 1 - j)``, ``j = t mod ceil(n_q / 2)`` (one chunk when ``2j + 1 = n_q``). A core reads a q
  chunk and writes an o chunk per query chunk of its tasks, and a k and a v chunk per step:

      chunks(c) = sum_{t in c's tasks} |chunks of t|,   steps(c) = sum_{t} sum_{i in chunks of t} need(i)
      need(i) = n_k without the mask, min(ceil((i+1)*qc / kc), n_k) with it

  both times ``prod E_d`` over the batch dims not on the flattened axis (every core runs all of them).

So ``sum_c steps(c) <= U * steps`` (the slowest core's), with equality when every core's work is the slowest's
(on the flattened split without the mask). Other layouts (2-D spreads, multicasts) keep the slowest core's
counts for every core. (Flash-decoding's: ``families/flash_decoding/work.py``.)
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from loom_explorer.families.attention.program import analyse_attention, is_attention
from loom_explorer.mapping.candidate import Comm
from loom_explorer.model.expr import evaluate
from loom_explorer.model.schedule import SymbolicSchedule


def chunk_need(chunk: int, qc: int, kc: int, n_k: int, causal: bool) -> int:
    """Key/value chunks query chunk ``chunk`` streams: all ``n_k``, or under the mask those up to its last
    row, ``min(ceil((chunk+1)*qc / kc), n_k)`` (``qc``, ``kc`` in tiles)."""
    return min(-(-(chunk + 1) * qc // kc), n_k) if causal else n_k


def task_chunks(task: int, n_q: int, balanced: bool) -> tuple[int, ...]:
    """Query chunks of flattened task ``task``: chunk ``task mod n_q``, or balanced the pair ``(j, n_q-1-j)``,
    ``j = task mod ceil(n_q/2)``, one chunk when the two coincide."""
    if not balanced:
        return (task % n_q,)
    j = task % -(-n_q // 2)
    return (j,) if j == n_q - 1 - j else (j, n_q - 1 - j)


def core_flow_counts(schedule: SymbolicSchedule, values: Mapping[str, int]) -> dict[str, tuple[int, ...]]:
    """Repetitions of each attention flow per working core (in core order, row by row), for the flows whose
    count can differ between cores (module docstring), keyed by their names in ``traffic.py``'s
    ``attention_flows``; {} for other programs and layouts (every core at the slowest core's counts)."""
    problem, cand = schedule.problem, schedule.candidate
    if not is_attention(problem.program) or not cand.flattened or any(c is not Comm.dram for _, c in cand.comms):
        return {}
    st = analyse_attention(problem.program)
    q_in, k_in, v_in = st.streamed
    working = evaluate(schedule.cores_used, dict(values))
    kc = values["k_chunk_size"] // 32
    n_k = -(-problem.tiles(st.kv_dim) // kc)
    group = cand.dims_on("xy")
    if group[-1] != st.q_dim:  # each core runs all query chunks of its items: every core alike
        return {}
    qc = values["q_chunk_size"] // 32
    n_q = -(-problem.tiles(st.q_dim) // qc)
    causal = problem.has_option("causal")
    per_core = values["per_core_" + "*".join(group)]
    repeat = math.prod(problem.elements(d) for d in st.spread_dims if d not in group and d != st.q_dim)
    chunk_counts: list[int] = []
    step_counts: list[int] = []
    balanced = cand.has_tag("balanced")
    for c in range(working):
        mine = [i for t in range(c * per_core, (c + 1) * per_core) for i in task_chunks(t, n_q, balanced)]
        chunk_counts.append(repeat * len(mine))
        step_counts.append(repeat * sum(chunk_need(i, qc, kc, n_k, causal) for i in mine))
    chunks, per_step = tuple(chunk_counts), tuple(step_counts)
    return {f"{q_in} read": chunks, f"{k_in} read": per_step, f"{v_in} read": per_step, f"{st.output} write": chunks}
