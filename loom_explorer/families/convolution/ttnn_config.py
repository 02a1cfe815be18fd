"""ttnn's ``Conv2dConfig`` as its sharded program factory resolves it, read, costed and written back.

A conv2d call's config (``ttnn.Conv2dConfig``: ``shard_layout``, ``act_block_h_override``,
``act_block_w_div``, ``core_grid`` with ``override_sharding_config``...) is resolved by ttnn
(``conv2d_utils.cpp``: ``determine_parallel_config``, ``determine_per_core_conv_block_config``) into the
``Conv2dParallelizationConfig`` and ``Conv2dBlockConfig`` the device op runs and the profiler prints
(``parallelization_config``, ``block_config`` in ATTRIBUTES). :class:`TtnnConv2dConfig` holds that resolved
form; the model costs it as the multicast matmul config its program factory runs
(tenstorrent/tt-metal ``ttnn/cpp/ttnn/operations/conv/conv2d/device/conv2d_op_sharded_program_factory.cpp``
@ 55e3268f4a5804bee2240c6abda418cadb7e9f04):

* ``HEIGHT_SHARDED``: each core holds ``per_core_out_matrix_height_ntile`` output rows of tiles and its halo'd
  activation rows; the weights are read from DRAM by one core and multicast to all (the
  ``reader_writer_tiled_out_1d_mcast_{sender,receiver}_conv_weights`` kernels): the 1-D matmul config with
  ``mcast_in0=False`` and ``in0`` local (``M@xy|in0=local,in1=mcast_xy``);
* ``BLOCK_SHARDED``: output rows over one grid axis and the output channels over the other (rows over y
  for ``ROW_MAJOR`` shards, ``transpose_mcast`` for ``COL_MAJOR``), the activation's channel blocks
  multicast along the channel axis and the weights along the rows axis: the 2-D matmul config
  (``M@y,N@x|in0=mcast_x,in1=mcast_y``);

with ``in0_block_w = act_block_w_ntiles``, ``out_block_h = act_block_h_ntiles``, ``out_block_w =
per_core_out_matrix_width_ntile`` and the block config's sub-blocks, on the implicit GEMM
(``implicit_gemm.py``). ``WIDTH_SHARDED`` convs (a separate factory,
``conv2d_op_width_sharded_program_factory.cpp``) are refused with that reason.

What a ``Conv2dConfig`` cannot set, ttnn picks: the sub-block (``ttnn_subblock``:
``determine_largest_subblock_size``), so a config the model writes back (``exported_conv_config``) carries
the sub-block ttnn would pick, not the schedule's. ``default_height_sharded`` is what ttnn resolves a
height-sharded call that sets nothing else into.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from loom_explorer.families.contraction.ttnn_config import (
    TtnnMatmulConfig,
    check_blocks_fit,
    layout,
    matmul_args,
)
from loom_explorer.families.contraction.ttnn_mapping import ONE_D, TWO_D, schedule_values
from loom_explorer.families.convolution.implicit_gemm import k_tiles
from loom_explorer.families.convolution.program import analyse_convolution
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.enumerate import enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.model.quantities import BUFFER_DEPTHS
from loom_explorer.problem import Placement, Problem
from loom_explorer.targets.ttnn.config import TtnnConfig, own
from loom_explorer.targets.ttnn.config_text import block_lines, program_config_arguments
from loom_explorer.targets.ttnn.evaluate import ConfigError, Count, Evaluated, check_grid, evaluate_values, validated
from loom_explorer.targets.ttnn.op import CapturedCall

ShardLayout = Literal["HEIGHT_SHARDED", "BLOCK_SHARDED"]
PLACEMENT: dict[str, Placement] = {"HEIGHT_SHARDED": Placement.l1_height, "BLOCK_SHARDED": Placement.l1_block}
MEMORY_NAME = {"HEIGHT_SHARDED": "L1_HEIGHT_SHARDED", "BLOCK_SHARDED": "L1_BLOCK_SHARDED"}
CONFIG_CLASS: Literal["Conv2dConfig"] = "Conv2dConfig"


class ConvSharding(BaseModel):
    """What ttnn resolves a ``Conv2dConfig`` into for one conv (its ``parallelization_config`` and
    ``block_config``): the shard layout, the grid and cores, the per-core output block, the K block and the
    sub-block."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    shard_layout: ShardLayout
    compute_with_storage_grid_size: tuple[Count, Count]  # parallelization_config.grid_size: (columns, rows)
    num_cores_nhw: Count
    num_cores_c: Count = 1  # output-channel blocks (block sharding)
    per_core_out_matrix_height_ntile: Count
    per_core_out_matrix_width_ntile: Count
    act_block_w_ntiles: Count
    out_subblock_h_ntiles: Count
    out_subblock_w_ntiles: Count


