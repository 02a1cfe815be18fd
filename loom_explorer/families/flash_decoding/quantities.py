"""Flash-decoding: attention whose key/value sequence is split over cores (the ``kv_split`` candidate,
``candidates.py``).

Notation as in ``families/attention/quantities.py``; a *group* is one index of the key/value groups (``B*Hkv``:
one batch item's one key/value head), ``N_g`` of them:

* the query rows of a group, ``G*Sq`` (``G = E_H / E_Hkv`` query heads per key/value head), are packed into
  ``r = ceil(G*Sq / 32)`` tile rows (TTNN's ``sdpa_decode`` pads the heads of a group to whole tiles), so a
  step multiplies one ``r x D_t`` query block by one key chunk: the keys and values of a group are read once
  for all its query heads;
* ``per_core_<groups>`` (``g``): groups per core; ``kv_cores`` (``s``): consecutive cores per group, which
  split its ``n_k = ceil(Skv_t / kc)`` key chunks in contiguous runs of ``ceil(n_k / s)``; cores used
  ``ceil(N_g / g) * s`` (TTNN's ``num_heads_per_core`` and ``num_cores_per_head``);
* every core runs the online softmax over its run of every group it holds:
  ``steps = g * ceil(n_k / s)`` key chunks;
* each core but the group's first sends its partial output (``r x D_t``), row max and row sum (``r`` each)
  L1-to-L1 to the first core, which combines each partial ``i`` into its own::

      m' = max(m, m_i),  c = exp(m - m'),  c_i = exp(m_i - m')
      l  = l*c + l_i*c_i,  acc = acc*c + acc_i*c_i,  m = m'

  and, after the last, normalises ``o = acc / l`` and writes the group's output.

Coverage (added as the ``coverage`` family's): the ``ceil(N_g/g)*s`` cores fill the grid used as any 1-D
layout's (``model/constraints/coverage.py``), and the last core of a group has key chunks:
``(s - 1) * ceil(n_k / s) <= n_k - 1``.

TTNN's ``sdpa_decode`` (``KernelTarget.ttnn``; sdpa_decode_program_factory.cpp and kernels/rt_args_common.hpp
@91b3892f, the kernels of ttnn 0.81.1): a query of one token (``Sq = 1``); all query heads of a batch item
padded to ``r = ceil(E_H / 32)`` tiles (every key/value head's core computes them all); ``kv_cores`` is its
``num_cores_per_head`` (``max_cores_per_head_batch`` in ``SDPAProgramConfig``) and ``per_core_<groups>`` its
``num_heads_per_core``, one of them 1, the latter dividing the key/value heads; q single-buffered, k and v
double-buffered; ``k_chunk_size`` a power of two; Dst sub-blocks as ttnn picks them: ``1 x min(kc, Dst)``
for q@k^T and ``1 x min(D_t, Dst)`` for s@v. Its partials combine in a binary tree
(``families/flash_decoding/latency.py``).

Not causal (a decode query attends the whole cache); a ragged cache (``Skv`` not a whole number of key
chunks) pads the last chunk, whose padding keys are masked: the exported kernel reads an additive key mask
(``KEY_MASK``, ``r x kc`` tiles in the scores' format) with every group's last chunk.
"""

from __future__ import annotations

from dataclasses import dataclass

from loom_explorer.families.attention.program import analyse_attention
from loom_explorer.families.attention.quantities import AttentionQuantities, build_attention_quantities
from loom_explorer.families.flash_decoding.candidates import packed_rows
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Candidate
from loom_explorer.model.domain import Domain
from loom_explorer.model.expr import Expr, Var, ceil_div, const, mul, select
from loom_explorer.model.quantities import param_maker, spread_domain
from loom_explorer.model.schedule import Constraint, Param
from loom_explorer.problem import KernelTarget, Problem, ProblemError

KEY_MASK = "key_mask"  # the ragged cache's key mask: its name in flows and the exported kernels


