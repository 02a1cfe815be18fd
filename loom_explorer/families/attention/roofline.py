"""Attention's work: its FLOPs and tile matmuls, causal or not (the compute roofline and the busiest core's
floor count them)."""

from __future__ import annotations

from loom_explorer.families.attention.program import analyse_attention
from loom_explorer.problem import Problem


def attention_work(p: Problem, causal: bool) -> tuple[int, int]:
    """(FLOPs, tile matmuls) of attention: ``4*B*H*Sq*Skv*D`` (two matmuls), and for causal attention only
    the pairs on or below the diagonal, ``Sq*(Sq+1)/2`` instead of ``Sq*Skv`` (tiles: ``Sq_t*(Sq_t+1)/2``)."""
    st = analyse_attention(p.program)
    batch = 1
    for d in st.batch_dims:
        batch *= p.elements(d)
    sq, skv, sq_t, skv_t = (p.elements(st.q_dim), p.elements(st.kv_dim), p.tiles(st.q_dim), p.tiles(st.kv_dim))
    pairs, tile_pairs = (sq * (sq + 1) // 2, sq_t * (sq_t + 1) // 2) if causal else (sq * skv, sq_t * skv_t)
    return 4 * batch * pairs * p.elements(st.head_dim), 2 * batch * tile_pairs * p.tiles(st.head_dim)
