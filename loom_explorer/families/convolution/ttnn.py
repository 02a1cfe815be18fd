"""The convolution family's TTNN op: ``ttnn.conv2d`` with the ``Conv2dConfig`` that makes its sharded
program factory run a candidate (``ttnn_config.py`` has the correspondence):

- ``M@xy|in0=local,in1=mcast_xy`` with ``--memory in0=l1_height --memory out=l1_height``: ``HEIGHT_SHARDED``
  on ``ceil(Mt/per_core_M)`` cores filling the grid's rows;
- ``M@y,N@x|in0=mcast_x,in1=mcast_y`` with ``l1_block`` activation and output: ``BLOCK_SHARDED``, row-major
  shards (``N@y,M@x|in0=mcast_y,in1=mcast_x``: ``transpose_shards``);

``act_block_h_override`` is ``32 * out_block_h``; the K block is ttnn's own (``model.py::conv_blocking`` keeps
the schedule to it) and so is the sub-block (``ttnn_config.ttnn_subblock``: said in the notes when the
schedule chose another). Every other candidate is refused with the reason.

The config it writes back (``equivalent``) is the resolved form ``ingest`` reads from a profiler row, so
``improve`` costs a better config exactly as it costs the one a row ran.

The exported file (``_call``) runs a conv whose implicit GEMM is the problem: a square, stride-1,
same-padded ``KH x KH`` conv of a batch-1 ``H x W`` image of ``KWC / KH`` channels, ``H * W = M``
(``conv_geometry``; a problem no such conv has is refused). ``ttnn.conv2d`` takes the image row-major
(uploaded DRAM-interleaved: the conv op's halo step shards it as the ``Conv2dConfig`` says) and the weights
``[O, C, KH, KW]`` on the host, prepared by its first call; the file redefines the shared file's
``program_config`` (a ``ttnn.Conv2dConfig``: ``act_block_h_override``, ``transpose_shards``, the shard
layout, ``override_sharding_config`` with the ``core_grid`` of the schedule's cores, the weights' data
format, the fused activation) and ``upload`` accordingly. The output is sharded as the schedule's output
(``memory_config``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from loom_explorer.export.exporter import ExportError
from loom_explorer.families.convolution.program import analyse_convolution
from loom_explorer.families.convolution.ttnn_config import (
    TtnnConv2dConfig,
    captured_conv,
    default_conv,
    evaluate_conv_config,
    exported_conv_config,
    parse_conv,
    ttnn_subblock,
)
from loom_explorer.mapping.candidate import Candidate, Comm
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.problem import Placement, Problem
from loom_explorer.targets.ttnn.op import CapturedCall, ProgramConfigs, TtnnOp
from loom_explorer.targets.ttnn.sharding import DRAM, ranges_filling_rows, sharded


def shard_layout(problem: Problem, cand: Candidate) -> str | None:
    """The shard layout whose program factory runs ``cand`` (module docstring), None when none does."""
    conv = analyse_convolution(problem.program)
    a, b, out = conv.matmul.a, conv.matmul.b, conv.matmul.out
    placed = {problem.placement(a), problem.placement(out)}
    if problem.placement(b).in_l1 or cand.gather_axis is not None:
        return None
    m_axis, n_axis = cand.axis_of(conv.m_dim), cand.axis_of(conv.n_dim)
    if placed == {Placement.l1_height} and m_axis == "xy" and n_axis is None:
        return "HEIGHT_SHARDED" if (cand.comm(a), cand.comm(b)) == (Comm.local, Comm.mcast_xy) else None
    if placed == {Placement.l1_block} and {m_axis, n_axis} == {"x", "y"}:
        along = Comm.mcast_x if n_axis == "x" else Comm.mcast_y
        across = Comm.mcast_y if n_axis == "x" else Comm.mcast_x
        return "BLOCK_SHARDED" if (cand.comm(a), cand.comm(b)) == (along, across) else None
    return None


def _runs(problem: Problem, cand: Candidate) -> bool:
    return shard_layout(problem, cand) is not None


def _equivalent(schedule: SymbolicSchedule, v: dict[str, int]) -> tuple[str, dict[str, object], list[str]]:
    problem, cand = schedule.problem, schedule.candidate
    layout = shard_layout(problem, cand)
    if layout is None:
        raise ExportError(
            f"candidate {cand.name} is not what ttnn's sharded conv runs: place in0 and out with --memory "
            "in0=l1_height --memory out=l1_height (M@xy|in0=local,in1=mcast_xy) or l1_block "
            "(M@y,N@x|in0=mcast_x,in1=mcast_y)"
        )
    conv = analyse_convolution(problem.program)
    mt = problem.tiles(conv.m_dim)
    pm, pn, bh = v["per_core_M"], v["per_core_N"], v["out_block_h"]
    sub = ttnn_subblock(problem, bh, pn)
    transposed = cand.axis_of(conv.m_dim) == "x"
    nhw = math.ceil(mt / pm)
    cores_c = 1 if layout == "HEIGHT_SHARDED" else math.ceil(problem.tiles(conv.n_dim) / pn)
    grid = (v["grid_x"], v["grid_y"])
    notes = []
    act_block_w = v["in0_block_w"]
    window = problem.tiles(conv.window_dim)
    # ttnn derives the K block itself (determine_per_core_conv_block_config): a filter row's window, or
    # block sharded, the share of it each channel core holds
    ttnn_block = window if layout == "HEIGHT_SHARDED" else window // cores_c if window % cores_c == 0 else 0
    if ttnn_block and act_block_w != ttnn_block:
        notes.append(f"ttnn's conv steps K by {ttnn_block} tiles here; this schedule chose {act_block_w}")
        act_block_w = ttnn_block
    args: dict[str, object] = {
        "act_block_h_override": 32 * bh,
        "transpose_shards": transposed,
        "enable_act_double_buffer": v["in0_buffer_depth"] >= 2,
        "enable_weights_double_buffer": v["in1_buffer_depth"] >= 2,
        "memory": {
            "shard_layout": layout,
            "compute_with_storage_grid_size": list(grid),
            "num_cores_nhw": nhw,
            "num_cores_c": cores_c,
            "per_core_out_matrix_height_ntile": pm,
            "per_core_out_matrix_width_ntile": pn,
            "act_block_w_ntiles": act_block_w,
            "out_subblock_h_ntiles": sub[0],
            "out_subblock_w_ntiles": sub[1],
        },
    }
    if sub != (v["out_subblock_h"], v["out_subblock_w"]):
        notes.append(
            f"ttnn picks the {sub[0]}x{sub[1]} sub-block itself; this schedule chose "
            f"{v['out_subblock_h']}x{v['out_subblock_w']}"
        )
    if v["out_block_w"] != pn:
        notes.append(
            f"ttnn's conv computes the whole per-core width ({pn} tiles) per block; "
            f"this schedule chose {v['out_block_w']}"
        )
    return "Conv2dConfig", args, notes


def _memory(schedule: SymbolicSchedule, v: dict[str, int]) -> dict[str, object]:
    problem, cand = schedule.problem, schedule.candidate
    layout = shard_layout(problem, cand)
    if layout is None:
        raise ExportError(f"candidate {cand.name} is not what ttnn's sharded conv runs")
    conv = analyse_convolution(problem.program)
    mt, nt = problem.tiles(conv.m_dim), problem.tiles(conv.n_dim)
    pm, pn, gx, gy = v["per_core_M"], v["per_core_N"], v["grid_x"], v["grid_y"]
    if layout == "HEIGHT_SHARDED":
        out = sharded(layout, ranges_filling_rows(math.ceil(mt / pm), gx), (pm, nt))
    else:
        out = sharded(layout, [[[0, 0], [gx - 1, gy - 1]]], (pm, pn))
    # the image is uploaded DRAM-interleaved: ttnn.conv2d (its halo step) shards it as the Conv2dConfig says
    return {conv.matmul.a: DRAM, conv.matmul.b: DRAM, conv.matmul.out: out}


def conv_geometry(problem: Problem) -> ConvGeometry:
    """The convolution the exported file runs for ``problem``'s implicit GEMM (``ConvGeometry``); ExportError
    when no square, stride-1, same-padded conv has it."""
    conv = analyse_convolution(problem.program)
    kh, kwc = problem.elements(conv.rows_dim), problem.elements(conv.window_dim)
    if kh % 2 == 0 or kwc % kh:
        raise ExportError(
            f"the file runs a square, stride-1, same-padded conv: {conv.window_dim}={kwc} must be {conv.rows_dim}={kh} "
            "(odd) filter columns of whole input channels"
        )
    pixels = problem.elements(conv.m_dim)
    height = max(h for h in range(1, math.isqrt(pixels) + 1) if pixels % h == 0)
    return ConvGeometry(kh, kwc // kh, height, pixels // height, problem.elements(conv.n_dim))


@dataclass(frozen=True, slots=True)
class ConvGeometry:
    """A square, stride-1, same-padded conv of a ``height x width`` image of ``channels`` channels, batch 1,
    to ``out_channels``: its implicit GEMM has ``M = height * width``, ``KH = kernel`` and ``KWC = kernel *
    channels`` (``height`` the largest divisor of M up to its square root)."""

    kernel: int
    channels: int
    height: int
    width: int
    out_channels: int


def _call(schedule: SymbolicSchedule) -> str:
    """The exported file's conv: its host inputs, its ``Conv2dConfig`` (``program_config``, redefined after
    the shared file's, which builds matmul-style configs), inputs uploaded as ``ttnn.conv2d`` takes them
    (``upload``: the image row-major in DRAM, the weights and bias on the host, prepared by the first call
    and kept), the call and its torch reference."""
    problem = schedule.problem
    g = conv_geometry(problem)
    layout = shard_layout(problem, schedule.candidate)
    assert layout is not None, "a candidate the op does not run is refused by equivalent first"
    bias = problem.is_enabled("bias")
    activation = problem.activation
    if activation and activation.upper() not in ACTIVATIONS:
        raise ExportError(f"--activation {activation}: the conv file fuses {', '.join(ACTIVATIONS)}")
    fused = f"ttnn.UnaryWithParam(ttnn.UnaryOpType.{activation.upper()})" if activation else "None"
    reference = f"torch.nn.functional.conv2d(x, w, b, padding={g.kernel // 2})"
    if activation:
        reference = f"torch.{ACTIVATIONS[activation.upper()]}({reference})"
    return _CALL.format(
        kernel=g.kernel,
        channels=g.channels,
        height=g.height,
        width=g.width,
        out_channels=g.out_channels,
        padding=g.kernel // 2,
        layout=layout,
        fused=fused,
        bias_draw=f', "bias": torch.randn((1, 1, 1, {g.out_channels}), dtype=torch.bfloat16)' if bias else "",
        bias_arg='tensors.get("bias")',
        bias_ref='inputs["bias"].float().flatten()' if bias else "None",
        reference=reference,
    )


ACTIVATIONS = {"RELU": "relu"}
"""The fused activations the conv file writes (``Conv2dConfig.activation``), and torch's function of each."""


