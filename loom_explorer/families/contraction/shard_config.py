"""The program config ttnn derives for a matmul called without one whose in0 is L1-sharded, read from what a
profiler row prints (``accuracy.py``: ``read_matmul``).

ttnn (``ttnn/cpp/ttnn/operations/matmul/device/config/matmul_program_config.cpp`` @001cea9a):
``get_program_config`` takes the call's config, else ``generate_matmul_program_config``, which, with no
``user_core_coord`` and in0 sharded, calls ``get_matmul_program_config`` (``matmul = !user_run_batched``).
For a matmul (in1 must be interleaved), with the shard grid's bounding box as the config's grid, Mt the
rows of in0 with its batch folded in, and in0's shard of ``h x w`` tiles:

* in0 HEIGHT_SHARDED on more than one core: the 1-D config multicasting in1 (``mcast_in0 = false``),
  ``per_core_M = h``, ``per_core_N = Nt``, ``in0_block_w = Kt``;
* in0 WIDTH_SHARDED on more than one core: the 1-D config multicasting in0, ``per_core_M = Mt``,
  ``per_core_N = ceil(Nt / cores)``, ``in0_block_w = gcd(w, Kt)``;
* in0 BLOCK_SHARDED on a grid of more than one row and column: the 2-D config, ``transpose_mcast`` when the
  shard orientation is ``COL_MAJOR`` (the grid's axes then swap: ``virtual_x, virtual_y``),
  ``per_core_M = ceil(Mt / virtual_y)``, ``per_core_N = ceil(Nt / virtual_x)``, ``in0_block_w = gcd(w, Kt)``
  when ``virtual_x`` shards cover K exactly (``virtual_x = Kt / w``), else 1;

then the output block: the whole per-core block when the circular buffers fit L1
(``get_multi_dim_per_core_factor``; the model reports an L1 overflow otherwise rather than search the smaller
blocks), and the sub-block of ``get_matmul_subblock_params``: the first of ttnn's order (``SUBBLOCK_ORDER``,
at most 4 tiles with fp32 accumulation) dividing the block, and with a sharded output also one tile high and
the whole ``per_core_N`` wide, ``1 x 1`` when none is.

A call that gives a ``user_core_coord`` does not reach ``get_matmul_program_config``:
``generate_matmul_program_config`` then takes ``create_matmul_program_config`` on the user's grid, whose
blocks for a sharded in0 come from in0's shard shape (block-sharded: ``per_core_M = h``,
``per_core_N = Nt * w / Kt``, ``in0_block_w = gcd(w, Kt)``; else the 1-D systolic config) and whose
sub-block is ``get_subblock_sizes``'s, not the one above (``user_grid_config``; read from
``ttnn/cpp/ttnn/operations/matmul/device/matmul_op.cpp`` @b036d0fa, the code of the reports without
``nd_shard_spec``). A block-sharded in0's shard shape is printed only by the op that made in0 (an
``InterleavedToSharded`` or ``Reshard`` row before it), never on the matmul's own row: ``read_matmul`` takes
it from the op before the matmul on the same device when that op's output has in0's shape and memory
(``ProfilerRow.prior_output``), and refuses the call (``ShardSkip``) otherwise. Those older reports print
no shard spec for the output either (``shard_spec=std::nullopt``): a height-sharded in0's spec from the op
before then gives the output's (``h x Nt`` tiles on in0's grid) for the derivation below.

The report prints an operand's memory layout (``INPUT_0_MEMORY``) but not its shard spec; it prints the
output's (ATTRIBUTES ``output_mem_config``). With a sharded output the factories write each core's output
block into that core's shard, so the output is sharded over the cores that compute, with the layout of in0
(a requirement of ``get_matmul_program_config``) and a shard of ``per_core_M x per_core_N`` tiles; in0's
shard is read locally by the same cores (height, block) or split over them (width). So in0's shard is read
from the output's: the same grid and orientation, ``h`` = the output shard's height, ``w = ceil(Kt / cores)``
(width) or ``ceil(Kt / virtual_x)`` (block). A row whose output is not sharded gives no shard spec: it is
refused (``ShardSkip``), as is a batched call (``user_run_batched``: ``MatmulMultiCoreReuseProgramConfig``,
not mapped), an in1 that is not interleaved, or a shard on one core or one line of a block grid (ttnn then
falls back to ``create_matmul_program_config``, not derived here).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from loom_explorer.families.contraction.ttnn_config import SUBBLOCK_ORDER
from loom_explorer.families.contraction.ttnn_mapping import ONE_D, TWO_D

TILE = 32
FP32_ACC_SUBBLOCK_TILES = 4  # get_matmul_subblock_params: at most 4 tiles with fp32_dest_acc_en

_LAYOUT = re.compile(r"memory_layout\s*=\s*(?:\w+::)*(\w+)")
_COORD = r"\(\s*x\s*=\s*(\d+)\s*[;,]\s*y\s*=\s*(\d+)\s*\)"
_RANGE = re.compile(_COORD + r"\s*-\s*" + _COORD)
_SHAPE = re.compile(r"shape\s*=\s*\{\s*(\d+)\s*[;,]\s*(\d+)\s*\}")
_ORIENTATION = re.compile(r"orientation\s*=\s*(?:\w+::)*(\w+)")


class ShardSkip(ValueError):
    """A sharded matmul without a program config whose config the row does not let the model derive."""


@dataclass(frozen=True, slots=True)
class ShardSpec:
    """A tensor's shard spec as ``output_mem_config`` prints it: its layout, the bounding box of its core
    grid (columns, rows), how many cores the grid has, the shard shape in elements, the orientation."""

    layout: str  # HEIGHT_SHARDED, WIDTH_SHARDED or BLOCK_SHARDED
    grid: tuple[int, int]
    cores: int
    shape: tuple[int, int]
    col_major: bool


def read_shard_spec(text: str) -> ShardSpec | None:
    """``MemoryConfig(memory_layout=TensorMemoryLayout::HEIGHT_SHARDED;...;shard_spec=ShardSpec(grid={[(x=0;y=0)
    - (x=10;y=6)]; ...};shape={96; 512};orientation=ShardOrientation::ROW_MAJOR);...)`` -> its ``ShardSpec``;
    None when the config is not sharded or has no readable shard spec."""
    layout = _LAYOUT.search(text)
    if layout is None or not layout.group(1).endswith("_SHARDED") or "shard_spec=ShardSpec" not in text:
        return None
    spec = text[text.index("shard_spec=ShardSpec") :]
    ranges = [tuple(int(g) for g in m.groups()) for m in _RANGE.finditer(spec)]
    shape = _SHAPE.search(spec)
    if not ranges or shape is None:
        return None
    x0, y0 = min(r[0] for r in ranges), min(r[1] for r in ranges)
    x1, y1 = max(r[2] for r in ranges), max(r[3] for r in ranges)
    cores = sum((r[2] - r[0] + 1) * (r[3] - r[1] + 1) for r in ranges)
    orientation = _ORIENTATION.search(spec)
    return ShardSpec(
        layout=layout.group(1),
        grid=(x1 - x0 + 1, y1 - y0 + 1),
        cores=cores,
        shape=(int(shape.group(1)), int(shape.group(2))),
        col_major=orientation is not None and orientation.group(1) == "COL_MAJOR",
    )


def subblock(block_h: int, block_w: int, per_core_n: int, out_sharded: bool, fp32_acc: bool) -> tuple[int, int]:
    """ttnn's ``get_matmul_subblock_params`` (module docstring)."""
    for h, w in SUBBLOCK_ORDER:
        if fp32_acc and h * w > FP32_ACC_SUBBLOCK_TILES:
            continue
        if out_sharded and (w != per_core_n or h != 1):
            continue
        if block_h % h == 0 and block_w % w == 0:
            return h, w
    return 1, 1


