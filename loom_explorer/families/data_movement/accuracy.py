"""Which data-movement rows of a device-profiler report are the family's shipped kernels, and their shape
(``accuracy/op_mapping.py``: ``ACCURACY`` plugs into ``loom_explorer.accuracy_ops``).

ttnn runs these ops without a program config; the model costs ttnn's interleaved split of each (``ttnn.py``).
A row is read whole (``read_configured``: its layouts, memories and both data formats decide the kernel):

* INPUT_0 and OUTPUT_0 DRAM- or L1-interleaved (``capture.tensor_memory``: L1-interleaved is costed as DRAM,
  an upper bound, said in the note) or L1 height-sharded: a height-sharded operand makes the row's config a
  ``ShardedSplit`` (``ttnn_config.py``: the sharded operands and the row's ``CORE COUNT``), costed as its
  sharded split (``ttnn.py::evaluate_sharded``); ``InterleavedToSharded[Partial]``,
  ``ShardedToInterleaved[Partial]``, ``PaddedSlice`` and ``SliceWrite`` are copies (or an untilize) with one
  side in L1; a block- or width-sharded operand is costed as the same split (``ttnn_config.py``, said in the
  note); a DRAM-sharded operand, and a ``Reshard`` (shards moved between cores), are skipped;
* the kernel by layouts: ROW_MAJOR into TILE -> ``tilize`` (``TilizeDeviceOperation``,
  ``TilizeWithValPaddingDeviceOperation``); TILE into ROW_MAJOR -> ``untilize`` (``Untilize[WithUnpadding]``);
  a tiled ``TransposeDeviceOperation`` of dim ``WH``, or a tiled ``PermuteDeviceOperation`` that swaps the
  last two dimensions -> ``transpose``; any other op of the list below -> ``copy`` (tiled) or ``copy_rows``
  (row-major), a move of its pages in another order (a transpose or permute of the leading dimensions moves
  whole tiles or rows; a slice, split, concatenation, reshape, move, copy, typecast, repeat, pad,
  ``NlpCreateHeads`` and ``NLPConcatHeads`` read and write the output's pages once (a repeat re-reads its
  input for each copy; a pad is costed as reading the padded output's size, an upper bound), and
  ``NLPCreateHeadsDecode`` its input's (the fused q, k and v rows: OUTPUT_0 is q alone); with one side
  sharded, the sharded side's shape, and a ``PaddedSlice`` of tiles into rows reads only the slice's tiles);
* the shape: a tiled tensor's rows are its padded ``W*Z*Y`` (whole tiles move), a row-major tensor's its
  logical ``W*Z*Y`` (one page each), its columns ``X``. ``tilize``: ``H, W`` the output's padded extents,
  ``Hx, Wx`` the input's logical ones; ``untilize``: ``H, W`` the input's padded, ``Hy, Wy`` the output's
  logical; ``transpose``: the input's; ``copy``/``copy_rows``: the output's (what is written; a slice reads
  only those pages, a concatenation's inputs sum to them), except a row-major reshape, whose rows and page
  are the input's (the output's pages, of another size, are costed at the input's), with the option
  ``two_riscs`` when its ``ATTRIBUTES`` and page sizes say ttnn's later factory split each core's sticks over
  two RISC-Vs (``reshape_split.py``);
* the data formats: INPUT_0's and OUTPUT_0's (a typecast passes every tile through the compute core);
* ``NlpCreateHeads`` and ``NLPConcatHeads`` of interleaved tensors: a ``copy`` of INPUT_0's tiles (every one is
  read: create heads reads the fused q, k and v) with the option ``waited`` (their readers wait for each tile,
  ``barriers.py``), its tiles flattened over the row's ``CORE COUNT`` cores one tile a block (``ShardedSplit``
  with no L1 operand, ``flat``: the readers push tile by tile): the
  factories deal the input's tile rows over the cores (``nlp_create_qkv_heads_program_factory.cpp``,
  ``nlp_concat_heads_program_factory.cpp``: ``num_blocks`` tile rows with ``split_work_to_cores``);
* a ``Reshape[View]`` of interleaved tiles -> ``reshape`` (``kernels/reshape.py``): the output's tiles as a
  copy's, and the counts ``G`` and ``S`` its map makes of the two logical shapes (``reshape_map.py``); a
  ``Transpose`` of dim ``HC`` of interleaved tiles -> ``transpose_hc``: the input's tiles (padded ``W*Z*Y`` by
  ``X``) and its face-line writes ``F`` from its logical ``[W, Z, Y, X]`` (``transpose_hc.py``);
* a row-major ``Slice`` with a step along the last dimension (its ``step`` attribute), both sides interleaved
  -> ``slice_rows`` with the option ``strided`` (``gather.py``: the reader gathers the kept elements byte by
  byte): ``H`` the output's logical rows, ``W`` the input's logical columns (each input row is read whole),
  ``Wy`` the output's;
* a row-major ``InterleavedToSharded[Partial]`` -> ``copy_rows`` with the option ``to_shard`` (its reader waits
  for every stick on Blackhole, ``shard_reader.py``); into a block or width shard, ``H = cores * shard_h``
  rows of ``W = shard_w`` (the output memory config's shard shape: each core's sticks);
* a row-major ``PaddedSlice`` or ``SliceWrite`` -> ``copy_rows`` with the option ``stick_walk`` (their reader or
  writer walks a multi-dimensional index in L1 for every stick's address, ``stick_walk.py``);
* a row-major permute that moves the last dimension gathers single elements: skipped (not a page move);
* a paged KV-cache update (``PagedUpdateCacheDeviceOperation``, ``paged_update_cache_program_factory.cpp``
  (tenstorrent/tt-metal ``ttnn/cpp/ttnn/operations/experimental/paged_cache/device/update_cache/``
  @0147d780): one core per user, the input INPUT_1's L1 shard's cores; each reads, for each of the cache's
  ``num_heads`` heads (INPUT_0's Z), the ``Wt`` tiles (INPUT_1's padded X / 32) of the cache tile row holding
  the new position, untilizes them, writes the new row in, tilizes and writes the ``Wt`` tiles back): a
  ``copy`` of ``H = cores * num_heads * 32`` rows by ``W = Wt * 32`` columns, the cache in DRAM on both sides,
  split over the row's ``CORE COUNT`` cores (``ShardedSplit`` with no L1 operand: ``num_heads`` tile rows a
  core); the untilize/tilize on the compute core and the one-row input read from L1 are not modelled (said in
  the note);
* a KV-cache fill (``UpdateKVCacheOperation`` of ``op_type`` ``FILL``, ``fill_cache_multi_core_program_factory.cpp``
  (tenstorrent/tt-metal ``ttnn/cpp/ttnn/operations/kv_cache/device/`` @0a991929): an interleaved input's tile
  rows (``Z * Y / 32`` blocks of ``Wt`` tiles) dealt over the grid by ``split_work_to_cores``, each core reading
  its blocks and writing them into the cache): a ``copy`` of INPUT_1's padded rows by its columns, split over the
  row's ``CORE COUNT`` cores as the paged update is; a DRAM-sharded cache is costed as DRAM-interleaved pages
  (the same bytes written to DRAM, said in the note);
* any other KV-cache fill or update (an ``UPDATE`` of ``UpdateKVCacheOperation``, ``PagedFillCache``, a sharded
  fill input): skipped, it writes its input into the cache in place through a factory the model does not read.
"""