class TtnnConv2dConfig(BaseModel):
    """A conv2d's config as its program factory runs it (module docstring): the ``ttnn.Conv2dConfig``
    arguments a user sets that the model reads (``act_block_h_override`` in elements, ``transpose_shards``,
    ``enable_act_double_buffer``, ``enable_weights_double_buffer``),
    and in ``memory`` the sharding ttnn resolves (the shard layout and ``core_grid`` a config pins with
    ``override_sharding_config``, and what ttnn derives from them)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    program_config: Literal["Conv2dConfig"] = CONFIG_CLASS
    act_block_h_override: Count
    transpose_shards: bool = False  # COL_MAJOR shard orientation
    enable_act_double_buffer: bool = False
    enable_weights_double_buffer: bool = False
    memory: ConvSharding
    compute: dict[str, object] = Field(default_factory=dict)

    @field_validator("act_block_h_override")
    @classmethod
    def _whole_tiles(cls, value: int) -> int:
        if value % 32:
            raise ValueError("act_block_h_override must be a whole number of 32-row tiles")
        return value

    @property
    def act_block_h_ntiles(self) -> int:
        return self.act_block_h_override // 32

    @property
    def shard_layout(self) -> ShardLayout:
        return self.memory.shard_layout

    @property
    def compute_with_storage_grid_size(self) -> tuple[int, int]:
        return self.memory.compute_with_storage_grid_size

    def ttnn_call(self) -> str | None:
        return "ttnn.conv2d"

    def ttnn_class(self) -> str | None:
        return f"ttnn.{CONFIG_CLASS}"

    def ttnn_arguments(self) -> dict[str, object]:
        """The ``ttnn.Conv2dConfig`` arguments that are literals (``act_block_h_override``,
        ``transpose_shards``); the shard layout and core grid, which are ttnn objects, are said in
        ``ttnn_lines`` and carried in ``memory``."""
        return program_config_arguments(self)

    def ttnn_lines(self) -> list[str]:
        pinned = (
            f"with shard_layout=ttnn.TensorMemoryLayout.{self.shard_layout}, override_sharding_config=True, "
            f"core_grid={core_range_set_text(self)}"
        )
        return [pinned, *block_lines(self.read_with())]

    def read_with(self) -> dict[str, Mapping[str, object]]:
        return {"memory": self.memory.model_dump(mode="json"), "compute": self.compute}

    def placements(self) -> dict[str, Placement]:
        return {"in0": PLACEMENT[self.shard_layout], "out": PLACEMENT[self.shard_layout]}


def core_range_set_text(cfg: TtnnConv2dConfig) -> str:
    """``ttnn.CoreRangeSet([...])`` of ``core_ranges(cfg)``, as Python source."""
    ranges = ", ".join(
        f"ttnn.CoreRange(ttnn.CoreCoord({x0}, {y0}), ttnn.CoreCoord({x1}, {y1}))"
        for (x0, y0), (x1, y1) in core_ranges(cfg)
    )
    return f"ttnn.CoreRangeSet([{ranges}])"


def core_ranges(cfg: TtnnConv2dConfig) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The config's cores as inclusive ``((x0, y0), (x1, y1))`` ranges: height sharding fills the grid's
    columns row by row with ``num_cores_nhw`` cores; block sharding takes ``num_cores_c`` columns by
    ``num_cores_nhw`` rows (swapped when transposed)."""
    gx, _ = cfg.compute_with_storage_grid_size
    m = cfg.memory
    if cfg.shard_layout == "BLOCK_SHARDED":
        cols, rows = (m.num_cores_nhw, m.num_cores_c) if cfg.transpose_shards else (m.num_cores_c, m.num_cores_nhw)
        return [((0, 0), (cols - 1, rows - 1))]
    full, rest = divmod(m.num_cores_nhw, gx)
    ranges = [((0, 0), (gx - 1, full - 1))] if full else []
    if rest:
        ranges.append(((0, full), (rest - 1, full)))
    return ranges