def derived_config(
    memory: dict[str, str],
    output_mem_config: str,
    tiles: tuple[int, int, int],
    batched: bool,
    fp32_acc: bool,
    *,
    user_grid: tuple[int, int] | None = None,
    in0_mem_config: str = "",
    in1_batched: bool = False,
) -> dict[str, object]:
    """The raw config (``ttnn_config.parse_config``'s input, without memory and compute) ttnn derives for a
    matmul of ``tiles`` = (Mt with in0's batch folded in, Kt, Nt) whose in0 is sharded (module docstring);
    ``ShardSkip`` with the reason when the row does not let it be derived (``user_grid``: the call's
    ``user_core_coord``; ``in0_mem_config``: in0's memory config as the op that made in0 printed it, ``""``
    when no row prints it; ``in1_batched``: in1 has a batch above 1)."""
    mt, kt, nt = tiles
    in0 = memory.get("in0", "DRAM")
    if user_grid is not None:  # generate_matmul_program_config: create_matmul_program_config, batched or not
        if in1_batched:
            raise ShardSkip(
                "no program_config, in0 sharded, in1 batched and a user_core_coord: ttnn takes "
                "MatmulMultiCoreReuseProgramConfig, which the model does not map"
            )
        return user_grid_config(in0, read_shard_spec(in0_mem_config), user_grid, tiles, fp32_acc)
    if batched:
        raise ShardSkip(
            "no program_config, in0 sharded and user_run_batched: ttnn takes MatmulMultiCoreReuseProgramConfig, "
            "which the model does not map"
        )
    if memory.get("in1", "DRAM") not in ("DRAM", "L1_INTERLEAVED"):
        raise ShardSkip(
            "no program_config with in0 and in1 sharded: ttnn's derived multicast configs need in1 interleaved"
        )
    spec = read_shard_spec(output_mem_config)
    if spec is None and memory.get("out", "DRAM") == in0:
        spec = _in0_as_output(read_shard_spec(in0_mem_config), in0, tiles)
    if spec is None or memory.get("out", "DRAM") != in0:
        raise ShardSkip(
            f"no program_config with in0 {in0.lower()} and the output not sharded alike: ttnn derives the config "
            "from in0's shard spec, which the report prints only for the output (output_mem_config)"
        )
    gx, gy = spec.grid
    out_h, out_w = (math.ceil(e / TILE) for e in spec.shape)
    raw: dict[str, object] = {"compute_with_storage_grid_size": spec.grid}
    if in0 == "L1_HEIGHT_SHARDED" and spec.cores > 1:
        pm, pn = out_h, nt
        raw |= {"program_config": ONE_D, "mcast_in0": False, "in0_block_w": kt}
    elif in0 == "L1_WIDTH_SHARDED" and spec.cores > 1:
        pm, pn = mt, math.ceil(nt / spec.cores)
        raw |= {"program_config": ONE_D, "mcast_in0": True, "in0_block_w": math.gcd(math.ceil(kt / spec.cores), kt)}
    elif in0 == "L1_BLOCK_SHARDED" and gx > 1 and gy > 1:
        vx, vy = (gy, gx) if spec.col_major else (gx, gy)
        w = math.ceil(kt / vx)
        pm, pn = math.ceil(mt / vy), math.ceil(nt / vx)
        exact = kt % w == 0 and vx == kt // w  # cores_along_x_match_grid_size
        ibw = math.gcd(w, kt) if exact else 1
        raw |= {"program_config": TWO_D, "transpose_mcast": spec.col_major, "in0_block_w": ibw}
    else:
        raise ShardSkip(
            f"no program_config with in0 {in0.lower()} on a {gx}x{gy} grid: ttnn falls back to "
            "create_matmul_program_config, which the model does not derive"
        )
    if (out_h, out_w) != (pm, pn):
        raise ShardSkip(
            f"output shard of {out_h}x{out_w} tiles is not the {pm}x{pn} per-core block ttnn derives for in0 "
            f"{in0.lower()}: in0's shard spec cannot be read from the output's"
        )
    sh, sw = subblock(pm, pn, pn, True, fp32_acc)
    return raw | {
        "per_core_M": pm,
        "per_core_N": pn,
        "out_block_h": pm,
        "out_block_w": pn,
        "out_subblock_h": sh,
        "out_subblock_w": sw,
        "fuse_batch": True,
    }


