"""The parameters of an attention candidate and the quantities derived from them.

Notation (tiles of 32; ``E_d`` is dimension ``d``'s extent, ``D_t`` the head dim in tiles):

* ``q_chunk_size``, ``k_chunk_size``: elements, multiples of 32 (TTNN's ``SDPAProgramConfig`` names);
  ``qc``, ``kc`` the same in tiles. Chunks are padded to full size, as TTNN pads the sequences.
* ``n_q = ceil(Sq_t / qc)`` query chunks and ``n_k = ceil(Skv_t / kc)`` key/value chunks per head.
* A task is one query chunk of one (batch, head): it streams all key/value chunks through an online
  softmax. With causal load balancing a task is a pair of chunks ``(i, n_q - 1 - i)``.
* ``per_core_B``, ``per_core_H``: items per core of a batch dim on a grid axis (all of it when not spread);
  ``per_core_Sq``: query chunks (pairs when balanced) per core; on a flattened layout ``per_core_B*H*Sq``
  counts tasks per core, dealt out over the cores in contiguous ranges.
* ``qk_subblock_h x qk_subblock_w``: Dst sub-block of the scores ``q @ k^T`` (a ``qc x kc`` block);
  ``out_subblock_h x out_subblock_w``: Dst sub-block of ``s @ v`` (a ``qc x D_t`` block).
* ``q_buffer_depth`` in {1, 2} (2 prefetches the next query chunk), ``k_buffer_depth``,
  ``v_buffer_depth`` in {1, 2, 3}.

Steps of the slowest core (each step: one query chunk against one key/value chunk):

    non-causal:  steps = chunks * n_k
    causal, per group (a (b, h), or a task of a flattened layout) of c chunks whose K tiles needed sum to
    R (chunk i needs (i+1)*qc):
                 steps = min(ceil(R / kc) + (c - 1) * [kc does not divide qc], c * n_k)
      (an upper bound on sum_i min(ceil((i+1)*qc/kc), n_k): a sum of c ceilings exceeds the ceiling of
      the sum by at most c - 1, and by nothing when kc divides qc, as every chunk then needs a whole
      number of key chunks; exact for c = 1 and, when kc | qc, whenever no chunk's padding reaches past
      the last key chunk (qc | Sq_t); a chunk never needs more than the n_k key/value chunks there are)
      query chunks spread, p per core, not balanced (the top p chunks): c = p, R = qc * p*(2*n_q - p + 1)/2
      balanced, p pairs per core:  c = min(2p, n_q), R = qc * min(p*(n_q + 1), n_q*(n_q + 1)/2)
      (pair j holds chunks j and n_q-1-j; with n_q odd the middle chunk is alone)
      flattened and balanced: tasks * max over pairs j of (need(j) + need(n_q - 1 - j)), need(i) =
      min(ceil((i+1)*qc/kc), n_k), the middle chunk of an odd n_q counted once: exact for the slowest
      task, tabulated over (q_chunk_size, k_chunk_size)
      not spread (every core runs all n_q chunks of its heads):  c = n_q, R = qc * n_q*(n_q + 1)/2
    diagonal steps (causal mask) = chunks * ceil(qc / kc)

Causal mask index (``MASK_INDEX``): the exported TT-Lang kernels build each diagonal step's mask on the
core from four constant blocks read once per core from DRAM and kept in L1: the tile index and the
in-tile index of the chunk's query rows (two ``qc x 1`` blocks) and key columns (two ``1 x kc`` blocks),
``2 * (qc + kc)`` tiles in the scores' format. (TT-Lang has no in-tile index operation, so the pattern
cannot come from nothing; TTNN's SDPA writer fills mask tiles from its RISC-V instead.)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from math import gcd
from types import MappingProxyType

from loom_explorer.families.attention.program import Attention, analyse_attention
from loom_explorer.hardware.schema import Arch, HardwareSpec
from loom_explorer.mapping.candidate import Axis, Candidate, Comm
from loom_explorer.model.domain import Domain
from loom_explorer.model.expr import (
    Expr,
    Var,
    ceil_div,
    const,
    floor_div,
    lookup,
    maximum,
    minimum,
    mul,
    select,
)
from loom_explorer.model.quantities import (
    BUFFER_DEPTHS,
    GridQuantities,
    grid_params,
    param_maker,
    spread_domain,
)
from loom_explorer.model.schedule import Param
from loom_explorer.problem import KernelTarget, Problem, ProblemError

MASK_INDEX = "mask_index"  # the causal mask index's name in flows and the exported kernels
STREAMING, ACCURATE = "streaming", "accurate"  # the ttnn SDPA kernels the model describes (``ttnn_sdpa_kernel``)
MAX_CHUNK_TILES = 32  # chunk sizes searched: 32 .. 1024 elements (TTNN's configs use 32 .. 512)
Q_BUFFER_DEPTHS = (1, 2)


@dataclass(frozen=True, eq=False)
class AttentionQuantities(GridQuantities):
    st: Attention
    q_chunk_size: Var
    k_chunk_size: Var
    qk_subblock_h: Var
    qk_subblock_w: Var
    out_subblock_h: Var
    out_subblock_w: Var

    # ---------------------------------------------------------------- chunks
    @property
    def qc(self) -> Expr:
        return select(self.q_chunk_size, {v: v // 32 for v in self.q_chunk_size.values})

    @property
    def kc(self) -> Expr:
        return select(self.k_chunk_size, {v: v // 32 for v in self.k_chunk_size.values})

    @property
    def head_tiles(self) -> int:
        return self.problem.tiles(self.st.head_dim)

    @property
    def n_q(self) -> Expr:
        return ceil_div(self.problem.tiles(self.st.q_dim), self.qc)

    @property
    def n_k(self) -> Expr:
        return ceil_div(self.problem.tiles(self.st.kv_dim), self.kc)

    @property
    def causal(self) -> bool:
        return self.problem.has_option("causal")

    @property
    def ttnn_kernel(self) -> str:
        return ttnn_sdpa_kernel(self.hw, self.problem)

    # ---------------------------------------------------------------- work split
    def units(self, dim: str) -> Expr:
        """Extent of one spread dimension in distribution units (items; query chunks or chunk pairs)."""
        if dim != self.st.q_dim:
            return const(self.problem.elements(dim))
        return ceil_div(self.n_q, 2) if self.candidate.has_tag("balanced") else self.n_q

    def extent(self, dim: str) -> Expr:
        return mul(1, *(self.units(d) for d in dim.split("*")))

    def core_units(self, dim: str) -> Expr:
        """Units of ``dim`` the slowest core handles: its per-core share when spread, else all of them."""
        for _, carried in self.candidate.axes:
            if carried == dim:
                return self.per_core[dim]
        return self.units(dim)

    @property
    def _flat_group(self) -> tuple[str, ...]:
        return self.candidate.dims_on("xy") if self.candidate.flattened else ()

    @property
    def heads(self) -> Expr:
        """(batch, head) items of the slowest core; on a flattened layout, its tasks."""
        group = self._flat_group
        flat = [self.per_core["*".join(group)]] if group else []
        return mul(
            1, *flat, *(self.core_units(d) for d in self.st.spread_dims if d not in group and d != self.st.q_dim)
        )

    @property
    def tasks(self) -> Expr:
        """Tasks (query chunks, or chunk pairs when balanced) of the slowest core."""
        q = self.st.q_dim
        return self.heads if q in self._flat_group else mul(self.heads, self.core_units(q))

    @property
    def chunks(self) -> Expr:
        """Query chunks of the slowest core."""
        if not self.candidate.has_tag("balanced"):
            return self.tasks
        groups, chunks, _ = self._balanced_work()
        return mul(groups, chunks)

    def _balanced_work(self) -> tuple[Expr, Expr, Expr]:
        """(groups, chunks per group, K tiles per group) of the slowest balanced core.

        A pair ``(j, n_q-1-j)`` holds two chunks needing ``(n_q+1)*qc`` K tiles, except that with ``n_q`` odd
        the middle chunk pairs with itself; ``p`` pairs of one head hold at most ``min(2p, n_q)`` chunks and
        ``min(p*(n_q+1), n_q*(n_q+1)/2)*qc`` tiles. On a flattened layout the group is one pair."""
        n, qc = self.n_q, self.qc
        if self._flat_group:
            return self.heads, minimum(2, n), mul(qc, minimum(n + 1, floor_div(mul(n, n + 1), 2)))
        p = self.per_core[self.st.q_dim]
        return (self.heads, minimum(mul(2, p), n), mul(qc, minimum(mul(p, n + 1), floor_div(mul(n, n + 1), 2))))

    @property
    def steps(self) -> Expr:
        """Key/value steps of the slowest core (module docstring)."""
        if not self.causal:
            return mul(self.chunks, self.n_k)
        qc, n = self.qc, self.n_q
        if self.candidate.has_tag("balanced") and self._flat_group:
            return mul(self.heads, self._pair_steps())
        if self.candidate.has_tag("balanced"):
            groups, c, rows = self._balanced_work()
        elif self.candidate.axis_of(self.st.q_dim) is None:  # every core runs all chunks of its (b, h)
            groups, c, rows = self.heads, n, mul(qc, floor_div(mul(n, n + 1), 2))
        else:  # the top p chunks of a head
            p = self.per_core[self.st.q_dim]
            # p <= n_q (coverage), so 2*n_q - p + 1 >= 1; the max only tells interval bounds so
            groups, c, rows = self.heads, p, mul(qc, floor_div(mul(p, maximum(mul(2, n) - p + 1, 1)), 2))
        ragged = minimum(1, self.qc - mul(self.kc, floor_div(self.qc, self.kc)))  # [kc does not divide qc]
        return mul(groups, minimum(ceil_div(rows, self.kc) + mul(c - 1, ragged), mul(c, self.n_k)))

    def _pair_steps(self) -> Expr:
        """Steps of the slowest balanced pair of query chunks (module docstring), as a table."""
        sq_t, skv_t = self.problem.tiles(self.st.q_dim), self.problem.tiles(self.st.kv_dim)
        qs, ks = self.q_chunk_size, self.k_chunk_size
        return lookup((qs, ks), pair_steps_table(sq_t, skv_t, tuple(qs.values), tuple(ks.values)))

    @property
    def mask_index_tiles(self) -> Expr:
        """Tiles of the causal mask index each core reads once (module docstring); 0 without the mask."""
        return mul(2, self.qc + self.kc) if self.causal else const(0)

    @property
    def diagonal_steps(self) -> Expr:
        return mul(self.chunks, ceil_div(self.qc, self.kc)) if self.causal else const(0)

    # ---------------------------------------------------------------- blocks
    def block_tiles(self, tensor: str) -> Expr:
        """Tiles of ``tensor`` in one step's block: qc per query tile, kc per key tile, D_t per head tile."""
        size = {self.st.q_dim: self.qc, self.st.kv_dim: self.kc, self.st.head_dim: const(self.head_tiles)}
        return mul(1, *(size.get(d, 1) for d in self.problem.program.tensor(tensor).dims))

    @property
    def output(self) -> str:
        return self.st.output

    # ---------------------------------------------------------------- multicast groups
    def axis_receivers(self, tensor: str, axis: Axis) -> Expr:
        dim = self.candidate.dim_on(axis)
        assert dim is not None
        if self.problem.program.grouped_by(tensor, dim) is not None:
            return floor_div(self.group_size(tensor, dim), self.per_core[dim])
        return self.axis_cores(axis)

    def group_size(self, tensor: str, dim: str) -> int:
        """``E_H / E_Hkv``: consecutive indices of ``dim`` that share a tile of ``tensor``."""
        grouped = self.problem.program.grouped_by(tensor, dim)
        assert grouped is not None
        return self.problem.elements(dim) // self.problem.elements(grouped)

    def mcast_receivers(self, tensor: str) -> Expr:
        comm = self.candidate.comm(tensor)
        if comm is Comm.mcast_xy and not self.candidate.is_1d:
            return mul(self.axis_receivers(tensor, "x"), self.axis_receivers(tensor, "y"))
        if comm is Comm.mcast_xy:
            return self.cores
        assert comm.axis is not None, f"{tensor} is not multicast"
        return self.axis_receivers(tensor, comm.axis)

    def mcast_hops(self, tensor: str) -> Expr:
        comm = self.candidate.comm(tensor)
        if comm is Comm.mcast_xy and not self.candidate.is_1d:
            return self.axis_receivers(tensor, "x") + self.axis_receivers(tensor, "y") - 2
        if comm is Comm.mcast_xy:
            return self.grid_x + self.grid_y - 2
        return self.mcast_receivers(tensor) - 1

    def mcast_readers(self, tensor: str) -> Expr:
        return ceil_div(self.cores, self.mcast_receivers(tensor))

    # ---------------------------------------------------------------- legality pairs
    def divisibility_pairs(self) -> list[tuple[Var, Expr, str]]:
        pairs: list[tuple[Var, Expr, str]] = [
            (self.qk_subblock_h, self.qc, "q chunk tiles"),
            (self.qk_subblock_w, self.kc, "k chunk tiles"),
            (self.out_subblock_h, self.qc, "q chunk tiles"),
            (self.out_subblock_w, const(self.head_tiles), f"{self.st.head_dim} tiles"),
        ]
        for tensor in self.streamed:  # a multicast group is whole cores' worth of heads
            for _, dim in self.grouped_axes(tensor):
                pairs.append((self.per_core[dim], const(self.group_size(tensor, dim)), f"{tensor}'s group of {dim}"))
        return list({(a.name, b_name): (a, b, b_name) for a, b, b_name in pairs}.values())

    def subblock_pairs(self) -> list[tuple[str, Var, Var]]:
        return [("q@k", self.qk_subblock_h, self.qk_subblock_w), ("s@v", self.out_subblock_h, self.out_subblock_w)]


