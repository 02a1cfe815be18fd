"""What the exported TT-Lang FlashAttention kernel (``families/attention/ttlang_kernel.py``) needs of a schedule
beyond what TTNN's kernel does, as constraints of the shared ``ttlang_export`` constraint family
(``model/constraints/ttlang_export.py``), added only when the schedule is solved for the TT-Lang kernels.

FlashAttention on the flattened split (``families/attention/ttlang_kernel.py``; tiles of 32, ``qc``, ``kc`` the chunk
sizes in tiles, ``n_q = ceil(Sq_t / qc)``, ``n_k = ceil(Skv_t / kc)``). Without the causal mask nothing masks
padded keys, so the keys are whole chunks; under it (``Sq = Skv``) every padded key lies after every query
row and the mask removes it, but a query chunk streams the ``ceil((i+1)*qc / kc)`` key chunks up to its last
(padded) row, unclamped, so the last chunk's rows must not reach past the (padded) keys:

    plain:   k_chunk_size | Skv             (elements: whole key chunks)
    causal:  n_q * qc <= n_k * kc           (the last query chunk, padding included, ends within the keys)

Flash-decoding (``kv_split``) pads and masks a ragged cache and needs neither.
"""

from __future__ import annotations

from loom_explorer.families.attention.quantities import AttentionQuantities
from loom_explorer.model.constraints.ttlang_export import FAMILY
from loom_explorer.model.expr import const, mul
from loom_explorer.model.schedule import Constraint
from loom_explorer.problem import KernelTarget


def ttlang_rules(q: AttentionQuantities) -> list[Constraint]:
    """The writer's rules on ``q`` (module docstring); none unless the target is TT-Lang."""
    return _whole_key_chunks(q) if q.problem.target is KernelTarget.ttlang else []


def _whole_key_chunks(q: AttentionQuantities) -> list[Constraint]:
    kv, qd = q.st.kv_dim, q.st.q_dim
    if not q.causal:
        return [
            Constraint(
                f"{FAMILY}[k_chunk_size|{kv}]",
                FAMILY,
                "divides",
                q.k_chunk_size,
                const(q.problem.elements(kv)),
                f"{kv} = {{rhs}} is not a whole number of key chunks (k_chunk_size = {{lhs}}): without "
                "the causal mask the TT-Lang attention kernel has no mask for padded keys",
            )
        ]
    why = (
        f"more query than key tiles ({qd} = {q.problem.elements(qd)}, {kv} = {q.problem.elements(kv)})"
        if q.problem.tiles(qd) > q.problem.tiles(kv)
        else f"{qd} = {q.problem.elements(qd)} is not a whole number of query chunks, and the last chunk's padded rows"
    )
    return [
        Constraint(
            f"{FAMILY}[causal_last_chunk]",
            FAMILY,
            "le",
            mul(q.n_q, q.qc),
            mul(q.n_k, q.kc),
            f"under the causal mask {why} reach past the keys: n_q * q chunk = {{lhs}} tiles, the key chunks hold "
            "{rhs}; the TT-Lang kernel does not clamp a chunk's key steps",
        )
    ]