from __future__ import annotations

import re

from loom_explorer.accuracy.capture import OpReading, ProfilerRow, RowSkip, count_cell, tensor_format, tensor_memory
from loom_explorer.accuracy.op_mapping import AccuracyOps
from loom_explorer.families.data_movement.barriers import WAITED
from loom_explorer.families.data_movement.gather import STRIDED
from loom_explorer.families.data_movement.reshape_map import reshape_gather
from loom_explorer.families.data_movement.reshape_split import ELEMENT_BYTES, TWO_RISCS, two_riscs_of_row
from loom_explorer.families.data_movement.shard_reader import TO_SHARD
from loom_explorer.families.data_movement.stick_walk import STICK_WALK
from loom_explorer.families.data_movement.transpose_hc import face_line_writes
from loom_explorer.families.data_movement.ttnn_config import ShardedSplit
from loom_explorer.problem import Placement

# the op codes as ttnn names them, and as older captures do (no "DeviceOperation")
TILIZE = frozenset({"tilizedeviceoperation", "tilizewithvalpaddingdeviceoperation", "tilize", "tilizewithvalpadding"})
UNTILIZE = frozenset(
    {"untilizedeviceoperation", "untilizewithunpaddingdeviceoperation", "untilize", "untilizewithunpadding"}
)
SHARDED = frozenset(
    {
        "interleavedtoshardeddeviceoperation",
        "interleavedtoshardedpartialdeviceoperation",
        "shardedtointerleaveddeviceoperation",
        "shardedtointerleavedpartialdeviceoperation",
        "paddedslicedeviceoperation",
        "slicewritedeviceoperation",
        "resharddeviceoperation",
    }
)
KV_CACHE = frozenset(
    {
        "updatekvcacheoperation",
        "updatecachedeviceoperation",
        "pagedupdatecachedeviceoperation",
        "pagedfillcachedeviceoperation",
    }
)
COPIES = frozenset(
    {
        "reshapedeviceoperation",
        "reshapeviewdeviceoperation",
        "movedeviceoperation",
        "copydeviceoperation",
        "clonedeviceoperation",
        "typecastdeviceoperation",
        "slicedeviceoperation",
        "concatdeviceoperation",
        "splitdeviceoperation",
        "transposedeviceoperation",
        "transpose",
        "permutedeviceoperation",
        "nlpcreateheadsdeviceoperation",
        "nlpcreateheadsdecodedeviceoperation",
        "nlpcreateqkvheadsdecodedeviceoperation",
        "nlpcreateheadssegformerdeviceoperation",
        "nlpconcatheadsdeviceoperation",
        "repeatdeviceoperation",
        "paddeviceoperation",
    }
)
# ttnn's interleaved-to-sharded ops: a row-major one reads its sticks with ``shard_reader.py``'s reader
TO_SHARD_OPS = frozenset({"interleavedtoshardeddeviceoperation", "interleavedtoshardedpartialdeviceoperation"})
RESHAPES = frozenset({"reshapedeviceoperation", "reshapeviewdeviceoperation"})
STICK_WALK_OPS = frozenset({"paddedslicedeviceoperation", "slicewritedeviceoperation"})
# ttnn's NLP create-heads and concat-heads ops: the input's tile rows split over cores, every tile waited for
HEADS = frozenset({"nlpcreateheadsdeviceoperation", "nlpconcatheadsdeviceoperation"})
OP_CODES = TILIZE | UNTILIZE | COPIES | SHARDED | KV_CACHE
_EXTENT = re.compile(r"\s*([0-9]+)\s*(?:\[\s*([0-9]+)\s*\])?\s*")


