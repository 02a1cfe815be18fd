"""Which gather rows of a device-profiler report are the family's shipped kernels, their shape and the split
their factory ran (``accuracy/op_mapping.py``: ``ACCURACY`` plugs into ``loom_explorer.accuracy_ops``).

* ``EmbeddingsDeviceOperation`` (``embeddings_type`` GENERIC, output interleaved) -> ``embedding``: INPUT_0
  the indices (``P`` = all of its logical elements), INPUT_1 the table ``[.., R, C]``; costed with ttnn's split
  on the run's grid (``ttnn_config.py``);
* ``GridSampleOperation`` (``mode`` bilinear) -> ``grid_sample``: INPUT_0 the NHWC image (``R = N*H*W``
  pixels of ``C`` channels), INPUT_1 the grid ``[N, H_out, W_out, X]`` whose rows each hold ``X / 6`` points
  (``use_precomputed_grid``: 6 values a point) or ``X / 2`` (2 coordinates), so ``P`` = grid rows times that;
  a height-sharded output (``output_mem_config``'s shard ``shape={h; w}`` on its core grid) is computed shard
  by shard, ``h`` grid rows per core; an interleaved one with ttnn's split, which the model's default makes for
a grid of one point a row (the reader waits for each grid row's read: ``index_block`` = points a grid row).
An interleaved output of several points a grid row is skipped: its split is over the run's whole grid, which
the row does not give.

An embedding copies rows (no math), so its row's empty ``MATH FIDELITY`` is read as the default fidelity
(``no_math_op_codes``). An L1-interleaved input or output is read from / written to the L1 banks
(``capture.l1_interleaved_placements``); a sharded input, another mode or embeddings type is a ``RowSkip``
with the reason.
"""

from __future__ import annotations

import re

from loom_explorer.accuracy.capture import (
    INTERLEAVED,
    OpReading,
    ProfilerRow,
    RowSkip,
    l1_interleaved_placements,
    tensor_format,
    tensor_memory,
)
from loom_explorer.accuracy.op_mapping import AccuracyOps
from loom_explorer.families.gather.ttnn_config import grid_sample_split

EMBEDDING_CODES = frozenset({"embeddingsdeviceoperation", "embeddings"})
GRID_SAMPLE_CODES = frozenset({"gridsampleoperation", "gridsample"})  # the newer and the older op code
_SHARD = re.compile(r"HEIGHT_SHARDED.*?grid=\{\[\(x=(\d+);y=(\d+)\) - \(x=(\d+);y=(\d+)\)\]\};shape=\{(\d+); *(\d+)\}")


def _last(text: str) -> str:
    return text.split("::")[-1].strip()


def _interleaved_inputs(row: ProfilerRow, count: int, notes: list[str]) -> list[str]:
    """The memories of INPUT_0..count-1 (``tensor_memory``), each interleaved (DRAM or L1); RowSkip otherwise."""
    memories = [tensor_memory(row, f"INPUT_{i}", notes) for i in range(count)]
    for i, where in enumerate(memories):
        if where not in INTERLEAVED:
            raise RowSkip(f"INPUT_{i} is sharded: the model reads a gather's table and index interleaved")
    return memories


def read_gather(row: ProfilerRow, attributes: str, attrs: dict[str, str], compute: dict[str, object]) -> OpReading:
    """The kernel, shape and split of an embedding or grid-sample row (module docstring); RowSkip otherwise."""
    name = row.get("OP CODE").split("::")[-1].lower()
    indices, table = row.shape("INPUT_0"), row.shape("INPUT_1")
    if indices is None or table is None:
        raise RowSkip("a gather needs INPUT_0 and INPUT_1 shapes")
    notes: list[str] = []
    memories = _interleaved_inputs(row, 2, notes)
    if name in EMBEDDING_CODES:
        kind = _last(attrs.get("embeddings_type", "GENERIC"))
        if kind != "GENERIC":
            raise RowSkip(f"embeddings_type {kind}: only the GENERIC lookup is the shipped embedding kernel")
        if tensor_memory(row, "OUTPUT_0", notes) not in INTERLEAVED:
            raise RowSkip("a sharded embedding output: only ttnn's interleaved embedding factory is modelled")
        w, z, y, x = table
        shape = {"P": indices[0] * indices[1] * indices[2] * indices[3], "C": x, "R": w * z * y}
        return OpReading(
            kernel="embedding",
            shape=shape,
            model_shape=shape,
            dtype=tensor_format(row, "INPUT_1"),
            formats={},
            grid=None,
            fp32_acc=False,
            note="; ".join(notes),
            placements=l1_interleaved_placements(row, memories, ("index", "table"), "y", notes),
        )
    mode = attrs.get("mode", "bilinear")
    if mode != "bilinear":
        raise RowSkip(f"grid_sample mode {mode}: only the bilinear sample (4 rows a point) is the shipped kernel")
    n, h, w, c = indices
    gn, gh, gw, gx = table
    per_point = 6 if attrs.get("use_precomputed_grid", "false") == "true" else 2
    if gx % per_point:
        raise RowSkip(f"grid rows of {gx} values do not hold whole points of {per_point} values")
    batch = gx // per_point
    sticks = gn * gh * gw
    shape = {"P": sticks * batch, "C": c, "R": n * h * w}
    out = tensor_memory(row, "OUTPUT_0", notes)
    placed = l1_interleaved_placements(row, memories, ("x", "grid"), "y", notes)
    if out in INTERLEAVED:
        if batch > 1:
            raise RowSkip(
                f"an interleaved grid sample of {batch} points a grid row: ttnn deals its grid rows over the "
                "run's whole grid, which the row does not give (the model's default reads one point a row)"
            )
        grid = None
        split = None
    else:
        m = _SHARD.search(attrs.get("output_mem_config", ""))
        if m is None:
            raise RowSkip(f"OUTPUT_0 {out}: only a height-sharded output (or an interleaved one) is modelled")
        x0, y0, x1, y1, shard_h, _ = (int(v) for v in m.groups())
        grid = (x1 - x0 + 1, y1 - y0 + 1)
        split = grid_sample_split(shape["P"], grid, shard_h * batch, "y", batch)
    return OpReading(
        kernel="grid_sample",
        shape=shape,
        model_shape=shape,
        dtype=tensor_format(row, "INPUT_0"),
        formats={},
        grid=grid,
        fp32_acc=False,
        note="; ".join(notes),
        config=split,
        placements=placed,
    )


ACCURACY = AccuracyOps(
    name="gather",
    op_codes=EMBEDDING_CODES | GRID_SAMPLE_CODES,
    kernels=("embedding", "grid_sample"),
    read_configured=read_gather,
    no_math_op_codes=EMBEDDING_CODES,
    ops_phrase="embedding, bilinear grid sample",
)