def parse_conv_config(raw: object, origin: str = "config") -> TtnnConv2dConfig:
    """``raw`` (the fields in this module's names) as a config; ConfigError naming ``origin`` and the field."""
    return validated(TtnnConv2dConfig, raw, origin)


def matmul_config(problem: Problem, cfg: TtnnConv2dConfig) -> TtnnMatmulConfig:
    """The multicast matmul config ``cfg``'s program factory runs on ``problem``'s implicit GEMM (module
    docstring); ConfigError when the blocks do not tile K or the rows as ttnn requires."""
    kt, m = k_tiles(problem), cfg.memory
    if kt % m.act_block_w_ntiles:
        raise ConfigError(f"act_block_w_ntiles={m.act_block_w_ntiles} does not divide K={kt} tiles")
    if m.per_core_out_matrix_height_ntile % cfg.act_block_h_ntiles:
        raise ConfigError(
            f"act_block_h_override={cfg.act_block_h_override} ({cfg.act_block_h_ntiles} tiles) does not divide "
            f"per_core_out_matrix_height_ntile={m.per_core_out_matrix_height_ntile} (ttnn requires it)"
        )
    sharded = MEMORY_NAME[cfg.shard_layout]
    common = {
        "in0_block_w": m.act_block_w_ntiles,
        "per_core_M": m.per_core_out_matrix_height_ntile,
        "per_core_N": m.per_core_out_matrix_width_ntile,
        "out_block_h": cfg.act_block_h_ntiles,
        "out_block_w": m.per_core_out_matrix_width_ntile,
        "out_subblock_h": m.out_subblock_h_ntiles,
        "out_subblock_w": m.out_subblock_w_ntiles,
        "memory": {"in0": sharded, "in1": "DRAM", "out": sharded},
        "compute": cfg.compute,
    }
    if cfg.shard_layout == "HEIGHT_SHARDED":
        return TtnnMatmulConfig.model_validate(
            {
                "program_config": ONE_D,
                "compute_with_storage_grid_size": cfg.compute_with_storage_grid_size,
                "mcast_in0": False,
                **common,
            }
        )
    grid = (m.num_cores_nhw, m.num_cores_c) if cfg.transpose_shards else (m.num_cores_c, m.num_cores_nhw)
    return TtnnMatmulConfig.model_validate(
        {
            "program_config": TWO_D,
            "compute_with_storage_grid_size": grid,
            "transpose_mcast": cfg.transpose_shards,
            **common,
        }
    )


