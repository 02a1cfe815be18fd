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
``improve`` costs a better config exactly as it costs the one a row ran. The export's call is refused:
``ttnn.conv2d`` takes its input as a row-major ``[1, 1, N*H*W, C]`` tensor and its weights as an
``[O, C, KH, KW]`` host tensor it prepares itself, which the shared TTNN file (every operand uploaded tiled)
does not hold.
"""

from __future__ import annotations

import math

from loom_explorer.export.exporter import ExportError
from loom_explorer.families.convolution.implicit_gemm import k_tiles
from loom_explorer.families.convolution.program import analyse_convolution
from loom_explorer.families.convolution.ttnn_config import (
    TtnnConv2dConfig,
    captured_conv,
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
    sub = ttnn_subblock(schedule.hardware, problem, bh, pn)
    transposed = cand.axis_of(conv.m_dim) == "x"
    nhw = math.ceil(mt / pm)
    cores_c = 1 if layout == "HEIGHT_SHARDED" else math.ceil(problem.tiles(conv.n_dim) / pn)
    grid = (v["grid_x"], v["grid_y"])
    args: dict[str, object] = {
        "act_block_h_override": 32 * bh,
        "transpose_shards": transposed,
        "memory": {
            "shard_layout": layout,
            "compute_with_storage_grid_size": list(grid),
            "num_cores_nhw": nhw,
            "num_cores_c": cores_c,
            "per_core_out_matrix_height_ntile": pm,
            "per_core_out_matrix_width_ntile": pn,
            "act_block_w_ntiles": v["in0_block_w"],
            "out_subblock_h_ntiles": sub[0],
            "out_subblock_w_ntiles": sub[1],
        },
    }
    notes = []
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
    mt, nt, kt = problem.tiles(conv.m_dim), problem.tiles(conv.n_dim), k_tiles(problem)
    pm, pn, gx, gy = v["per_core_M"], v["per_core_N"], v["grid_x"], v["grid_y"]
    if layout == "HEIGHT_SHARDED":
        ranges = ranges_filling_rows(math.ceil(mt / pm), gx)
        act, out = sharded(layout, ranges, (pm, kt)), sharded(layout, ranges, (pm, nt))
    else:
        block = [[[0, 0], [gx - 1, gy - 1]]]
        cores_c = gx if cand.axis_of(conv.n_dim) == "x" else gy
        act = sharded(layout, block, (pm, math.ceil(kt / cores_c)))
        out = sharded(layout, block, (pm, pn))
    return {conv.matmul.a: act, conv.matmul.b: DRAM, conv.matmul.out: out}


def _call(schedule: SymbolicSchedule) -> str:
    raise ExportError(
        "the TTNN file export of conv2d is not written: ttnn.conv2d takes a row-major [1, 1, N*H*W, C] "
        "input and [O, C, KH, KW] host weights it prepares itself, which the shared TTNN file (every operand "
        "uploaded tiled) does not hold; `improve` writes the Conv2dConfig"
    )


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
    captured=captured_conv,
    configs=ProgramConfigs(parse=parse_conv, evaluate=evaluate_conv_config, exported=exported_conv_config),
    unpredicted_candidate=_unpredicted,
)
"""The convolution family's TTNN op (module docstring)."""