def _in0_as_output(spec: ShardSpec | None, in0: str, tiles: tuple[int, int, int]) -> ShardSpec | None:
    """The output shard spec ``get_matmul_program_config`` gives a height-sharded in0's matmul with a sharded
    output, from in0's own spec (module docstring: the output shard is ``h x Nt`` tiles on in0's grid); None
    for another layout or no spec (the other layouts' output shards are derived the other way round)."""
    if spec is None or in0 != "L1_HEIGHT_SHARDED" or spec.layout != "HEIGHT_SHARDED":
        return None
    return ShardSpec(spec.layout, spec.grid, spec.cores, (spec.shape[0], tiles[2] * TILE), spec.col_major)


def subblock_sizes(block_h: int, block_w: int, fp32_acc: bool) -> tuple[int, int]:
    """``get_subblock_sizes`` (``matmul_op.cpp`` @b036d0fa): ttnn's sub-block order read as (w, h) pairs, the
    first whose h divides ``block_h`` and w ``block_w`` (at most 4 tiles with fp32 accumulation)."""
    for w, h in SUBBLOCK_ORDER:
        if (h * w <= FP32_ACC_SUBBLOCK_TILES or not fp32_acc) and block_h % h == 0 and block_w % w == 0:
            return h, w
    return 1, 1