def ttnn_sdpa_kernel(hw: HardwareSpec, problem: Problem) -> str:
    """The kernel ttnn's ``scaled_dot_product_attention`` runs for ``problem`` called without ``precision``:
    on Blackhole an fp32 Dst (``fp32_dest_acc_en``, ``--fp32-acc``) routes the call to the ACCURATE recipe
    (``tech_reports/FlashAttention/SDPAPrecisionRecipes.md`` @031c320a, "Routing"); otherwise, and on
    Wormhole, the streaming kernel runs. (The exported TT-Lang kernel is neither: ``KernelTarget.ttlang`` is
    always ``STREAMING`` here, its own buffers and costs being the model's.)"""
    routed = hw.arch is Arch.blackhole and problem.fp32_acc and problem.target is KernelTarget.ttnn
    return ACCURATE if routed else STREAMING


@lru_cache(maxsize=64)
def pair_steps_table(
    sq_t: int, skv_t: int, q_chunk_sizes: tuple[int, ...], k_chunk_sizes: tuple[int, ...]
) -> Mapping[tuple[int, ...], int]:
    """``slowest_pair_steps`` for every (q_chunk_size, k_chunk_size) pair of elements, read-only.

    Cached (the last 64 shapes): a pure function of its hashable arguments (the sequence extents in tiles
    and the chunk sizes searched), so a schedule rebuilt for the same shape (a fit's every loss evaluation
    rebuilds each row's schedule with new hardware constants, which this table never reads) reuses it
    instead of recomputing ``len(q) * len(k)`` maxima."""
    return MappingProxyType(
        {(a, b): slowest_pair_steps(sq_t, skv_t, a // 32, b // 32) for a in q_chunk_sizes for b in k_chunk_sizes}
    )


def slowest_pair_steps(sq_t: int, skv_t: int, qc: int, kc: int) -> int:
    """``max_j need(j) + need(n_q - 1 - j)`` over the pairs ``j < ceil(n_q / 2)`` (the middle chunk of an odd
    ``n_q`` counted once), ``need(i) = min(ceil((i+1)*qc/kc), n_k)``: the steps of the slowest balanced pair.

    Without enumerating the ``n_q`` chunks: ``need`` is capped (``= n_k``) exactly from the first index ``c``
    where ``ceil((i+1)*qc/kc) >= n_k`` (a binary search), so the pairs fall into intervals bounded by ``c`` and
    ``n_q - c`` (and the middle). Where only one side is capped the sum is monotone (its maximum at an end of
    the interval); where neither is, it is periodic with period ``p = kc / gcd(qc, kc)`` (``j -> j + p`` adds
    ``p*qc/kc``, an integer, to one ceiling and takes it from the other); both capped, constant. So the
    maximum is over the points within ``p`` of every interval end: ``O(p + log n_q)`` evaluations."""
    n_q, n_k = -(-sq_t // qc), -(-skv_t // kc)
    pairs = -(-n_q // 2)

    def need(i: int) -> int:
        return min(-(-(i + 1) * qc // kc), n_k)

    def pair(j: int) -> int:
        return need(j) + (need(n_q - 1 - j) if n_q - 1 - j != j else 0)

    lo, hi = 0, n_q  # first capped index: the least i with ceil((i+1)*qc/kc) >= n_k (n_q if none)
    while lo < hi:
        mid = (lo + hi) // 2
        if -(-(mid + 1) * qc // kc) >= n_k:
            hi = mid
        else:
            lo = mid + 1
    period = kc // gcd(qc, kc)
    ends = (0, lo - 1, lo, n_q - lo - 1, n_q - lo, pairs - 2, pairs - 1)
    points = {j for e in ends for j in range(e - period, e + period + 1) if 0 <= j < pairs}
    return max(pair(j) for j in points)


def build_attention_quantities(hw: HardwareSpec, problem: Problem, candidate: Candidate) -> AttentionQuantities:
    st = analyse_attention(problem.program)
    if problem.has_option("causal") and problem.elements(st.q_dim) != problem.elements(st.kv_dim):
        raise ProblemError(
            f"causal attention needs {st.q_dim} == {st.kv_dim} "
            f"(got {problem.elements(st.q_dim)} and {problem.elements(st.kv_dim)})"
        )
    placed = [t for t, p in problem.placements if p.in_l1]
    if placed:
        raise ProblemError(
            f"the attention model reads and writes DRAM-interleaved tensors only; {', '.join(placed)} placed in L1"
        )
    params: list[Param] = []
    param = param_maker(params)
    gx, gy = grid_params(hw, candidate, param)
    per_core: dict[str, Var] = {}
    q_tiles = min(problem.tiles(st.q_dim), MAX_CHUNK_TILES)
    k_tiles = min(problem.tiles(st.kv_dim), MAX_CHUNK_TILES)
    for axis, dim in candidate.axes:
        # the dimension's extent in units (module docstring) lies in least..most over the chunk sizes:
        # items of a batch dim; ceil(Sq_t / qc) query chunks (pairs: half, rounded up) for qc in 1..q_tiles
        least, most = 1, 1
        for d in dim.split("*"):
            if d == st.q_dim:
                lo_units, hi_units = -(-problem.tiles(d) // q_tiles), problem.tiles(d)
                if candidate.has_tag("balanced"):
                    lo_units, hi_units = -(-lo_units // 2), -(-hi_units // 2)
            else:
                lo_units = hi_units = problem.elements(d)
            least, most = least * lo_units, most * hi_units
        unit = (
            "tasks"
            if "*" in dim
            else "chunk pairs"
            if dim == st.q_dim and candidate.has_tag("balanced")
            else "q chunks"
            if dim == st.q_dim
            else "items"
        )
        domain, bound = spread_domain(hw, axis, least, most)
        per_core[dim] = param(f"per_core_{dim}", domain, f"{dim} per core", unit, bound)
    qcs = param("q_chunk_size", tuple(32 * t for t in range(1, q_tiles + 1)), "query rows per chunk", "elements")
    kcs = param("k_chunk_size", tuple(32 * t for t in range(1, k_tiles + 1)), "key/value rows per chunk", "elements")
    dst = hw.compute.dst_tiles_fp32_acc if problem.fp32_acc else hw.compute.dst_tiles
    dt = problem.tiles(st.head_dim)
    qk_h = param("qk_subblock_h", Domain.range(1, min(dst, q_tiles)), "q@k^T Dst sub-block height", "tiles")
    qk_w = param("qk_subblock_w", Domain.range(1, min(dst, k_tiles)), "q@k^T Dst sub-block width", "tiles")
    o_h = param("out_subblock_h", Domain.range(1, min(dst, q_tiles)), "s@v Dst sub-block height", "tiles")
    o_w = param("out_subblock_w", Domain.range(1, min(dst, dt)), "s@v Dst sub-block width", "tiles")
    q, k, v = st.streamed
    depth = {
        q: param(f"{q}_buffer_depth", Q_BUFFER_DEPTHS, f"{q} chunks buffered (2: next chunk prefetched)", "chunks"),
        k: param(f"{k}_buffer_depth", BUFFER_DEPTHS, f"{k} circular buffer depth", "chunks"),
        v: param(f"{v}_buffer_depth", BUFFER_DEPTHS, f"{v} circular buffer depth", "chunks"),
    }
    return AttentionQuantities(
        hw=hw,
        problem=problem,
        candidate=candidate,
        params=tuple(params),
        grid_x=gx,
        grid_y=gy,
        per_core=per_core,
        depth=depth,
        st=st,
        q_chunk_size=qcs,
        k_chunk_size=kcs,
        qk_subblock_h=qk_h,
        qk_subblock_w=qk_w,
        out_subblock_h=o_h,
        out_subblock_w=o_w,
    )