def evaluate_conv_config(hw: HardwareSpec, problem: Problem, cfg: TtnnConfig) -> Evaluated:
    """``ProgramConfigs.evaluate``: the referee's latency of the matmul config ``cfg`` runs, on the implicit
    GEMM with ``cfg``'s placements."""
    conv = own(cfg, TtnnConv2dConfig)
    check_grid(hw, conv.compute_with_storage_grid_size)
    placed = _placed(problem, conv)
    mm = matmul_config(placed, conv)
    row = layout(mm)
    candidate = next((c for c in enumerate_candidates(placed) if row.runs(c, "M", "N", "in0", "in1")), None)
    if candidate is None:
        if conv.transpose_shards:
            raise ConfigError(
                "a COL_MAJOR (transposed) block-sharded conv: the model's l1_block placement shards rows over grid "
                "rows and columns over grid columns, so the transposed candidate it runs is not enumerated"
            )
        raise ConfigError(f"what a {conv.shard_layout} conv runs is not a candidate of this problem")
    schedule = build_schedule(hw, placed, candidate)  # the convolution family's model (model.py)
    tiles = (placed.tiles("M"), placed.tiles("N"), k_tiles(placed))
    values = schedule_values(row, matmul_args(mm), tiles)
    values.update(buffer_depths(placed, conv))
    check_blocks_fit(mm, values["grid_x"], values["grid_y"])
    return evaluate_values(schedule, {p: values[p] for p in schedule.param_names if p in values})


def buffer_depths(problem: Problem, cfg: TtnnConv2dConfig) -> dict[str, int]:
    """The blocks of the activation and weight buffers ttnn allocates (``get_cb_info`` in
    ``conv2d_op_program_factory_common.cpp`` @ f3c1ee7ec100a0a965df79edf9936c95734743ea): the activation
    block twice with ``enable_act_double_buffer``, else once; the weights block twice with
    ``enable_weights_double_buffer``, else once, but, height sharded with more than one activation block per
    core, every filter row's block (the weights held whole, ``KH`` blocks; the model's buffer depth stops at
    its largest, 3)."""
    m = cfg.memory
    weights = 2 if cfg.enable_weights_double_buffer else 1
    if cfg.shard_layout == "HEIGHT_SHARDED" and m.per_core_out_matrix_height_ntile > cfg.act_block_h_ntiles:
        kh = problem.elements(analyse_convolution(problem.program).rows_dim)
        weights = min(kh, max(BUFFER_DEPTHS))
    return {"in0_buffer_depth": 2 if cfg.enable_act_double_buffer else 1, "in1_buffer_depth": weights}


def _placed(problem: Problem, cfg: TtnnConv2dConfig) -> Problem:
    """``problem`` with the activation and output where ``cfg`` shards them."""
    placements = dict(problem.placements)
    placements.update(cfg.placements())
    return replace(problem, placements=tuple(sorted(placements.items())))


CONV_SUBBLOCKS = (
    (2, 4), (4, 2), (1, 8), (8, 1), (1, 7), (7, 1), (2, 3), (3, 2), (1, 6), (6, 1),
    (1, 5), (5, 1), (2, 2), (1, 4), (4, 1), (1, 3), (3, 1), (1, 2), (2, 1), (1, 1),
)  # fmt: skip
"""``determine_largest_subblock_size``'s search order (``conv2d_utils.cpp`` @
71ff3c1d7daa9b533f90160fdb6b853f625bc7f2)."""


def ttnn_subblock(problem: Problem, block_h: int, block_w: int) -> tuple[int, int]:
    """The sub-block ttnn's conv picks for an ``block_h x block_w`` output block (``determine_largest_subblock_size``
    in ``conv2d_utils.cpp`` @ 71ff3c1d7daa9b533f90160fdb6b853f625bc7f2): the first of ``CONV_SUBBLOCKS`` that
    divides both sides, of at most 4 tiles with fp32 accumulation, and either one row high or the block's
    whole width."""
    for h, w in CONV_SUBBLOCKS:
        if problem.fp32_acc and h * w > 4:
            continue
        if block_h % h == 0 and block_w % w == 0 and (w == block_w or h == 1):
            return h, w
    return 1, 1