def _extents(row: ProfilerRow, tensor: str) -> tuple[list[int], list[int]] | None:
    """(padded, logical) ``[W, Z, Y, X]`` of ``tensor``; None when the row has no such tensor."""
    padded: list[int] = []
    logical: list[int] = []
    for axis in "WZYX":
        text = row.get(f"{tensor}_{axis}_PAD[LOGICAL]", f"{tensor}_{axis}")
        if not text:
            if axis in "YX":
                return None
            padded.append(1)
            logical.append(1)
            continue
        m = _EXTENT.fullmatch(text)
        if m is None:
            raise RowSkip(f"{tensor}_{axis} {text!r} is not an extent")
        padded.append(int(m.group(1)))
        logical.append(int(m.group(2) or m.group(1)))
    return padded, logical


def _rows_cols(row: ProfilerRow, tensor: str) -> tuple[int, int, int, int]:
    """(padded rows, logical rows, padded columns, logical columns) of ``tensor``: rows are ``W*Z*Y``."""
    found = _extents(row, tensor)
    if found is None:
        raise RowSkip(f"no {tensor} shape")
    (pw, pz, py, px), (lw, lz, ly, lx) = found
    return pw * pz * py, lw * lz * ly, px, lx


def _swaps_last_two(attrs: dict[str, str], name: str) -> bool | None:
    """Whether a transpose or permute swaps the last two dimensions (None: it names neither)."""
    if name in ("transposedeviceoperation", "transpose"):
        dim = attrs.get("dim", "").split("::")[-1].strip()
        return dim == "WH" if dim else None
    if name == "permutedeviceoperation":
        order = [int(v) for v in re.findall(r"-?[0-9]+", attrs.get("dims", ""))]
        if not order:
            return None
        return order[-2:] == [len(order) - 1, len(order) - 2]
    return False


