"""ttnn's group norm as the model reads and costs it: the split a ``GroupNormDeviceOperation`` ran
(``GroupNormConfig``), read from its profiler row (``read_group_norm``), costed on the shipped ``groupnorm``
kernel (``evaluate_group_norm``).

ttnn normalises one group at a time (``ttnn/cpp/ttnn/operations/normalization/groupnorm/device/kernels/compute/
groupnorm_sharded_v2.cpp`` and ``groupnorm.cpp``): for each of a core's groups it masks the tile columns the
group spans (``input_mask``, one tile per group), reduces them to a partial mean, gathers the partials over
the cores that share the group's rows (one multicast group), centres, masks and squares, reduces and gathers
again, then scales and shifts. The kernel's row of a group is therefore its spatial rows times the tile
columns it spans (``E = rows * span``, in tiles of 32 rows of one tile column), split over the cores of its
multicast group, and the groups of a core run one after another.

The cores (``E_cores``, each ``per_core_E`` tiles of a group), the groups each core runs one after another
(``groups_per_core``) and the blocks a group's rows are cut into (``num_out_blocks``):

* ``GroupNormShardedMultiCoreProgramConfig`` (``groupnorm_sharded_program_factory.cpp`` @0175ec7b): the
  input's shard is ``h`` rows by ``w`` channels (``output_mem_config``'s shard shape); height-sharded ``w = C``;
  a core holds ``w / (C / G)`` groups; ``E_cores = HW / h``; ``per_core_E = h / 32 * span(w)``; one block;
* ``GroupNormMultiCoreProgramConfig`` on interleaved tensors (``groupnorm_mcast_program_factory.cpp``
  @003544fc): ``num_virtual_cols`` = the largest ``v <= min(grid_x, G)`` with ``(C / v) % 32 == 0`` and
  ``G % v == 0``; ``num_virtual_rows = (grid_x / v) * grid_y``; a core holds ``C / v`` channels, ``G / v``
  groups, ``Ht / num_virtual_rows`` tile rows; ``E_cores = num_virtual_rows``; its ``num_out_blocks`` (the
  factory's heuristic when ``-1``) cuts a group's rows into that many blocks, each read from DRAM again.

The model costs one multicast group's work on ``G = 1`` group of ``E = E_cores * per_core_E / num_out_blocks``
tile rows (``E@xy``, the candidate whose partials gather to the first core and are multicast back),
repeated ``groups_per_core * num_out_blocks`` times one after another (``ingest.repeated_cycles``: the launch
and fill once). Every multicast group runs the same work at once, so the latency is one group's; each block
pays its own gathers (ttnn gathers once per group: an overestimate of that term). ``span(w)`` is the most
tile columns one group's channels cover within ``w`` (ttnn's ``find_max_tile_span``).

**The sharded kernel scales and shifts once a shard** (``groupnorm_sharded_v2.cpp`` @
ccc20cfb19827414099acad1fc531b044b5dfba0): its groups' loop only normalises, adding each group into the
output tiles the groups share; after the loop, ``* gamma`` (``mul_tiles_bcast_rows``) and ``+ beta``
(``add_tiles_bcast_rows``) run once over the core's whole shard, ``per_core_M * per_core_N`` tiles (``S =
h / 32 * ceil(w / 32)``), each tile acquiring the registers and packing. The interleaved kernel
(``groupnorm.cpp`` @ b011ee5c07c90a56bcf9bfff6b421ed3189e2e44) does scale and shift inside each group's
last pass, over the group's ``block_w`` tiles, as the model's program does. The model's repeated group
charges ``a`` cycles a tile (``affine_tile_cycles``: each op's cycles at least its unpack, a pack and an
acquire, as ``work.passes`` charges them) on each of the ``per_core_E`` tiles of every one of the
``groups_per_core`` repeats, so for the sharded split one repeat's ``compute`` gives back

    d = per_core_E * a - ceil(S * a / groups_per_core)

(``affine_overcount_cycles``): the ``groups_per_core * per_core_E`` tiles the groups span become the
shard's ``S``. Where a core's groups are narrower than a tile (``groups_per_core * span > ceil(w / 32)``)
that is most of the scale-and-shift cost: OFT's ``(6144, 32)`` shard of 8 groups of 4 channels scales 192
tiles, not ``8 * 192``. The sharded input is in L1, so a block's step is its compute: the latency falls
by ``d``; where ``data_movement`` is not 0 the steady state is held by data movement, and ``d`` moves from
``compute`` to ``data_movement`` (the latency kept).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from loom_explorer.families.row_reduction.program import analyse_row_reduction
from loom_explorer.families.row_reduction.work import fpu_op_cycles, unpack_bound
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping import enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.problem import KernelTarget, Placement, Problem
from loom_explorer.program import Eltwise
from loom_explorer.targets.ttnn.evaluate import ConfigError, Evaluated, check_grid, evaluate_values

TILE = 32
SHARDED_CONFIG: Final = "GroupNormShardedMultiCoreProgramConfig"
INTERLEAVED_CONFIG: Final = "GroupNormMultiCoreProgramConfig"
STREAM_DEPTH = 2  # the mask, gamma and beta circular buffers hold two blocks (the factories' "* 2")


def tile_span(channels: int, group_channels: int) -> int:
    """The most tile columns one group of ``group_channels`` covers within ``channels`` (groups laid out from
    channel 0): ttnn's ``find_max_tile_span``."""
    return max((start + group_channels - 1) // TILE - start // TILE + 1 for start in range(0, channels, group_channels))


class GroupNormConfig(BaseModel):
    """The split a group norm ran (module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    program_config: Literal["GroupNormShardedMultiCoreProgramConfig", "GroupNormMultiCoreProgramConfig"]
    compute_with_storage_grid_size: tuple[int, int]
    num_groups: int = Field(ge=1)
    e_cores: int = Field(ge=1)  # cores sharing a group's rows (one multicast group)
    per_core_E: int = Field(ge=1)  # a core's tiles of one group (rows x span), all blocks
    groups_per_core: int = Field(ge=1)
    num_out_blocks: int = Field(ge=1)
    sharded: bool  # the input and output live in L1 (a core's shard), else DRAM-interleaved
    shard_tiles: int | None = Field(default=None, ge=1)  # sharded: the shard's tiles, scaled and shifted once

    @property
    def repeats(self) -> int:
        """Blocks of one group, and groups, one core runs one after another."""
        return self.groups_per_core * self.num_out_blocks

    @property
    def block_tiles(self) -> int:
        """A core's tiles of one block of one group."""
        return -(-self.per_core_E // self.num_out_blocks)

    @property
    def model_shape(self) -> dict[str, int]:
        """The shipped kernel's shape the model costs: one group, one block of it over ``e_cores`` cores."""
        return {"G": 1, "E": self.e_cores * self.block_tiles * TILE}

    @property
    def packed_grid(self) -> tuple[int, int]:
        gx = self.compute_with_storage_grid_size[0]
        return (gx, math.ceil(self.e_cores / gx)) if self.e_cores > gx else (self.e_cores, 1)

    # what the core reads of a config (``targets/ttnn/config.py::TtnnConfig``)

    def ttnn_call(self) -> str | None:
        return "ttnn.group_norm"

    def ttnn_class(self) -> str | None:
        return f"ttnn.{self.program_config}"

    def ttnn_arguments(self) -> dict[str, object]:
        return self.model_dump(mode="json")

    def ttnn_lines(self) -> list[str]:
        return [
            f"# {self.num_groups} groups: {self.groups_per_core} a core, each over {self.e_cores} cores of "
            f"{self.per_core_E} tiles in {self.num_out_blocks} block(s)"
        ]

    def read_with(self) -> dict[str, Mapping[str, object]]:
        return {}

    def placements(self) -> dict[str, Placement]:
        return {"x": Placement.l1_width, "y": Placement.l1_width} if self.sharded else {}


def sharded_config(
    grid: tuple[int, int], rows: int, channels: int, groups: int, shard: tuple[int, int]
) -> GroupNormConfig:
    """The split of a sharded group norm of ``rows`` x ``channels`` in shards of ``shard`` (rows, channels)."""
    shard_rows, shard_channels = shard
    group_channels = channels // groups
    if shard_rows % TILE or shard_channels % group_channels:
        raise ConfigError(
            f"shard {list(shard)}: rows a multiple of {TILE} and whole groups of {group_channels} channels"
        )
    return GroupNormConfig(
        program_config=SHARDED_CONFIG,
        compute_with_storage_grid_size=grid,
        num_groups=groups,
        e_cores=-(-rows // shard_rows),
        per_core_E=shard_rows // TILE * tile_span(shard_channels, group_channels),
        groups_per_core=shard_channels // group_channels,
        num_out_blocks=1,
        sharded=True,
        shard_tiles=shard_rows // TILE * -(-shard_channels // TILE),
    )


def interleaved_config(
    grid: tuple[int, int], rows: int, channels: int, groups: int, num_out_blocks: int
) -> GroupNormConfig:
    """The split of an interleaved group norm of ``rows`` x ``channels`` (module docstring); a
    ``num_out_blocks`` of -1 is the factory's heuristic."""
    gx, gy = grid
    cols = min(gx, groups)
    while cols > 1 and ((channels // cols) % TILE or groups % cols):
        cols -= 1
    virtual_rows = (gx // cols) * gy
    tile_rows = -(-rows // TILE)
    per_core_rows = tile_rows // virtual_rows
    if per_core_rows < 1:
        raise ConfigError(f"{tile_rows} tile rows cannot be split over {virtual_rows} rows of cores")
    if num_out_blocks < 1:
        heuristic = max(1, rows * channels // (256 * 256 * cols * virtual_rows))
        num_out_blocks = 1
        while num_out_blocks < heuristic and num_out_blocks < 256:
            num_out_blocks <<= 1
    core_channels = channels // cols
    return GroupNormConfig(
        program_config=INTERLEAVED_CONFIG,
        compute_with_storage_grid_size=grid,
        num_groups=groups,
        e_cores=virtual_rows,
        per_core_E=per_core_rows * tile_span(core_channels, channels // groups),
        groups_per_core=max(1, groups // cols),
        num_out_blocks=num_out_blocks,
        sharded=False,
    )


_GRID = re.compile(r"compute_with_storage_grid_size=\(x=(\d+);y=(\d+)\)|compute_with_storage_grid_size=(\d+)-(\d+)")
_SHARD_SHAPE = re.compile(r"shard_spec=ShardSpec\(.*?shape=\{(\d+); *(\d+)\}")
_OUT_BLOCKS = re.compile(r"num_out_blocks=(-?\d+)")


def config_of(program_config: str, output_mem_config: str, rows: int, channels: int, groups: int) -> GroupNormConfig:
    """The split of a group norm whose ATTRIBUTES give ``program_config`` and ``output_mem_config``; ConfigError
    naming what does not read."""
    m = _GRID.search(program_config)
    if m is None:
        raise ConfigError(f"program_config {program_config[:60]!r}: no compute_with_storage_grid_size")
    grid = (int(m.group(1) or m.group(3)), int(m.group(2) or m.group(4)))
    if program_config.startswith(SHARDED_CONFIG):
        shard = _SHARD_SHAPE.search(output_mem_config)
        if shard is None:
            raise ConfigError("a sharded group norm whose output_mem_config gives no shard shape")
        return sharded_config(grid, rows, channels, groups, (int(shard.group(1)), int(shard.group(2))))
    if program_config.startswith(INTERLEAVED_CONFIG):
        blocks = _OUT_BLOCKS.search(program_config)
        return interleaved_config(grid, rows, channels, groups, int(blocks.group(1)) if blocks else -1)
    raise ConfigError(f"program_config {program_config[:60]!r} is not a group norm config the model reads")


def evaluate_group_norm(hw: HardwareSpec, problem: Problem, cfg: GroupNormConfig) -> Evaluated:
    """The referee's evaluation of one block of one group on ``cfg``'s multicast group (module docstring): the
    candidate ``E@xy`` reading mask, gamma, beta and eps from DRAM, one block at a time (``block_h = 1``), the
    input held whole (``x_buffer_depth = 1``), the others double-buffered."""
    check_grid(hw, cfg.compute_with_storage_grid_size)
    if problem.program.name != "groupnorm" or dict(problem.shape) != cfg.model_shape:
        raise ConfigError(f"a group norm split costs the groupnorm kernel at {cfg.model_shape}")
    wanted = "E@xy|x=local," if cfg.sharded else "E@xy|x=dram,"
    name = wanted + "mask=dram,gamma=dram,beta=dram,eps=dram"
    candidate = next((c for c in enumerate_candidates(problem) if c.name == name), None)
    if candidate is None:
        raise ConfigError(f"the model has no candidate {name} for {problem.program.name} {cfg.model_shape}")
    schedule = build_schedule(hw, problem, candidate)
    gx, gy = cfg.packed_grid
    values = {"grid_x": gx, "grid_y": gy, "per_core_E": cfg.block_tiles, "block_h": 1, "x_buffer_depth": 1}
    values |= {f"{t}_buffer_depth": STREAM_DEPTH for t in ("mask", "gamma", "beta")}
    evaluated = evaluate_values(schedule, {p: values[p] for p in schedule.param_names})
    return affine_once_a_shard(evaluated, affine_overcount_cycles(hw, problem, cfg))


AFFINE_OPERANDS = ("gamma", "beta")  # the shipped groupnorm program's scale and shift


def affine_tile_cycles(hw: HardwareSpec, problem: Problem) -> int:
    """``a``: the cycles a tile of TTNN's ``* gamma`` and ``+ beta`` as ``work.passes`` charges them (module
    docstring): each op at least its unpack (its source and operand tiles), a pack and an acquire of the
    registers (``compute.subblock_overhead_cycles``; the group norm acquires per tile)."""
    st = analyse_row_reduction(problem.program)
    c = hw.compute
    total = 0
    for p in st.passes:
        for op in p.ops:
            if isinstance(op, Eltwise) and op.operand in AFFINE_OPERANDS:
                cycles = fpu_op_cycles(hw, problem, op)
                total += unpack_bound(hw, problem, cycles, [op.source or p.tensor, op.operand])
                total += c.tile_pack_cycles + c.subblock_overhead_cycles
    return total


def affine_overcount_cycles(hw: HardwareSpec, problem: Problem, cfg: GroupNormConfig) -> int:
    """``d = per_core_E * a - ceil(S * a / groups_per_core)``: one repeat's scale-and-shift cycles the
    sharded kernel does not spend (module docstring); 0 for the interleaved split or the TT-Lang target."""
    if cfg.shard_tiles is None or problem.target is not KernelTarget.ttnn:
        return 0
    a = affine_tile_cycles(hw, problem)
    return max(0, cfg.block_tiles * a - -(-cfg.shard_tiles * a // cfg.repeats))


def affine_once_a_shard(evaluated: Evaluated, overcount_cycles: int) -> Evaluated:
    """``evaluated`` with ``overcount_cycles`` taken from ``compute`` (module docstring): off the latency when
    the block is compute-bound (``data_movement`` 0), else moved to ``data_movement``."""
    solution = evaluated.result.solution
    if solution is None or overcount_cycles <= 0:
        return evaluated
    terms = dict(solution.breakdown)
    taken = min(overcount_cycles, terms["compute"])
    terms["compute"] -= taken
    if terms.get("data_movement", 0) > 0:
        terms["data_movement"] += taken
        latency = solution.latency_cycles
    else:
        latency = solution.latency_cycles - taken
    breakdown = tuple((name, terms[name]) for name, _ in solution.breakdown)
    fixed = dataclasses.replace(solution, latency_cycles=latency, breakdown=breakdown)
    return dataclasses.replace(evaluated, result=dataclasses.replace(evaluated.result, solution=fixed))