def _unpredicted(call: CapturedCall) -> str:
    if isinstance(call.config, TtnnConv2dConfig):
        return f"conv2d {call.config.shard_layout.lower()}"
    return "conv2d"


OP = TtnnOp(
    "convolution",
    _runs,
    _equivalent,
    _memory,
    _call,
    function="ttnn.conv2d",
    default=default_conv,
    captured=captured_conv,
    configs=ProgramConfigs(parse=parse_conv, evaluate=evaluate_conv_config, exported=exported_conv_config),
    unpredicted_candidate=_unpredicted,
)
"""The convolution family's TTNN op (module docstring)."""


_CALL = '''\
def host_inputs():
    """The host tensors (torch, bfloat16): the image [1, H, W, C], the weights [O, C, KH, KW] (and the bias)."""
    return {{"in0": torch.randn((1, {height}, {width}, {channels}), dtype=torch.bfloat16),
            "in1": torch.randn(({out_channels}, {channels}, {kernel}, {kernel}), dtype=torch.bfloat16){bias_draw}}}


def program_config():
    """The conv's ttnn.Conv2dConfig: PROGRAM_CONFIG's arguments, the sharding it pins and the fused activation
    (this replaces the shared file's program_config, which builds matmul program configs)."""
    resolved = PROGRAM_CONFIG["memory"]
    ranges = [ttnn.CoreRange(ttnn.CoreCoord(*first), ttnn.CoreCoord(*last)) for first, last in CORE_RANGES]
    return ttnn.Conv2dConfig(weights_dtype=getattr(ttnn, DTYPES["in1"]),
                             activation={fused},
                             act_block_h_override=PROGRAM_CONFIG["act_block_h_override"],
                             transpose_shards=PROGRAM_CONFIG["transpose_shards"],
                             enable_act_double_buffer=PROGRAM_CONFIG["enable_act_double_buffer"],
                             enable_weights_double_buffer=PROGRAM_CONFIG["enable_weights_double_buffer"],
                             shard_layout=getattr(ttnn.TensorMemoryLayout, resolved["shard_layout"]),
                             override_sharding_config=True, core_grid=ttnn.CoreRangeSet(ranges),
                             output_layout=ttnn.TILE_LAYOUT)


CORE_RANGES = [[first, last] for first, last in MEMORY["out"]["core_ranges"]]


def upload(inputs, configs, device):
    """The image row-major in DRAM (ttnn.conv2d shards it as the config says); the weights and bias stay on the
    host: the first call prepares them on the device and op keeps the prepared ones (this replaces the shared
    file's upload, which tiles every operand)."""
    out = {{"in0": ttnn.from_torch(inputs["in0"], dtype=ttnn.bfloat16, layout=ttnn.ROW_MAJOR_LAYOUT, device=device,
                                  memory_config=ttnn.DRAM_MEMORY_CONFIG)}}
    out.update({{t: ttnn.from_torch(v, dtype=ttnn.bfloat16) for t, v in inputs.items() if t != "in0"}})
    return out


def op(tensors, configs):
    """ttnn.conv2d once; the weights and bias it prepares on its first call are kept for the next."""
    out, (tensors["in1"], tensors["bias"]) = ttnn.conv2d(
        input_tensor=tensors["in0"], weight_tensor=tensors["in1"], bias_tensor={bias_arg},
        device=tensors["in0"].device(), in_channels={channels}, out_channels={out_channels}, batch_size=1,
        input_height={height}, input_width={width}, kernel_size=({kernel}, {kernel}), stride=(1, 1),
        padding=({padding}, {padding}), conv_config=configs["program"],
        compute_config=configs["compute"], memory_config=configs["memory"]["out"],
        dtype=getattr(ttnn, DTYPES["out"]), return_weights_and_bias=True)
    return out


def expected(inputs):
    x = inputs["in0"].float().permute(0, 3, 1, 2)
    w, b = inputs["in1"].float(), {bias_ref}
    return {reference}.permute(0, 2, 3, 1).reshape(1, 1, -1, {out_channels})
'''