def _moves_last(attrs: dict[str, str], name: str) -> bool:
    """Whether a permute moves the last dimension elsewhere."""
    if name != "permutedeviceoperation":
        return False
    order = [int(v) for v in re.findall(r"-?[0-9]+", attrs.get("dims", ""))]
    return bool(order) and order[-1] != len(order) - 1


def _last_step(attrs: dict[str, str], name: str) -> int:
    """A slice's step along the last dimension (1: none, or not a slice)."""
    if name != "slicedeviceoperation":
        return 1
    steps = [int(v) for v in re.findall(r"[0-9]+", attrs.get("step", ""))]
    return steps[-1] if steps else 1


SHARDINGS = {
    "L1_HEIGHT_SHARDED": Placement.l1_height,
    "L1_BLOCK_SHARDED": Placement.l1_block,
    "L1_WIDTH_SHARDED": Placement.l1_width,
}


def _memories(row: ProfilerRow, name: str, notes: list[str]) -> dict[str, Placement | None]:
    """The L1 sharding of INPUT_0 and OUTPUT_0 (None: interleaved); RowSkip for a reshard."""
    sharded: dict[str, Placement | None] = {}
    for tensor in ("INPUT_0", "OUTPUT_0"):
        memory = tensor_memory(row, tensor, notes)
        sharded[tensor] = SHARDINGS.get(memory)
        if sharded[tensor] in (Placement.l1_block, Placement.l1_width):
            notes.append(
                f"{tensor} {memory.lower()}: costed as the rows dealt over the same cores (the same bytes per "
                "core; a block shard's narrower pages not modelled)"
            )
    if name == "resharddeviceoperation":
        raise RowSkip(
            "a reshard moves shards between cores over the NoC, which the model's L1 placements do not express"
        )
    return sharded


