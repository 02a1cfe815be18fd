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


@dataclass(frozen=True, slots=True)
class _MinimalSplit:
    """How ``minimal_matmul`` splits its work (``_minimal_split``): every core of the grid owns
    ``per_core_m x per_core_n`` tiles (padded tiles included), worked in ``m_blocks x n_blocks`` output blocks
    of ``block_h x block_w`` tiles, K in ``k_tiles`` (padded to whole K blocks); ``transposed``: M over the
    grid's columns and N over its rows."""

    m_cores: int
    n_cores: int
    per_core_m: int
    per_core_n: int
    block_h: int
    block_w: int
    k_tiles: int
    transposed: bool

    @property
    def m_tiles(self) -> int:
        """M as every core's share covers it (tiles), padded tiles included."""
        return self.m_cores * self.per_core_m

    @property
    def n_tiles(self) -> int:
        return self.n_cores * self.per_core_n


def _even_blocks(per_core: int, block: int) -> tuple[int, int]:
    """(block side, padded per-core extent): ``ceil(per_core/block)`` blocks, as ttnn loops over them, of
    ``ceil(per_core/blocks)`` tiles each. ttnn's last block is partial (``current_M_block_tiles``); the model
    needs equal blocks, so the blocks are evened out, which keeps their number (the K passes and block
    handshakes) and pads at most ``blocks - 1`` tiles."""
    blocks = math.ceil(per_core / block)
    side = math.ceil(per_core / blocks)
    return side, side * blocks


def _divisor_at_most(side: int, most: int) -> int:
    """The largest divisor of ``side`` not above ``most``: the config's sub-block side within a block it does
    not divide (the model's sub-blocks tile the block exactly)."""
    return max(d for d in range(1, min(side, most) + 1) if side % d == 0)


def _minimal_split(blocks: _MinimalBlocks, mt: int, kt: int, nt: int) -> _MinimalSplit:
    """The work split of tt-metal's ``minimal_matmul_factory_helper``
    (``ttnn/cpp/ttnn/operations/experimental/minimal_matmul/device/minimal_matmul_program_factory.cpp``
    @856eb4af): the grid is transposed when ``M > N`` (M over the columns, N over the rows); M is padded to
    a multiple of its axis's cores and N of its own (``padded_M_tiles = round_up(M_tiles, cores)``), each core
    owns ``padded/cores`` tiles of each, and K is padded to whole K blocks. Every core of the grid runs the
    whole loop, padded tiles included ("Some cores are doing unnecessary work ... the receiver cores must
    ack all blocks"), in ``ceil(per_core/block)`` output blocks, the last one partial (``compute.cpp``:
    ``current_M_block_tiles``)."""
    gx, gy = blocks.grid
    transposed = mt > nt
    m_cores, n_cores = (gx, gy) if transposed else (gy, gx)
    bh, pm = _even_blocks(math.ceil(mt / m_cores), blocks.m_block)
    bw, pn = _even_blocks(math.ceil(nt / n_cores), blocks.n_block)
    return _MinimalSplit(m_cores, n_cores, pm, pn, bh, bw, blocks.k_block * math.ceil(kt / blocks.k_block), transposed)


def _minimal_as_2d(
    blocks: _MinimalBlocks, split: _MinimalSplit, memory: dict[str, str], compute: dict[str, object]
) -> TtnnMatmulConfig:
    """The multicast config that runs what ``minimal_matmul`` runs (``_minimal_split``): M over the grid's
    rows and N over its columns (transposed when ``M > N``), in0 entering at the first core of each row (of
    each column, transposed) and passed along it, in1 at the first core of each column (row) and passed
    along it (``M@y,N@x|in0=mcast_x,in1=mcast_y``, transposed ``N@y,M@x|in0=mcast_y,in1=mcast_x``); each
    core works ``block_h x block_w`` output blocks with ``K_block``-tile steps of K and the config's
    sub-blocks (clipped to the block). A grid of one row or one column is the 1-D multicast of the input
    passed along it, the other read from DRAM by every core."""
    gx, gy = blocks.grid
    layout: dict[str, object] = {
        "program_config": TWO_D,
        "compute_with_storage_grid_size": blocks.grid,
        "transpose_mcast": split.transposed,
    }
    if gy == 1 or gx == 1:  # one line of cores: the input passed along it, the other from DRAM (1-D)
        along_in0 = (gy == 1) != split.transposed
        layout = {"program_config": ONE_D, "compute_with_storage_grid_size": blocks.grid, "mcast_in0": along_in0}
    return TtnnMatmulConfig.model_validate(
        {
            **layout,
            "in0_block_w": blocks.k_block,
            "per_core_M": split.per_core_m,
            "per_core_N": split.per_core_n,
            "out_block_h": split.block_h,
            "out_block_w": split.block_w,
            "out_subblock_h": _divisor_at_most(split.block_h, blocks.subblock_h),
            "out_subblock_w": _divisor_at_most(split.block_w, blocks.subblock_w),
            "forwarded": True,
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
        split = _minimal_split(source, math.ceil(batch * m / 32), math.ceil(k / 32), math.ceil(n / 32))
        padded = {"M": 32 * split.m_tiles, "K": 32 * split.k_tiles, "N": 32 * split.n_tiles}
        source = _minimal_as_2d(source, split, memory, compute)
        fuse_batch = True  # minimal_matmul flattens in0 to [M, K]
        notes.append(
            "MinimalMatmulOp costed as the multicast matmul of its work split: every core of the grid "
            f"{split.per_core_m}x{split.per_core_n} tiles of M over "
            + ("columns, N over rows" if split.transposed else "rows, N over columns")
            + f", in blocks of {split.block_h}x{split.block_w}"
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
            "padded as minimal_matmul splits it over every core: " + ",".join(f"{d}={e}" for d, e in padded.items())
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
