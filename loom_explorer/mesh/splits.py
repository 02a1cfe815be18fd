"""The splits of an op on a view: what each chip computes, the input states it needs, the state it produces.

A split gives each axis of the view one role (``-`` for none: the op is replicated along that axis):

* **matmul** ``M x K x N``: ``M`` (rows: sequence/data parallel; input ``Sr``, output ``Sr``), ``N`` (column
  parallel; input ``R``, output ``Sc``), ``K`` (row parallel; input ``Sc``, output partial sums ``P``).
  Each chip computes ``ceil(M / p_M) x ceil(K / p_K) x ceil(N / p_N)``, ``p_d`` the product of the chips of
  the axes given ``d``; weights are stored pre-split however the split wants (free, once).
  **Fused all-gather + matmul** (``agN``, ttnn's ``all_gather_matmul``): the input arrives ``Sc`` on an
  ``N`` axis and is gathered along it while the chip multiplies the slices already present; the chip's
  problem is the ``N`` split's. Assumed cost: ``max(T_mm, T_ag + T_mm / n)``: the local slice's share of the
  matmul (``1/n`` of it) starts at once, the gather streams the other ``n - 1`` slices at its own pace
  (``T_ag``, the all-gather on its own), and the last slice's share of the matmul can only follow it; when
  the gather is the shorter, the matmul is never starved. Its ``num_links``/``topology`` are the input
  tensor's. Only on a one-axis view (the ring): ttnn 0.81.1's ``all_gather_matmul_async`` takes no
  ``cluster_axis`` (it gathers over the whole mesh), and ``all_gather_minimal_matmul_async``, which has one,
  runs its own ``MinimalMatmulConfig``, not the per-chip program config solved here. On a 2-D view the
  gather is an ``all_gather`` transition before the ``N`` split, priced as such.
* **attention**: ``heads`` (``H`` and ``Hkv`` over the axis' chips; the qkv tensor's columns are laid out per
  chip's heads, so ``Sc`` in and out), where rows are independent sequences (decode users), ``batch``
  (``Sr`` in and out), and, for one causal sequence (prefill, ``B = 1``), ``seq``: ttnn's
  ``ring_distributed_scaled_dot_product_attention`` (below). ``seq`` goes to one axis at most.
* **seq** (balanced sequence split of causal attention, on an axis of ``p`` chips): every chip holds ``q``,
  ``k`` and ``v`` whole (input ``R`` on the axis); the sequence is cut into ``2p`` chunks of ``c = S / 2p``
  rows and chip ``i`` computes the causal attention of query chunks ``i`` and ``2p - 1 - i`` against the keys
  they need (``(i + 1) c`` and ``(2p - i) c``). Legal where ttnn runs it: ``p`` even, ``S`` a multiple of
  ``2p`` tiles (each chunk whole tiles), ``B = 1``. *Row order.* A chip's rows are chunks ``i`` and
  ``2p - 1 - i``, not ``2i`` and ``2i + 1``; every other op keeps the sequence in order, so the split restores it
  as llama3_70b_galaxy does: two all-gathers along the axis (each chip's first chunk, then its second: the
  second gathered in chip order is the later half reversed chunk by chunk) and a local concat. Its output is
  ``R`` on the axis, and the two gathers are its own collectives (``seq_gathers``, on every link of the axis,
  a ring where it closes, as ``ring_all_gather`` runs them), in its cost as the norm's stats gather is in the
  norm's. *Per-chip problem.* No shipped kernel runs a balanced chunk pair, so a chip is
  priced as the non-causal ``flash_attention`` of its ``Sq = S / p`` rows against ``Skv`` keys, the mean
  number of keys its query tile rows need rounded up to a tile (``seq_keys``: ``S / 2 + 32``). Its score
  tiles, ``2c_t (p c_t + 1)`` per head (``c_t`` the chunk's tiles), are the exact causal count
  ``2c_t (p c_t + 1/2)`` plus ``c_t``: at least ``1/p`` of the whole causal problem's (``2p c_t`` query
  tiles, ``p c_t (2p c_t + 1)`` causal score tiles). Measured in this model against ``1/p`` of the whole causal
  problem's proven optimum on the same chip (HiFi4, ``D = 128``): Galaxy chip ``H 8 / Hkv 1`` 2k and 8k over
  4 chips 1.03 and 0.96; T3000 chip ``H 64 / Hkv 8`` 2k over 8 chips 1.02, ``H 32 / Hkv 4`` 2k over 4 0.92,
  ``H 8 / Hkv 1`` 2k over 4 1.17 (the non-causal problem has no diagonal mask and no causal imbalance
  between cores; fewer query chunks than the whole problem to spread over the cores).
* **norm** (RMS norm of each row): ``rows`` (``Sr``) or ``cols``: the distributed norm ttnn runs on a
  width-fractured tensor (each chip's sum of squares, an all-gather of a 32-wide stats tile per row, then
  the scaling): ``Sc`` in and out, plus that stats all-gather (1 link, a ring where the axis closes, as
  ``tt_distributed_rmsnorm`` calls it).
* **eltwise** (residual add, SwiGLU multiply): ``rows`` or ``cols``; every input in the output's state.

A split's name lists each axis' role, ``N@ring``, ``N@columns,K@rows``, ``rep@mesh`` (replicated).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from math import ceil, prod

from loom_explorer.hardware.mesh_schema import MeshSpec
from loom_explorer.hardware.schema import DataFormat, Fidelity, HardwareSpec
from loom_explorer.mesh.graph import OpGraph, OpKind, OpSpec
from loom_explorer.mesh.states import TILE, AxisState, MeshAxis, MeshView, TensorState, local_shape, view_states
from loom_explorer.mesh.transitions import AxisConfig, Collective, collective_cycles
from loom_explorer.model.collective import CollectiveKind, FabricTopology

NONE = "-"


@dataclass(frozen=True, slots=True)
class ChipProblem:
    """What one chip computes: a shipped kernel, its shape, its options (``causal``), the formats of its
    tensors not in bf16 and its fidelity (the op's ``precision.py`` preset)."""

    kernel: str
    shape: tuple[tuple[str, int], ...]
    options: frozenset[str] = frozenset()
    formats: tuple[tuple[str, DataFormat], ...] = ()
    fidelity: Fidelity = Fidelity.hifi2

    @property
    def shape_text(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.shape)

    @property
    def label(self) -> str:
        words = [*sorted(self.options), *(f"{t}={f.value}" for t, f in self.formats)]
        if self.fidelity is not Fidelity.hifi2:
            words.append(self.fidelity.value)
        return f"{self.kernel} {self.shape_text}" + "".join(f" {w}" for w in words)


def _problem(
    op: OpSpec, kernel: str, shape: tuple[tuple[str, int], ...], options: frozenset[str] = frozenset()
) -> ChipProblem:
    return ChipProblem(kernel, shape, options, op.formats, op.fidelity)


@dataclass(frozen=True, slots=True)
class Split:
    """One split of ``op`` on ``view`` (module docstring). ``fixed_cycles``: collectives the split does
    inside itself at a fixed configuration (``split_gathers``: the norm's stats, a ``seq`` split's chunks).
    ``fused_axis``: the axis (index) along which the input is all-gathered inside the matmul (``agN``), else
    None."""

    op: str
    name: str
    view: str
    roles: tuple[str, ...]
    inputs: tuple[TensorState, ...]
    output: TensorState
    problem: ChipProblem | None
    fixed_cycles: int = 0
    fused_axis: int | None = None


def _p(view: MeshView, roles: tuple[str, ...], role: str) -> int:
    return prod(a.chips for a, r in zip(view.axes, roles, strict=True) if r == role)


def _name(view: MeshView, roles: tuple[str, ...]) -> str:
    used = [f"{r}@{a.name}" for a, r in zip(view.axes, roles, strict=True) if r != NONE]
    return ",".join(used) if used else f"rep@{view.name}"


def _state(view: MeshView, states: tuple[AxisState, ...]) -> TensorState:
    return TensorState(view.name, states)


_MATMUL_IN = {NONE: AxisState.replicated, "M": AxisState.rows, "N": AxisState.replicated, "K": AxisState.cols}
_MATMUL_OUT = {NONE: AxisState.replicated, "M": AxisState.rows, "N": AxisState.cols, "K": AxisState.partial}


def _matmul_splits(op: OpSpec, view: MeshView) -> list[Split]:
    out: list[Split] = []
    m, k, n = op.dim("M"), op.dim("K"), op.dim("N")
    for roles in product((NONE, "M", "N", "K"), repeat=len(view.axes)):
        shape = (
            ("M", ceil(m / _p(view, roles, "M"))),
            ("K", ceil(k / _p(view, roles, "K"))),
            ("N", ceil(n / _p(view, roles, "N"))),
        )
        if any(v < 1 or (d != "M" and v % TILE) for d, v in shape):
            continue  # K and N slices are whole tiles (weights are tiled)
        problem = _problem(op, "gemm", shape)
        ins = tuple(_MATMUL_IN[r] for r in roles)
        outs = _state(view, tuple(_MATMUL_OUT[r] for r in roles))
        out.append(Split(op.name, _name(view, roles), view.name, roles, (_state(view, ins),), outs, problem))
        for i, r in enumerate(roles):  # the fused all-gather + matmul: the N axis of a one-axis view
            if r == "N" and len(view.axes) == 1:
                fused_in = tuple(AxisState.cols if j == i else s for j, s in enumerate(ins))
                name = _name(view, tuple("agN" if j == i else x for j, x in enumerate(roles)))
                out.append(
                    Split(op.name, name, view.name, roles, (_state(view, fused_in),), outs, problem, fused_axis=i)
                )
    return out


def seq_legal(op: OpSpec, chips: int) -> bool:
    """Whether the ``seq`` split (module docstring) of attention ``op`` over ``chips`` chips exists: one causal
    sequence (``B = 1``, ``Sq = Skv``), an even number of chips, the sequence a multiple of ``2 * chips``
    tiles (ttnn's ``ring_distributed_sdpa`` validation: ``ring_size`` even, ``Sq % (2 * ring_size) == 0``,
    each chunk tile-aligned)."""
    s = op.dim("Sq")
    return (
        op.causal and op.dim("B") == 1 and s == op.dim("Skv") and chips >= 2 and chips % 2 == 0
        and s % (2 * chips * TILE) == 0
    )  # fmt: skip


def seq_keys(sequence: int, chips: int) -> int:
    """The keys of a ``seq`` chip's per-chip problem (module docstring): the mean over its ``2 c_t`` query
    tile rows (tile rows ``r`` of chunks ``i`` and ``2p - 1 - i``, each needing ``r + 1`` key tiles) of the
    key tiles they need, ``p c_t + 1/2`` for every chip, rounded up to a tile."""
    chunk_tiles = sequence // (2 * chips * TILE)
    need = 2 * chips * chunk_tiles**2 + chunk_tiles  # key tiles summed over the chip's query tile rows
    return ceil(need / (2 * chunk_tiles)) * TILE


def _attention_splits(op: OpSpec, view: MeshView, mesh: MeshSpec, chip: HardwareSpec) -> list[Split]:
    out: list[Split] = []
    choices = (NONE, "heads", "batch") if op.batch_split else (NONE, "heads")
    if op.causal and op.dim("B") == 1:
        choices = (*choices, "seq")
    for roles in product(choices, repeat=len(view.axes)):
        ph, pb, ps = _p(view, roles, "heads"), _p(view, roles, "batch"), _p(view, roles, "seq")
        if op.dim("H") % ph or op.dim("Hkv") % ph or op.dim("B") % pb:
            continue  # whole heads (and key/value heads) and whole users per chip
        seq = roles.count("seq")
        if seq > 1 or (seq and not seq_legal(op, ps)):
            continue  # one sequence axis, where ttnn's ring-distributed SDPA runs
        shape = tuple((d, v // ph if d in ("H", "Hkv") else v // pb if d == "B" else v) for d, v in op.dims)
        role_state = {NONE: AxisState.replicated, "heads": AxisState.cols, "batch": AxisState.rows}
        state = _state(view, tuple(role_state.get(r, AxisState.replicated) for r in roles))
        options = frozenset({"causal"}) if op.causal else frozenset()
        if seq:  # the balanced chunk pair, priced as a non-causal problem (module docstring)
            s = op.dim("Sq")
            shape = tuple((d, s // ps if d == "Sq" else seq_keys(s, ps) if d == "Skv" else v) for d, v in shape)
            options = frozenset()
        fixed = sum(g.cycles(mesh, chip) for g in seq_gathers(op, view, roles, state))
        problem = _problem(op, "flash_attention", shape, options)
        out.append(Split(op.name, _name(view, roles), view.name, roles, (state,), state, problem, fixed_cycles=fixed))
    return out


@dataclass(frozen=True, slots=True)
class SplitGather:
    """An all-gather a split runs inside itself at a fixed configuration (module docstring): along ``axis``,
    each device's ``slice_bytes`` in pages of ``page_bytes``, at ``config``; ``what`` it gathers (``stats``:
    the distributed norm's statistics; ``chunks i`` / ``chunks 2p-1-i``: a ``seq`` split's output chunks)."""

    axis: MeshAxis
    config: AxisConfig
    slice_bytes: int
    page_bytes: int
    what: str

    def cycles(self, mesh: MeshSpec, chip: HardwareSpec) -> int:
        return collective_cycles(
            mesh, chip, CollectiveKind.all_gather, self.axis.chips, self.config, self.slice_bytes, self.page_bytes
        )

    def collective(self, mesh: MeshSpec, chip: HardwareSpec) -> Collective:
        """The gather as a transition's collective is described (the mesh view draws both alike)."""
        c = self.config
        return Collective(
            self.axis.name, CollectiveKind.all_gather, self.slice_bytes, c.links, c.topology, self.cycles(mesh, chip)
        )


def _ring_or_line(axis: MeshAxis) -> FabricTopology:
    return FabricTopology.ring if FabricTopology.ring in axis.topologies else FabricTopology.linear


def stats_gathers(op: OpSpec, view: MeshView, roles: tuple[str, ...], state: TensorState) -> tuple[SplitGather, ...]:
    """The distributed norm's all-gathers of its per-row statistics (module docstring): one per axis it
    fractures the rows' width over (``cols``), a 32-wide tile column per local row, 1 link, a ring where the
    axis closes; none for other ops."""
    if op.kind is not OpKind.norm:
        return ()
    h, _ = local_shape(view, state, op.dim("H"), op.dim("W"))
    return tuple(
        SplitGather(
            axis, AxisConfig(1, _ring_or_line(axis)), h * TILE * op.output.element_bytes, op.output.page_bytes, "stats"
        )
        for axis, r in zip(view.axes, roles, strict=True)
        if r == "cols"
    )


def seq_gathers(op: OpSpec, view: MeshView, roles: tuple[str, ...], state: TensorState) -> tuple[SplitGather, ...]:
    """A ``seq`` split's two all-gathers restoring the sequence order (module docstring) into its output
    ``state``: each chip's first chunk, then its second, ``c = S / 2p`` rows of its local width each, on every
    link of the axis, a ring where it closes (``ring_all_gather`` in llama3_70b_galaxy)."""
    if "seq" not in roles:
        return ()
    i = roles.index("seq")
    axis = view.axes[i]
    rows = _state(view, tuple(AxisState.rows if j == i else a for j, a in enumerate(state.axes)))  # before them
    chunk_bytes = op.output.local_bytes(view, rows) // 2
    config = AxisConfig(axis.links, _ring_or_line(axis))
    whats = ("chunks i", f"chunks {2 * axis.chips - 1}-i")
    return tuple(SplitGather(axis, config, chunk_bytes, op.output.page_bytes, what) for what in whats)


def split_gathers(op: OpSpec, view: MeshView, roles: tuple[str, ...], state: TensorState) -> tuple[SplitGather, ...]:
    """Every all-gather a split runs inside itself (``state``: its output, the gathered one of a ``seq`` split): the
    split's cost, the mesh view and the ttnn export read them here."""
    return stats_gathers(op, view, roles, state) + seq_gathers(op, view, roles, state)


@dataclass(frozen=True, slots=True)
class FusedGather:
    """The all-gather inside a fused split (``agN``, module docstring): along ``axis``, each device's
    ``slice_bytes`` of the input in pages of ``page_bytes``, at ``config`` (the input tensor's), taking
    ``latency_cycles`` on its own."""

    axis: MeshAxis
    config: AxisConfig
    slice_bytes: int
    page_bytes: int
    latency_cycles: int

    def split_cycles(self, matmul_cycles: int) -> int:
        """The fused split's cost, ``max(T_mm, T_ag + T_mm / n)`` (module docstring)."""
        return max(matmul_cycles, self.latency_cycles + ceil(matmul_cycles / self.axis.chips))


def fused_gather(
    mesh: MeshSpec, chip: HardwareSpec, graph: OpGraph, split: Split, view: MeshView, config: AxisConfig
) -> FusedGather:
    """The all-gather of ``split`` (a fused split on ``view``) under its input's ``config`` on the fused axis.
    The planner's cost, the mesh view and the export read it here."""
    assert split.fused_axis is not None, f"{split.name} is not a fused split"
    axis = view.axes[split.fused_axis]
    size = graph.op(graph.op(split.op).inputs[0]).output
    slice_bytes = size.local_bytes(view, split.inputs[0])
    cycles = collective_cycles(mesh, chip, CollectiveKind.all_gather, axis.chips, config, slice_bytes, size.page_bytes)
    return FusedGather(axis, config, slice_bytes, size.page_bytes, cycles)


def _rowwise_splits(op: OpSpec, view: MeshView, mesh: MeshSpec, chip: HardwareSpec) -> list[Split]:
    out: list[Split] = []
    for roles in product((NONE, "rows", "cols"), repeat=len(view.axes)):
        role_state = {NONE: AxisState.replicated, "rows": AxisState.rows, "cols": AxisState.cols}
        state = _state(view, tuple(role_state[r] for r in roles))
        h, w = local_shape(view, state, op.dim("H"), op.dim("W"))
        fixed = sum(g.cycles(mesh, chip) for g in stats_gathers(op, view, roles, state))
        problem = ChipProblem(op.kernel, (("H", h), ("W", w)))
        ins = tuple(state for _ in op.inputs)
        out.append(Split(op.name, _name(view, roles), view.name, roles, ins, state, problem, fixed_cycles=fixed))
    return out


def op_splits(op: OpSpec, view: MeshView, mesh: MeshSpec, chip: HardwareSpec) -> list[Split]:
    """Every split of ``op`` on ``view`` (module docstring). Boundary ops get one split per state (no work)."""
    if op.kind is OpKind.matmul:
        return _matmul_splits(op, view)
    if op.kind is OpKind.attention:
        return _attention_splits(op, view, mesh, chip)
    if op.kind in (OpKind.norm, OpKind.eltwise):
        return _rowwise_splits(op, view, mesh, chip)
    out = []
    for s in view_states(view, partial=False):
        ins = (s,) if op.inputs else ()
        out.append(Split(op.name, s.label, view.name, (), ins, s, None))
    return out