def _kernel_and_shape(
    row: ProfilerRow, attrs: dict[str, str], name: str, base: str, notes: list[str]
) -> tuple[str, dict[str, int]]:
    """(kernel, shape) of the row by its layouts (module docstring); ``base`` the tensor whose shape a copy
    takes (OUTPUT_0, or the sharded one)."""
    in_layout = row.get("INPUT_0_LAYOUT").upper() or "TILE"
    out_layout = row.get("OUTPUT_0_LAYOUT").upper() or in_layout
    in_rows, in_logical_rows, in_cols, in_logical_cols = _rows_cols(row, "INPUT_0")
    out_rows, out_logical_rows, out_cols, out_logical_cols = _rows_cols(row, "OUTPUT_0")
    if in_layout == "ROW_MAJOR" and out_layout == "TILE":
        shape = {"H": out_rows, "Hx": in_logical_rows, "W": out_cols, "Wx": in_logical_cols}
        if shape["Hx"] > shape["H"] or shape["Wx"] > shape["W"]:
            raise RowSkip(f"input {in_logical_rows}x{in_logical_cols} is larger than the tiled output")
        return "tilize", shape
    if in_layout == "TILE" and out_layout == "ROW_MAJOR":
        if name == "paddedslicedeviceoperation":  # reads only the slice's tiles
            shape = {"H": -(-out_logical_rows // 32) * 32, "W": -(-out_logical_cols // 32) * 32}
        else:
            shape = {"H": in_rows, "W": in_cols}
        shape |= {"Hy": out_logical_rows, "Wy": out_logical_cols}
        if shape["Hy"] > shape["H"] or shape["Wy"] > shape["W"]:
            raise RowSkip(f"output {out_logical_rows}x{out_logical_cols} is larger than the tiled input")
        return "untilize", shape
    if in_layout != out_layout:
        raise RowSkip(f"layouts {in_layout} into {out_layout}: the model knows TILE and ROW_MAJOR")
    if name in TILIZE | UNTILIZE:
        raise RowSkip(f"{row.get('OP CODE')} from {in_layout} into {out_layout}: no layout to change")
    if in_layout == "TILE" and _swaps_last_two(attrs, name):
        return "transpose", {"H": in_rows, "W": in_cols}
    if in_layout == "ROW_MAJOR" and _moves_last(attrs, name):
        raise RowSkip("a row-major permute that moves the last dimension gathers single elements, not pages")
    rows, logical_rows, cols, logical_cols = _rows_cols(row, base)
    if in_layout == "TILE":
        if name in ("transposedeviceoperation", "transpose", "permutedeviceoperation"):
            notes.append("a permute of the leading dimensions: costed as a copy of the tiles")
        return "copy", {"H": rows, "W": cols}
    if _last_step(attrs, name) > 1 and base == "OUTPUT_0":
        _, out_rows_logical, _, out_cols_logical = _rows_cols(row, "OUTPUT_0")
        return "slice_rows", {"H": out_rows_logical, "W": in_logical_cols, "Wy": out_cols_logical}
    if name in ("reshapedeviceoperation", "reshapeviewdeviceoperation"):
        notes.append("row-major reshape: output pages costed at the input's page size")
        return "copy_rows", {"H": in_logical_rows, "W": in_logical_cols}
    return "copy_rows", {"H": logical_rows, "W": logical_cols}


def _tiled_reshape(row: ProfilerRow, shape: dict[str, int]) -> dict[str, int]:
    """A tiled reshape's shape: the output's tiles (``shape``, as a copy's) and the counts ``G`` and ``S`` its
    map makes of the two logical shapes (``reshape_map.py``)."""
    found_in, found_out = _extents(row, "INPUT_0"), _extents(row, "OUTPUT_0")
    if found_in is None or found_out is None:
        raise RowSkip("a tiled reshape needs the input and output shapes")
    try:
        gather = reshape_gather(tuple(found_in[1]), tuple(found_out[1]))
    except ValueError as exc:
        raise RowSkip(str(exc)) from None
    return shape | {"G": gather.input_reads, "S": gather.segments}


def _transposes_hc(attrs: dict[str, str], name: str) -> bool:
    """Whether a transpose swaps the channels and the rows (``dim`` HC)."""
    return name in ("transposedeviceoperation", "transpose") and attrs.get("dim", "").split("::")[-1].strip() == "HC"


def _tiled_transpose_hc(row: ProfilerRow) -> dict[str, int]:
    """A tiled HC transpose's shape: the input's tiles (padded rows ``W*Z*Y``, columns) and its face-line
    writes ``F`` (``transpose_hc.py``) from its logical ``[W, Z, Y, X]``."""
    found = _extents(row, "INPUT_0")
    if found is None:
        raise RowSkip("a tiled HC transpose needs the input shape")
    (pw, pz, py, px), (lw, lz, ly, lx) = found
    return {"H": pw * pz * py, "W": px, "F": face_line_writes(lw, lz, ly, lx)}


def _paged_update(row: ProfilerRow, compute: dict[str, object]) -> OpReading:
    """A paged KV-cache update costed as the copy of the cache tile rows it rewrites (module docstring)."""
    cache = _extents(row, "INPUT_0")
    new = _extents(row, "INPUT_1")
    if cache is None or new is None:
        raise RowSkip("a paged cache update needs the cache (INPUT_0) and input (INPUT_1) shapes")
    if tensor_memory(row, "INPUT_0", []) != "DRAM":
        raise RowSkip("a paged cache update is modelled for a DRAM-interleaved cache (INPUT_0)")
    num_heads, width = cache[0][1], new[0][3]
    if width % 32:
        raise RowSkip(f"INPUT_1's padded width {width} is not whole tiles")
    cores = row.number(count_cell, "CORE COUNT")
    if cores is None:
        raise RowSkip("a paged cache update and no CORE COUNT: the users (one a core) are unknown")
    dtype = tensor_format(row, "INPUT_0")
    return OpReading(
        kernel="copy",
        shape={"H": cores * num_heads * 32, "W": width},
        model_shape={"H": cores * num_heads * 32, "W": width},
        dtype=dtype,
        formats={"x": dtype, "y": dtype},
        grid=None,
        fp32_acc=bool(compute.get("fp32_dest_acc_en")),
        note=(
            f"paged cache update: {num_heads} cache tile rows a user read and written back, one user a core; "
            "the untilize/tilize of those tiles and the one-row input read from L1 not modelled"
        ),
        config=ShardedSplit(op=row.get("OP CODE"), cores=cores, sharded=()),
    )


def _cache_fill(row: ProfilerRow, compute: dict[str, object]) -> OpReading:
    """A KV-cache fill costed as the copy of its input's tile rows into the cache (module docstring)."""
    notes: list[str] = []
    if tensor_memory(row, "INPUT_1", notes) != "DRAM":
        raise RowSkip("a KV-cache fill is modelled for a DRAM-interleaved input (INPUT_1)")
    cache_memory = row.get("INPUT_0_MEMORY").upper()
    if "DRAM" not in cache_memory:
        raise RowSkip(f"a KV-cache fill into a cache in {cache_memory or 'an unstated memory'}: modelled in DRAM only")
    if "SHARDED" in cache_memory:
        notes.append("the DRAM-sharded cache costed as DRAM-interleaved pages (the same bytes written)")
    rows, _, cols, _ = _rows_cols(row, "INPUT_1")
    cores = row.number(count_cell, "CORE COUNT")
    if cores is None:
        raise RowSkip("a KV-cache fill and no CORE COUNT: the cores its tile rows are dealt over are unknown")
    dtype = tensor_format(row, "INPUT_1")
    return OpReading(
        kernel="copy",
        shape={"H": rows, "W": cols},
        model_shape={"H": rows, "W": cols},
        dtype=dtype,
        formats={"x": dtype, "y": tensor_format(row, "INPUT_0", dtype)},
        grid=None,
        fp32_acc=bool(compute.get("fp32_dest_acc_en")),
        note="; ".join(["KV-cache fill: the input's tile rows copied into the cache", *notes]),
        config=ShardedSplit(op=row.get("OP CODE"), cores=cores, sharded=()),
    )


def read_row(row: ProfilerRow, attributes: str, attrs: dict[str, str], compute: dict[str, object]) -> OpReading:
    """The kernel, shape, formats and (sharded) split of a data-movement row (module docstring); RowSkip
    otherwise."""
    name = row.get("OP CODE").split("::")[-1].lower()
    notes: list[str] = []
    if name == "pagedupdatecachedeviceoperation":
        return _paged_update(row, compute)
    if name == "updatekvcacheoperation" and attrs.get("op_type", "").split("::")[-1].upper() == "FILL":
        return _cache_fill(row, compute)
    if name in KV_CACHE:
        raise RowSkip(
            "a KV-cache fill or update writes INPUT_1 into the cache INPUT_0 in place, at the cache's own (often "
            "DRAM-sharded) layout: not a copy between two interleaved tensors, which is all the model reads"
        )
    sharded = _memories(row, name, notes)
    base = "INPUT_0" if sharded["INPUT_0"] and not sharded["OUTPUT_0"] else "OUTPUT_0"
    if name in ("nlpcreateheadsdecodedeviceoperation", "nlpcreateqkvheadsdecodedeviceoperation"):
        base = "INPUT_0"  # the fused q/k/v rows: OUTPUT_0 is the q heads only, k and v are outputs 1 and 2
    heads = name in HEADS and not any(sharded.values())
    if heads:
        base = "INPUT_0"  # every input tile is read (create heads: the fused q, k and v), each waited for
    kernel, shape = _kernel_and_shape(row, attrs, name, base, notes)
    if kernel == "copy" and name in RESHAPES and not any(sharded.values()):
        kernel, shape = "reshape", _tiled_reshape(row, shape)
    if kernel == "copy" and _transposes_hc(attrs, name) and not any(sharded.values()):
        kernel, shape = "transpose_hc", _tiled_transpose_hc(row)
    dtype = tensor_format(row, "INPUT_0")
    config = None
    if heads:
        cores = row.number(count_cell, "CORE COUNT")
        if cores is None:
            raise RowSkip("NLP create/concat heads and no CORE COUNT: the cores its tile rows are dealt over")
        config = ShardedSplit(op=row.get("OP CODE"), cores=cores, sharded=(), flat=True)
        notes.append(f"the input's tile rows over the row's {cores} cores, every tile read with a barrier")
    if any(sharded.values()):
        cores = row.number(count_cell, "CORE COUNT")
        if cores is None:
            raise RowSkip("a sharded operand and no CORE COUNT: the cores holding the shards are unknown")
        held = [(t, p) for t, p in (("x", sharded["INPUT_0"]), ("y", sharded["OUTPUT_0"])) if p is not None]
        config = ShardedSplit(
            op=row.get("OP CODE"), cores=cores, sharded=tuple(t for t, _ in held), layouts=tuple(p for _, p in held)
        )
        if (
            kernel == "copy_rows"
            and name in TO_SHARD_OPS
            and sharded["OUTPUT_0"] in (Placement.l1_block, Placement.l1_width)
        ):
            shape = _shard_sticks(attrs, cores, shape, notes)
    options = _options(kernel, name, heads) | _reshape_riscs(row, attributes, kernel, name, notes)
    return OpReading(
        kernel=kernel,
        shape=shape,
        model_shape=shape,
        dtype=dtype,
        formats={"x": dtype, "y": tensor_format(row, "OUTPUT_0", dtype)},
        grid=None,
        fp32_acc=bool(compute.get("fp32_dest_acc_en")),
        note="; ".join(notes),
        config=config,
        options=options,
    )


_SHARD_SHAPE = re.compile(r"shard_spec=ShardSpec\(.*?shape=\{\s*([0-9]+)\s*;\s*([0-9]+)\s*\}")


def _shard_sticks(attrs: dict[str, str], cores: int, shape: dict[str, int], notes: list[str]) -> dict[str, int]:
    """A row-major interleaved-to-sharded copy into a block or width shard: its reader reads each core's
    ``shard_h`` sticks of ``shard_w`` elements (``shard_reader.py``), so it is read as ``cores * shard_h`` rows of
    ``shard_w`` (the same bytes a core, its sticks' count and size); ``shape`` unchanged when the output memory
    config states no shard shape."""
    found = _SHARD_SHAPE.search(attrs.get("output_mem_config", ""))
    if found is None:
        return shape
    height, width = int(found.group(1)), int(found.group(2))
    notes.append(f"each core's {height} sticks of {width} elements (the output's shard shape) over {cores} cores")
    return {"H": height * cores, "W": width}


def _options(kernel: str, name: str, heads: bool) -> frozenset[str]:
    """The program options of a row: ``strided`` for a strided row-major slice, ``waited`` for the NLP heads ops,
    ``to_shard`` for a row-major interleaved-to-sharded copy (its reader, ``shard_reader.py``), ``stick_walk`` for
    a row-major padded slice or slice write (their per-stick index walk, ``stick_walk.py``)."""
    if kernel == "slice_rows":
        return frozenset({STRIDED})
    if heads:
        return frozenset({WAITED})
    if kernel == "copy_rows" and name in TO_SHARD_OPS:
        return frozenset({TO_SHARD})
    if kernel == "copy_rows" and name in STICK_WALK_OPS:
        return frozenset({STICK_WALK})
    return frozenset()


def _reshape_riscs(row: ProfilerRow, attributes: str, kernel: str, name: str, notes: list[str]) -> frozenset[str]:
    """``two_riscs`` for a row-major reshape whose attributes and page sizes say ttnn's later factory ran it on
    two RISC-Vs a core (``reshape_split.py``); empty otherwise."""
    if kernel != "copy_rows" or any(row.get(f"{t}_LAYOUT").upper() != "ROW_MAJOR" for t in ("INPUT_0", "OUTPUT_0")):
        return frozenset()
    element = ELEMENT_BYTES.get(row.get("INPUT_0_DATATYPE").upper().split("::")[-1])
    found_in, found_out = _extents(row, "INPUT_0"), _extents(row, "OUTPUT_0")
    if element is None or found_in is None or found_out is None:
        return frozenset()
    in_page, out_page = found_in[1][3] * element, found_out[1][3] * element
    out_in_dram = "DRAM" in row.get("OUTPUT_0_MEMORY").upper()
    if not two_riscs_of_row(name, attributes, in_page, out_page, out_in_dram):
        return frozenset()
    notes.append(f"two RISC-Vs a core, each half its sticks ({in_page} B source pages, {out_page} B destination)")
    return frozenset({TWO_RISCS})


ACCURACY = AccuracyOps(
    name="data_movement",
    op_codes=OP_CODES,
    kernels=("tilize", "untilize", "transpose", "copy", "copy_rows", "slice_rows", "reshape", "transpose_hc"),
    read_configured=read_row,
    ops_phrase="tilize/untilize, transpose, copy, reshape, slice, concat, typecast",
    no_math_op_codes=OP_CODES,
)