def user_grid_config(
    in0: str, spec: ShardSpec | None, grid: tuple[int, int], tiles: tuple[int, int, int], fp32_acc: bool
) -> dict[str, object]:
    """``create_matmul_program_config`` (``matmul_op.cpp`` @b036d0fa) of a matmul with in0 sharded, in1 not
    batched and a ``user_core_coord`` ``grid`` (module docstring):

    * in0 BLOCK_SHARDED, with in0's shard of ``h x w`` tiles (``spec``, printed by the op that made in0): the
      2-D config on the user's grid, ``per_core_M = h``, ``per_core_N = max(1, Nt * w // Kt)``,
      ``in0_block_w = gcd(w, Kt)``, ``transpose_mcast`` for a ``COL_MAJOR`` shard, the sub-block of
      ``get_subblock_sizes`` made one tile high unless its width is ``per_core_N``;
    * in0 HEIGHT or WIDTH sharded: ``create_matmul_1d_systolic_array_program_config`` (no shard spec read):
      height-sharded is tall, multicasting in1 (``per_core_M = ceil(Mt / cores)``, ``per_core_N = Nt``),
      width-sharded wide, multicasting in0 (``per_core_M = Mt``, ``per_core_N = ceil(Nt / cores)``);
      ``in0_block_w`` the largest divisor of Kt up to ``ceil(Kt / cores)``; ``get_subblock_sizes``'s
      sub-block.

    ``ShardSkip`` for a block-sharded in0 whose shard spec no row prints."""
    mt, kt, nt = tiles
    gx, gy = grid
    cores = gx * gy
    raw: dict[str, object] = {"compute_with_storage_grid_size": grid}
    if in0 == "L1_BLOCK_SHARDED":
        if spec is None or spec.layout != "BLOCK_SHARDED":
            raise ShardSkip(
                "no program_config, in0 l1_block_sharded and a user_core_coord: ttnn derives the config from "
                "in0's shard shape, which neither this row nor the op before it prints"
            )
        h, w = spec.shape[0] // TILE, spec.shape[1] // TILE
        pm, pn = h, max(1, nt * w // kt)
        sh, sw = subblock_sizes(pm, pn, fp32_acc)
        raw |= {"program_config": TWO_D, "transpose_mcast": spec.col_major, "in0_block_w": math.gcd(w, kt)}
        sh = sh if sw == pn else 1
    else:
        tall = in0 == "L1_HEIGHT_SHARDED"
        pm, pn = (math.ceil(mt / cores), nt) if tall else (mt, math.ceil(nt / cores))
        ibw = math.ceil(kt / cores)
        while kt % ibw:
            ibw -= 1
        sh, sw = subblock_sizes(pm, pn, fp32_acc)
        raw |= {"program_config": ONE_D, "mcast_in0": not tall, "in0_block_w": ibw}
    return raw | {
        "per_core_M": pm,
        "per_core_N": pn,
        "out_block_h": pm,
        "out_block_w": pn,
        "out_subblock_h": sh,
        "out_subblock_w": sw,
        "fuse_batch": True,
    }