@dataclass(frozen=True, eq=False)
class DecodeQuantities(AttentionQuantities):
    kv_cores: Var
    group_count: int
    packed_tiles: int

    @property
    def group_dim(self) -> str:
        dim = self.candidate.dim_on("xy")
        assert dim is not None
        return dim

    @property
    def groups_per_core(self) -> Var:
        return self.per_core[self.group_dim]

    @property
    def qc(self) -> Expr:
        return const(self.packed_tiles)

    def units(self, dim: str) -> Expr:
        return const(self.group_count)

    def extent(self, dim: str) -> Expr:
        return const(self.group_count)

    @property
    def used_cores_1d(self) -> Expr:
        return mul(ceil_div(self.group_count, self.groups_per_core), self.kv_cores)

    @property
    def heads(self) -> Expr:
        return self.groups_per_core

    @property
    def tasks(self) -> Expr:
        return self.groups_per_core

    @property
    def chunks(self) -> Expr:
        return self.groups_per_core

    @property
    def chunks_per_core(self) -> Expr:
        """Key chunks of one group a core streams: ``ceil(n_k / s)``."""
        return ceil_div(self.n_k, self.kv_cores)

    @property
    def steps(self) -> Expr:
        return mul(self.groups_per_core, self.chunks_per_core)

    @property
    def diagonal_steps(self) -> Expr:
        return const(0)

    @property
    def mask_index_tiles(self) -> Expr:
        return const(0)

    @property
    def ragged(self) -> bool:
        """Whether the cache is not a whole number of key chunks for some chunk size (its last is padded)."""
        return any(self.problem.elements(self.st.kv_dim) % v for v in self.k_chunk_size.values)

    @property
    def key_mask_tiles(self) -> Expr:
        """Tiles of the key mask a core holding a group's last chunk reads: a ``r x kc`` block when that chunk is
        padded (0 for a padded key, -1e30 for a padding one, added to that step's scores), else none."""
        skv = self.problem.elements(self.st.kv_dim)
        padded = {v: int(skv % v != 0) for v in self.k_chunk_size.values}
        return mul(self.qc, self.kc, select(self.k_chunk_size, padded))

    @property
    def partial_tiles(self) -> Expr:
        """Tiles one core sends its group's first core: the partial output ``r x D_t``, row max and sum ``r``."""
        return mul(self.qc, self.head_tiles + 2)

    def divisibility_pairs(self) -> list[tuple[Var, Expr, str]]:
        return [
            (self.qk_subblock_h, self.qc, "packed query tiles"),
            (self.qk_subblock_w, self.kc, "k chunk tiles"),
            (self.out_subblock_h, self.qc, "packed query tiles"),
            (self.out_subblock_w, const(self.head_tiles), f"{self.st.head_dim} tiles"),
        ]


def decode_coverage(q: DecodeQuantities) -> list[Constraint]:
    """The last core of each group has key chunks (module docstring); the 1-D fill is the shared family's."""
    s, n_k = q.kv_cores, q.n_k
    return [
        Constraint(
            "coverage[kv_cores]",
            "coverage",
            "le",
            mul(s - 1, q.chunks_per_core),
            n_k - 1,
            "the last of kv_cores cores of a group would have no key chunk: "
            "(kv_cores - 1) * ceil(n_k / kv_cores) = {lhs} already cover the n_k = {rhs} + 1",
        )
    ]