def closest_divisor_with_padding(tiles: int, start: int, mult: int = 1) -> int:
    """``find_closest_largest_divisor_with_num_padding_and_mult`` (``conv2d_utils.cpp`` @
    71ff3c1d7daa9b533f90160fdb6b853f625bc7f2): the most cores, from ``start`` down, whose padding of
    ``tiles`` up to a multiple of ``cores * mult`` is less than one core's share."""
    cores = start
    padded = -(-tiles // (cores * mult)) * cores * mult
    while padded - tiles >= padded // cores and cores > 1:
        cores -= 1
        padded = -(-tiles // (cores * mult)) * cores * mult
    return cores


def default_height_sharded(hw: HardwareSpec, problem: Problem) -> TtnnConv2dConfig:
    """What ttnn resolves a ``Conv2dConfig(shard_layout=HEIGHT_SHARDED)`` that sets nothing else into, on
    ``hw``'s grid (``conv2d_utils.cpp`` @ 71ff3c1d7daa9b533f90160fdb6b853f625bc7f2):
    ``determine_parallel_config`` takes ``num_cores_nhw = closest_divisor_with_padding(Mt, cores)`` cores
    filling the grid's rows; the rows padded to whole tiles per core give ``per_core_out_matrix_height_ntile``;
    the whole of N per core; ``determine_per_core_conv_block_config`` sets ``act_block_h_ntiles`` to the
    per-core height (no override), ``act_block_w_ntiles`` to a filter row's window and the sub-block by
    ``ttnn_subblock``. (With no ``shard_layout`` ttnn chooses the layout itself by its L1 estimate; the model
    does not reproduce that choice, so this default names the height-sharded layout.)"""
    conv = analyse_convolution(problem.program)
    mt, nt = problem.tiles(conv.m_dim), problem.tiles(conv.n_dim)
    gx, gy = hw.grid.columns, hw.grid.rows
    cores = closest_divisor_with_padding(mt, gx * gy)
    per_core_m = -(-mt // cores)
    block = ttnn_subblock(problem, per_core_m, nt)
    return TtnnConv2dConfig(
        act_block_h_override=32 * per_core_m,
        memory=ConvSharding(
            shard_layout="HEIGHT_SHARDED",
            compute_with_storage_grid_size=(min(gx, cores), -(-cores // gx)),
            num_cores_nhw=cores,
            per_core_out_matrix_height_ntile=per_core_m,
            per_core_out_matrix_width_ntile=nt,
            act_block_w_ntiles=problem.tiles(conv.window_dim),
            out_subblock_h_ntiles=block[0],
            out_subblock_w_ntiles=block[1],
        ),
    )


def default_conv(hw: HardwareSpec, problem: Problem) -> tuple[TtnnConfig, Evaluated]:
    """``TtnnOp.default``: ``default_height_sharded`` and its evaluation."""
    cfg = default_height_sharded(hw, problem)
    return cfg, evaluate_conv_config(hw, problem, cfg)


def exported_conv_config(problem: Problem, name: str, args: dict[str, object]) -> TtnnConfig:
    """``ProgramConfigs.exported``: the resolved config ``ttnn.py``'s ``equivalent`` writes (``name`` is
    ``Conv2dConfig``; ``args`` its resolved fields)."""
    if name != CONFIG_CLASS:
        raise ConfigError(f"the conv2d op takes a {CONFIG_CLASS}, not a {name}")
    return parse_conv_config(args, "exported config")


def parse_conv(raw: object, origin: str) -> TtnnConfig:
    """``ProgramConfigs.parse``."""
    return parse_conv_config(raw, origin)


def captured_conv(hw: HardwareSpec, problem: Problem, call: CapturedCall) -> tuple[TtnnConfig | None, Evaluated]:
    """``TtnnOp.captured``: the config the row ran (its parallelization and block configs), evaluated."""
    if call.config is None:
        raise ConfigError("a conv2d row without its parallelization and block configs is not predicted")
    return call.config, evaluate_conv_config(hw, problem, call.config)
