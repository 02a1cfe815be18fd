"""The convolution family's model: its implicit GEMM (``implicit_gemm.py``) costed by the contraction
family's blocked-matmul model, candidate for candidate (the candidate names the same dimensions ``M``, ``N``
and tensors ``in0``, ``in1``), so every parameter, constraint and latency term is the GEMM's
(docs/model.md); what the convolution adds is the K blocking ttnn gives it (filter row by filter row) and, on
the TTNN target, the GEMM's terms composed as ttnn's conv kernels run (``latency.py``: two movers, the fill of
the double-buffered inputs, the activation's tilize, a single-buffered read counted once).

The activation ``in0`` is already in L1 when the conv runs: the halo op (``HaloDeviceOperation``, its own
profiler row) gathered each core's input rows with their neighbours' overlap into its shard, so the conv's
reads of it are local (``in0=local`` with ``--memory in0=l1_height``) or multicast along the channel axis
(block sharding, ``in0=mcast_x``).
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from loom_explorer.families.contraction.forwarding import forwarded
from loom_explorer.families.contraction.model import build as gemm_build
from loom_explorer.families.contraction.quantities import ContractionQuantities
from loom_explorer.families.contraction.roofline import contraction_work
from loom_explorer.families.convolution.implicit_gemm import gemm_problem
from loom_explorer.families.convolution.latency import latency_terms
from loom_explorer.families.convolution.program import CONVOLUTION, analyse_convolution
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Candidate
from loom_explorer.model.expr import ceil_div, mul
from loom_explorer.model.families.base import FamilyModel, ModelFamily
from loom_explorer.model.noc_bound import write_link_shares
from loom_explorer.model.quantities import GridQuantities
from loom_explorer.model.schedule import Constraint, L1Buffer
from loom_explorer.problem import KernelTarget, Problem


def build(hw: HardwareSpec, problem: Problem, candidate: Candidate, noc_bound: bool) -> FamilyModel:
    """The model of ``candidate`` of a convolution: its implicit GEMM's, with the halo'd input shard
    (``_input_shard``) and, on the TTNN target, ttnn's output block (``conv_blocking``) and the latency of
    ttnn's conv kernels (``latency.py``: the activation and weights moved by two RISC-Vs, a single-buffered
    input's first block loaded by the first step)."""
    model = gemm_build(hw, gemm_problem(problem), candidate, noc_bound)
    buffers = tuple(_input_shard(model.quantities, problem, b) for b in model.l1_buffers)
    if problem.target is not KernelTarget.ttnn:
        return replace(model, l1_buffers=buffers)
    q = model.quantities
    latency = model.latency
    if isinstance(q, ContractionQuantities) and candidate.gather_axis is None and not forwarded(q):
        write_links = write_link_shares(q, list(model.flows)) if noc_bound else []
        latency = partial(latency_terms, q, write_links=write_links)
    return replace(
        model,
        l1_buffers=buffers,
        latency=latency,
        constraints=(*model.constraints, *conv_blocking(model.quantities, problem)),
    )


def _input_shard(q: GridQuantities, problem: Problem, buffer: L1Buffer) -> L1Buffer:
    """The activation's resident shard is the halo'd input rows, not the GEMM's im2col'd ``per_core_M x Kt``
    (``KH * KW`` times larger): ``per_core_M`` tiles of pixels by ``ceil(KWC/32 / KH)`` tiles of channels,
    the window taken square (``KW = KH``, as every conv of the shipped captures is), split over the cores of
    ``N``'s axis when block sharded; the halo's few extra rows left out."""
    conv = analyse_convolution(problem.program)
    if buffer.name != f"{conv.matmul.a}_shard":
        return buffer
    kh = problem.elements(conv.rows_dim)
    channels = -(-problem.tiles(conv.window_dim) // kh)
    tile_bytes = q.hw.tile_bytes[problem.data_format(conv.matmul.a)]
    axis = q.candidate.axis_of(conv.n_dim)  # block sharding: a core holds its share of the channels
    share = channels if axis is None else ceil_div(channels, q.axis_cores(axis))
    return L1Buffer(
        buffer.name, mul(q.per_core[conv.m_dim], share, tile_bytes), "halo'd input shard (pixels x channels)"
    )


def conv_blocking(q: GridQuantities, problem: Problem) -> list[Constraint]:
    """ttnn's conv output block width, a core's whole width (``weight_block_w_ntiles =
    per_core_out_matrix_width_ntile`` in ``conv2d_op_sharded_program_factory.cpp`` @
    55e3268f4a5804bee2240c6abda418cadb7e9f04), which a ``Conv2dConfig`` does not choose:

        out_block_w == per_core_N

    The K block (``act_block_w_ntiles``) is left to the GEMM's own constraints: ttnn derives it
    (``determine_per_core_conv_block_config`` in ``conv2d_utils.cpp`` @ 71ff3c1d7daa9b533f90160fdb6b853f625bc7f2:
    a filter row's window, its share per channel core, or with ``full_inner_dim`` every filter row's), older
    ttnn split it otherwise, and a captured config is costed as it ran; the config the export writes
    carries ttnn's own block (``ttnn.py``)."""
    conv = analyse_convolution(problem.program)
    out_block_w = next(p.var for p in q.params if p.name == "out_block_w")
    return [
        Constraint(
            "conv_weight_block_w",
            "divisibility",
            "eq",
            out_block_w,
            q.per_core[conv.n_dim],
            "ttnn's conv computes a core's whole output width ({rhs} tiles) per block; the block here is {lhs}",
        )
    ]


def work_cycles(hw: HardwareSpec, problem: Problem) -> int:
    """The implicit GEMM's tile matmuls at the fidelity's cycles per tile."""
    return contraction_work(gemm_problem(problem))[1] * hw.compute.matmul_tile_cycles[problem.fidelity]


FAMILY = ModelFamily(name=CONVOLUTION.name, build=build, work_cycles=work_cycles)
