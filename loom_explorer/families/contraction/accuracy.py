"""The matmul rows of a device-profiler report, the error-table family of the ``gemm`` kernel and its
published measurements (``published_runs.PUBLISHED``) (``accuracy/op_mapping.py``: ``ACCURACY`` plugs into
``loom_explorer.accuracy_ops``).

``Matmul`` / ``MatmulDeviceOperation`` / ``MinimalMatmulOp`` rows are this family's; ``read_matmul`` reads
their shapes, formats and program config as ``accuracy/ingest.py``'s docstring says. The published matmul
timings (``matmul`` in ``model_error.csv``) speak for the ``gemm`` kernel only (a batched or fused matmul has
none).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from loom_explorer.accuracy.capture import (
    NO_VALUE,
    OpReading,
    ProfilerRow,
    RowSkip,
    attributes_of,
    core_grid,
    flag,
    fused_activation,
    parse_struct,
    tensor_format,
    tensor_memory,
    whole_or_none,
)
from loom_explorer.accuracy.op_mapping import AccuracyOps
from loom_explorer.families.contraction.published import ERROR_FAMILY, KERNEL
from loom_explorer.families.contraction.published_runs import PUBLISHED
from loom_explorer.families.contraction.shard_config import ShardSkip, derived_config
from loom_explorer.families.contraction.ttnn_config import MEMORY, TtnnMatmulConfig, parse_config
from loom_explorer.families.contraction.ttnn_mapping import ONE_D, TWO_D
from loom_explorer.problem import Placement
from loom_explorer.targets.ttnn.evaluate import ConfigError

MATMUL_OP_CODES = frozenset({"matmul", "matmuldeviceoperation", "minimalmatmulop"})
MAPPED_CONFIGS = ("MatmulMultiCoreReuseMultiCastProgramConfig", "MatmulMultiCoreReuseMultiCast1DProgramConfig")


def error_family(kernel: str, shape: Mapping[str, int]) -> str | None:
    """``matmul`` for the ``gemm`` kernel, None for any other."""
    return ERROR_FAMILY if kernel == KERNEL else None


def _no_config(
    attrs: dict[str, str],
    memory: dict[str, str],
    compute: dict[str, object],
    tiles: tuple[int, int, int],
    in0_made: str = "",
    in1_batched: bool = False,
) -> tuple[_MatmulSource, bool, str | None]:
    """``_matmul_config`` of a call without a program config: ``None`` (ttnn's auto-config) with every operand
    interleaved, the config ttnn derives from in0's shard spec (``shard_config.py``; ``in0_made``: in0's
    memory config as the op that made it printed it) with in0 sharded."""
    activation = fused_activation(attrs.get("user_fused_activation", ""))
    sharded = sorted(t for t, m in memory.items() if m not in ("DRAM", "L1_INTERLEAVED"))
    if not sharded:
        return None, False, activation
    if memory.get("in0", "DRAM") in ("DRAM", "L1_INTERLEAVED"):
        raise RowSkip(
            f"no program_config with {', '.join(sharded)} sharded and in0 interleaved: ttnn's pick for a "
            "sharded output or in1 (create_simple_matmul_program_config) is not modelled"
        )
    try:
        raw = derived_config(
            memory,
            attrs.get("output_mem_config", ""),
            tiles,
            bool(flag(attrs.get("user_run_batched", ""))),
            bool(compute.get("fp32_dest_acc_en")),
            user_grid=core_grid(attrs.get("user_core_coord", "")),
            in0_mem_config=in0_made,
            in1_batched=in1_batched,
        )
        cfg = parse_config({**raw, "memory": memory, "compute": compute}, "derived program_config")
    except (ShardSkip, ConfigError) as exc:
        raise RowSkip(str(exc)) from None
    return cfg, True, activation


@dataclass(frozen=True, slots=True)
class _MinimalBlocks:
    """A ``MinimalMatmulConfig`` (``ttnn.experimental.minimal_matmul``): blocks of tiles and the grid; the
    per-core extents follow from the shape (``_minimal_as_2d``)."""

    m_block: int
    k_block: int
    n_block: int
    subblock_h: int
    subblock_w: int
    grid: tuple[int, int]


_MatmulSource = TtnnMatmulConfig | _MinimalBlocks | None  # None: no program config (ttnn picks one)


def _matmul_config(
    attrs: dict[str, str],
    memory: dict[str, str],
    compute: dict[str, object],
    tiles: tuple[int, int, int],
    in0_made: str = "",
    in1_batched: bool = False,
) -> tuple[_MatmulSource, bool, str | None]:
    """(config, fuse_batch, fused activation) from ATTRIBUTES' ``program_config`` (``Matmul``) or ``config``
    (``MinimalMatmulOp``); no config at all is ``None`` (ttnn's auto-config, predicted as ttnn picks it), or,
    in0 sharded, the config ttnn derives from its shard spec (``shard_config.py``; ``tiles``: Mt with in0's
    batch folded in, Kt, Nt; ``in0_made`` and ``in1_batched`` as ``_no_config``'s)."""
    text = attrs.get("program_config", "")
    if text.lower() in NO_VALUE and attrs.get("config", "").lower() not in NO_VALUE:
        text = attrs["config"]
    if text.lower() in NO_VALUE:
        return _no_config(attrs, memory, compute, tiles, in0_made, in1_batched)
    parsed = parse_struct(text)
    if parsed is None:
        raise RowSkip(f"program_config {text[:80]!r} is not a readable config")
    name, f = parsed
    grid = core_grid(f.get("compute_with_storage_grid_size", ""))
    if name == "MinimalMatmulConfig":
        blocks = [
            whole_or_none(f.get(k, ""))
            for k in ("M_block_size", "K_block_size", "N_block_size", "subblock_h", "subblock_w")
        ]
        if grid is None or not all(blocks):
            raise RowSkip(f"MinimalMatmulConfig {text[:120]!r} lacks a block size or a readable grid")
        mb, kb, nb, sh, sw = (int(b) for b in blocks if b)
        return _MinimalBlocks(mb, kb, nb, sh, sw, grid), False, fused_activation(attrs.get("fused_activation", ""))
    if name not in MAPPED_CONFIGS:
        raise RowSkip(f"program config {name} is not one the model maps ({' or '.join(MAPPED_CONFIGS)})")
    if flag(f.get("gather_in0", "")):
        raise RowSkip(f"{name} with gather_in0=1 (ring all-gather matmul) is not what the model maps")
    if grid is None:
        raise RowSkip(f"compute_with_storage_grid_size {f.get('compute_with_storage_grid_size', '')!r} is not readable")
    raw: dict[str, object] = {
        "program_config": name,
        "compute_with_storage_grid_size": grid,
        "memory": memory,
        "compute": compute,
    }
    for key in (
        "in0_block_w",
        "per_core_M",
        "per_core_N",
        "out_block_h",
        "out_block_w",
        "out_subblock_h",
        "out_subblock_w",
    ):
        if whole_or_none(f.get(key, "")) is not None:
            raw[key] = whole_or_none(f[key])
    for key in ("transpose_mcast", "mcast_in0", "fuse_batch"):
        if flag(f.get(key, "")) is not None:
            raw[key] = flag(f[key])
    try:
        cfg = parse_config(raw, "program_config")
    except ConfigError as exc:
        raise RowSkip(str(exc)) from None
    return cfg, bool(flag(f.get("fuse_batch", ""))), fused_activation(f.get("fused_activation", ""))


def _minimal_as_2d(
    blocks: _MinimalBlocks, mt: int, nt: int, memory: dict[str, str], compute: dict[str, object]
) -> TtnnMatmulConfig:
    """The 2-D multicast config that runs what ``minimal_matmul`` runs (tt-metal
    ``ttnn/cpp/ttnn/operations/experimental/minimal_matmul/device/minimal_matmul_program_factory.cpp``):
    M is split over the grid's rows and N over its columns, in0 enters at the left column and travels along
    each row, in1 enters at the top row and travels down each column (``M@y,N@x|in0=mcast_x,in1=mcast_y``);
    each core owns ``ceil(ceil(Mt/M_block)/grid_y)`` blocks of ``M_block`` tiles by
    ``ceil(ceil(Nt/N_block)/grid_x)`` of ``N_block`` (padded blocks computed whole), works one
    ``M_block x N_block`` output block at a time with ``K_block``-tile steps of K and the config's sub-blocks."""
    gx, gy = blocks.grid
    per_core_m = math.ceil(math.ceil(mt / blocks.m_block) / gy) * blocks.m_block
    per_core_n = math.ceil(math.ceil(nt / blocks.n_block) / gx) * blocks.n_block
    layout: dict[str, object] = {"program_config": TWO_D, "compute_with_storage_grid_size": blocks.grid}
    if per_core_m >= mt:  # one row of cores has work: in0 along it, in1 from DRAM (the 1-D in0 multicast)
        layout = {"program_config": ONE_D, "compute_with_storage_grid_size": (gx, 1), "mcast_in0": True}
    elif per_core_n >= nt:  # one column has work: in1 down it, in0 from DRAM (the 1-D in1 multicast)
        layout = {"program_config": ONE_D, "compute_with_storage_grid_size": (1, gy), "mcast_in0": False}
    return TtnnMatmulConfig.model_validate(
        {
            **layout,
            "in0_block_w": blocks.k_block,
            "per_core_M": per_core_m,
            "per_core_N": per_core_n,
            "out_block_h": blocks.m_block,
            "out_block_w": blocks.n_block,
            "out_subblock_h": blocks.subblock_h,
            "out_subblock_w": blocks.subblock_w,
            "memory": memory,
            "compute": compute,
        }
    )


@lru_cache(maxsize=4096)
def _cached_matmul_config(
    text: str, memory: tuple[tuple[str, str], ...], tiles: tuple[int, int, int], in0_made: str, in1_batched: bool
) -> tuple[_MatmulSource, bool, str | None] | str:
    """``_matmul_config`` of ATTRIBUTES ``text`` once per distinct (text, memory, tiles, in0_made,
    in1_batched); a skip as its reason."""
    attrs, compute = attributes_of(text)
    try:
        return _matmul_config(attrs, dict(memory), compute, tiles, in0_made, in1_batched)
    except RowSkip as why:
        return str(why)


def read_matmul(row: ProfilerRow, attributes: str, attrs: dict[str, str], compute: dict[str, object]) -> OpReading:
    """What a matmul row says of its op (module docstring of ``accuracy/ingest.py``); RowSkip otherwise."""
    a, b = row.shape("INPUT_0"), row.shape("INPUT_1")
    if a is None or b is None:
        raise RowSkip("a matmul needs the shapes of INPUT_0 and INPUT_1")
    m, k = (a[3], a[2]) if flag(attrs.get("transpose_a", "")) else (a[2], a[3])
    k1, n = (b[3], b[2]) if flag(attrs.get("transpose_b", "")) else (b[2], b[3])
    if k != k1:
        raise RowSkip(f"in0 has K={k} but in1 has K={k1}")
    notes: list[str] = []
    bias = row.shape("INPUT_2") is not None
    tensors = {"in0": "INPUT_0", "in1": "INPUT_1", "out": "OUTPUT_0", **({"bias": "INPUT_2"} if bias else {})}
    memory = {t: tensor_memory(row, col, notes) for t, col in tensors.items()}
    dtype = tensor_format(row, "INPUT_0")
    formats = {t: tensor_format(row, col, dtype) for t, col in tensors.items()}
    mkn_tiles = (a[0] * a[1] * math.ceil(m / 32), math.ceil(k / 32), math.ceil(n / 32))  # batch folded, padded
    # in0's shard spec, when in0 is sharded, as the op before this one printed it (``ProfilerRow.prior_output``)
    prior = row.prior_output("INPUT_0") if memory["in0"] not in ("DRAM", "L1_INTERLEAVED") else None
    in0_made = prior.memory_config() if prior else ""
    config = _cached_matmul_config(attributes, tuple(sorted(memory.items())), mkn_tiles, in0_made, b[0] * b[1] > 1)
    if isinstance(config, str):
        raise RowSkip(config)
    source, fuse_batch, activation = config
    batch, in1_batch = a[0] * a[1], b[0] * b[1]
    padded: dict[str, int] = {}
    repeats = 1
    run_grid = (
        source.grid if isinstance(source, _MinimalBlocks) else source.compute_with_storage_grid_size if source else None
    )
    if isinstance(source, _MinimalBlocks):
        blocks = {"M": source.m_block, "K": source.k_block, "N": source.n_block}
        tiles = {d: math.ceil(e / 32) for d, e in (("M", batch * m), ("K", k), ("N", n))}
        padded = {d: 32 * blocks[d] * math.ceil(t / blocks[d]) for d, t in tiles.items()}
        source = _minimal_as_2d(source, padded["M"] // 32, padded["N"] // 32, memory, compute)
        fuse_batch = True  # minimal_matmul flattens in0 to [M, K]
        notes.append(
            "MinimalMatmulOp costed as the multicast matmul with its blocks (M over rows, N over "
            "columns, in0 along rows, in1 down columns)"
        )
    elif source is None:
        fuse_batch = True  # ttnn's auto-config folds an unbatched in1's batch into M
        notes.append("no program_config: predicted with the config ttnn picks (matmul auto-config)")
    elif all(attrs.get(key, "").lower() in NO_VALUE for key in ("program_config", "config")):
        notes.append("no program_config: predicted with the config ttnn derives from in0's shard spec")
    cfg = source
    shape = {"M": m, "K": k, "N": n, **({"batch": max(batch, in1_batch)} if max(batch, in1_batch) > 1 else {})}
    model_shape: dict[str, int] | None = {"M": m, "K": k, "N": n}
    if batch > 1 and in1_batch == 1 and fuse_batch:
        model_shape = {"M": batch * m, "K": k, "N": n}
        notes.append(f"batch {batch} folded into M={batch * m} (fuse_batch)")
    elif batch > 1 or in1_batch > 1:
        if 1 not in (batch, in1_batch) and batch != in1_batch:
            model_shape = None
            notes.append(f"not predicted: in0 batch {batch} and in1 batch {in1_batch} do not pair up")
        else:
            repeats = max(batch, in1_batch)
            notes.append(
                f"batch {repeats} (in0 {batch}, in1 {in1_batch}): costed as {repeats} matmuls of one batch "
                "one after another on the same cores, the launch and pipeline fill paid once (the kernels' "
                "batch loop)"
            )
    if model_shape and padded and padded != model_shape:
        notes.append(
            "padded to whole blocks as minimal_matmul computes them: " + ",".join(f"{d}={e}" for d, e in padded.items())
        )
        model_shape = padded
    return OpReading(
        kernel=KERNEL,
        shape=shape,
        model_shape=model_shape,
        dtype=dtype,
        formats=formats,
        config=cfg,
        grid=run_grid,
        bias=bias,
        activation=activation,
        batch_repeats=repeats,
        fp32_acc=bool(compute.get("fp32_dest_acc_en")),
        note="; ".join(notes),
        placements={t: MEMORY[m] for t, m in memory.items() if MEMORY[m] is not Placement.dram} if cfg is None else {},
    )


ACCURACY = AccuracyOps(
    name="contraction",
    op_codes=MATMUL_OP_CODES,
    kernels=(KERNEL,),
    error_family=error_family,
    read_configured=read_matmul,
    op_words=("matmul",),
    published=PUBLISHED,
    ops_phrase="matmul",
    unmapped_variant="a matmul variant the model does not map (only Matmul[DeviceOperation], MinimalMatmulOp)",
)