def ttnn_decode_split(batch: int, kv_heads: int, cores: int, max_cores_per_head: int, n_k: int) -> tuple[int, int]:
    """(kv_cores, groups per core) ttnn's ``sdpa_decode`` takes on ``cores`` cores for ``batch`` items of
    ``kv_heads`` key/value heads (sdpa_decode_program_factory.cpp @91b3892f L185-194): ``per_batch =
    min(cores, M*B*NKV) // B`` cores per batch item, ``max(1, per_batch // NKV)`` per head (only the first
    ``n_k`` of them get a key chunk) and ``max(1, ceil(NKV / per_batch))`` heads per core. ProblemError when
    there are fewer cores than batch items (ttnn refuses)."""
    if cores < batch:
        raise ProblemError(f"ttnn's sdpa_decode needs a core per batch item: {cores} cores for {batch}")
    per_batch = min(cores, max_cores_per_head * batch * kv_heads) // batch
    return min(max(1, per_batch // kv_heads), n_k), max(1, -(-kv_heads // per_batch))


def ttnn_decode_work(problem: Problem, cores: int, max_cores_per_head: int, k_chunk_size: int) -> tuple[int, int]:
    """``ttnn_decode_split`` for ``problem``'s batch, key/value heads and key chunks; ProblemError for a
    ``k_chunk_size`` ttnn's non-paged decode refuses (not a power of two, or not dividing the cache)."""
    st = analyse_attention(problem.program)
    skv = problem.elements(st.kv_dim)
    if k_chunk_size & (k_chunk_size - 1) or skv % k_chunk_size:
        raise ProblemError(
            f"ttnn's sdpa_decode takes a power-of-two k_chunk_size dividing the cache length "
            f"({st.kv_dim} = {skv}); got {k_chunk_size}"
        )
    batch = 1
    for d in st.kv_groups[:-1]:
        batch *= problem.elements(d)
    n_k = -(-problem.tiles(st.kv_dim) // (k_chunk_size // 32))
    return ttnn_decode_split(batch, problem.elements(st.kv_groups[-1]), cores, max_cores_per_head, n_k)


def ttnn_decode_constraints(q: DecodeQuantities) -> list[Constraint]:
    """ttnn's ``sdpa_decode`` work split and sub-blocks (module docstring)."""
    g, s = q.groups_per_core, q.kv_cores
    kv_heads = q.problem.elements(q.st.kv_groups[-1])
    dst = q.dst_tiles
    widest = select(q.k_chunk_size, {v: min(v // 32, dst) for v in q.k_chunk_size.values})
    return [
        Constraint(
            "coverage[ttnn_split]",
            "coverage",
            "eq",
            mul(g - 1, s - 1),
            const(0),
            "ttnn's sdpa_decode either splits a group over cores or gives a core several groups, not "
            "both: (groups per core - 1) * (kv_cores - 1) = {lhs}",
        ),
        Constraint(
            f"divisibility[{g.name}|key/value heads]",
            "divisibility",
            "divides",
            g,
            const(kv_heads),
            f"ttnn's sdpa_decode gives a core key/value heads of one batch item: {kv_heads} is not a "
            f"multiple of {g.name} = {{lhs}}",
        ),
        Constraint(
            "dst_capacity[ttnn_qk_subblock_w]",
            "dst_capacity",
            "eq",
            q.qk_subblock_w,
            widest,
            "ttnn's sdpa_decode takes q@k^T sub-blocks min(kc, Dst) = {rhs} tiles wide, not {lhs}",
        ),
    ]


def build_decode_quantities(hw: HardwareSpec, problem: Problem, candidate: Candidate) -> DecodeQuantities:
    """The flash-decoding parameters (module docstring) over the attention ones: the packed query rows fix
    ``q_chunk_size``; ``per_core_<groups>`` and ``kv_cores`` replace the per-core query chunks."""
    base = build_attention_quantities(hw, problem, candidate)
    st = base.st
    if problem.has_option("causal"):
        raise ProblemError("flash-decoding (kv_split) is not causal: a decode query attends the whole cache")
    group_dim = candidate.dim_on("xy")
    assert group_dim is not None and candidate.has_tag("kv_split")
    groups = 1
    for d in st.kv_groups:
        groups *= problem.elements(d)
    ttnn = problem.target is KernelTarget.ttnn
    if ttnn and problem.elements(st.q_dim) != 1:
        raise ProblemError(
            f"ttnn's sdpa_decode takes one query token ({st.q_dim} = 1), not {problem.elements(st.q_dim)}"
        )
    packed = -(-packed_rows(problem, st.streamed[0], st.streamed[1], () if ttnn else st.kv_groups[-1:]) // 32)
    params: list[Param] = []
    param = param_maker(params)
    kept = {p.var.name: p for p in base.params}
    for name in ("grid_x", "grid_y"):
        params.append(kept[name])
    domain, bound = spread_domain(hw, "xy", groups, groups)
    g = param(f"per_core_{group_dim}", domain, "(batch, key/value head) groups per core", "groups", bound)
    skv_t = problem.tiles(st.kv_dim)
    s = param(
        "kv_cores",
        Domain.range(1, min(hw.grid.cores, skv_t)),
        "cores per group, splitting its key/value sequence",
        "cores",
    )
    qcs = param("q_chunk_size", (packed * 32,), "query rows of a group, packed (query heads x Sq, padded)", "elements")
    kcs = base.k_chunk_size
    if ttnn:  # powers of two
        kcs = param(
            "k_chunk_size",
            tuple(v for v in kcs.values if v // 32 & (v // 32 - 1) == 0),
            "key/value rows per chunk (a power of two)",
            "elements",
        )
    else:
        params.append(kept["k_chunk_size"])
    dst, dt = base.dst_tiles, problem.tiles(st.head_dim)
    qk_h = param(
        "qk_subblock_h", Domain.range(1, 1 if ttnn else min(dst, packed)), "q@k^T Dst sub-block height", "tiles"
    )
    params.append(kept["qk_subblock_w"])
    o_h = param("out_subblock_h", Domain.range(1, 1 if ttnn else min(dst, packed)), "s@v Dst sub-block height", "tiles")
    o_w = param(
        "out_subblock_w", Domain.range(min(dst, dt) if ttnn else 1, min(dst, dt)), "s@v Dst sub-block width", "tiles"
    )
    depth = (
        {
            t: param(
                f"{t}_buffer_depth",
                (1 if t == st.streamed[0] else 2,),
                f"{t} circular buffer depth (ttnn's sdpa_decode)",
                "chunks",
            )
            for t in st.streamed
        }
        if ttnn
        else base.depth
    )
    if not ttnn:
        params += [kept[f"{t}_buffer_depth"] for t in st.streamed]
    return DecodeQuantities(
        hw=hw,
        problem=problem,
        candidate=candidate,
        params=tuple(params),
        grid_x=base.grid_x,
        grid_y=base.grid_y,
        per_core={group_dim: g},
        depth=depth,
        st=st,
        q_chunk_size=qcs,
        k_chunk_size=kcs,
        qk_subblock_h=qk_h,
        qk_subblock_w=base.qk_subblock_w,
        out_subblock_h=o_h,
        out_subblock_w=o_w,
        kv_cores=s,
        group_count=groups,
        packed_tiles=packed,
    )
