"""A data-movement program as the ttnn op that runs it, and ttnn's own default split of its work.

ttnn's data-movement ops take no program config: on DRAM-interleaved tensors each program factory deals its
units of work over the whole compute grid itself (``targets/ttnn/defaults.py``: ``split_work_to_cores`` /
``split_blocks_for_tilize``, the busiest core ``ceil(units / cores)`` units). Which op, and its split
(``interleaved_default``):

* **tilize** (a row-major source into a tiled output; ``ttnn.tilize``, ``ttnn.tilize_with_val_padding`` when
  the source is padded): ``tilize_multi_core_interleaved_program_factory.cpp``
  (tenstorrent/tt-metal ``ttnn/cpp/ttnn/operations/data_movement/tilize/device/`` @0425c5c1) splits the
  tile rows (``nblocks = ntiles / ntiles_per_block``, ``ntiles_per_block = Wt``) with
  ``split_blocks_for_tilize``, reads a tile row's 32 sticks into ``c_0`` of ``Wt`` tiles (one block: depth
  1) and writes tiles: the rows on a 1-D layout, ``block_rows = 1``, ``x_buffer_depth = 1``. (For an output
  wider than 32 tiles it may take its 2-D block factory instead; the row split is what is costed.)
* **untilize** (``ttnn.untilize``, ``ttnn.untilize_with_unpadding`` when the output is a part): the same
  split of tile rows (``untilize/device/factories/untilize_multi_core_program_factory.cpp`` @005c3528:
  ``split_blocks_for_tilize(grid, num_tiles_per_col)``), ``c_0`` one tile row double-buffered when a core has
  two or more: ``block_rows = 1``, depth 2 (a core of one row has one block either way).
* **transpose-WH** (``ttnn.transpose(x, -2, -1)``): ``transpose_wh_program_factory.cpp`` (@022c2361,
  ``build_wh_tiled``) deals ``num_tensor_tiles`` over the grid with ``split_work_to_cores``, 2-tile buffers:
  the flattened ``H*W@xy``, ``block = 1``, depth 2.
* **copy, typecast, slice, pad, concatenation** (the sources' parts of one dimension adding up to it) on
  tiles (``ttnn.clone``, ``ttnn.typecast``, ``ttnn.slice``, ``ttnn.pad``, ``ttnn.concat``):
  ``copy/device/copy_program_factory.cpp`` (@03540028) deals output tiles
  (tiled) or sticks (row-major) with ``split_work_to_cores``, 2 units per buffer, an ``eltwise_copy`` compute
  kernel only when the data format changes: tiles flattened, ``block = 1``, depth 2; a row-major program
  (its rows one element each, ``tile=1``) deals its rows: ``block_rows = 1``, depth 2. The slice, pad and
  concat factories split output pages the same way; their own readers are not modelled apart from it. A
  strided row-major slice (the option ``strided``: ``slice_program_factory_rm_stride.cpp`` @00b0fa3f) deals
  its output rows alike, two input rows per buffer; its reader's gather is ``gather.py``'s.
* **reshape** of tiles (``kernels/reshape.py``, ``ttnn.reshape``): ``reshape_tiled_program_factory.cpp``
  deals the output tiles with ``split_work_to_cores`` as a copy does (``reshape.py``); the tiled HC
  transpose (``kernels/transpose_hc.py``, ``ttnn.transpose(x, 1, 2)``) its input tiles (``transpose_hc.py``).

A row read with a height-sharded operand (``ttnn_config.py``: ``ShardedSplit``) is costed as its sharded split
instead (``evaluate_sharded``): the rows over the row's cores, the sharded operands in L1.

Export (``--format ttnn``): ttnn chooses its cores itself, so only the candidate of its own split is a ttnn
call, on DRAM-interleaved tensors; another candidate, or a tensor in L1, is refused naming why. The file's
``op`` is the one call; its ``upload`` puts a row-major input on the device row-major.
"""

from __future__ import annotations

import math

from loom_explorer.export.exporter import ExportError
from loom_explorer.families.data_movement.barriers import WAITED
from loom_explorer.families.data_movement.gather import gathers
from loom_explorer.families.data_movement.program import analyse_data_movement
from loom_explorer.families.data_movement.reshape import count_dims, remaps
from loom_explorer.families.data_movement.reshape_split import TWO_RISCS
from loom_explorer.families.data_movement.shard_reader import TO_SHARD
from loom_explorer.families.data_movement.stick_walk import STICK_WALK
from loom_explorer.families.data_movement.transpose_hc import scatters
from loom_explorer.families.data_movement.ttnn_config import ShardedSplit
from loom_explorer.families.data_movement.work import computed
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Candidate, Comm
from loom_explorer.model.build import build_schedule
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.problem import Problem
from loom_explorer.targets.ttnn.config import TtnnConfig
from loom_explorer.targets.ttnn.defaults import evaluate_interleaved_default, interleaved_captured
from loom_explorer.targets.ttnn.evaluate import ConfigError, Evaluated, evaluate_values
from loom_explorer.targets.ttnn.op import CapturedCall, InterleavedSplit, TtnnOp, no_program_config


def _parts(problem: Problem, tensor: str) -> bool:
    """Whether ``tensor`` covers less than the whole of a dimension (a padded source, a sliced output): a part
    of a dimension (``Dim(..., part_of=...)``) of a smaller extent than its whole."""
    program = problem.program
    return any(problem.elements(d) < problem.elements(program.whole(d)) for d in program.tensor(tensor).dims)


def features(problem: Problem) -> tuple[str, ...]:
    """What ``problem``'s moves do, each a ttnn op of its own: ``concat`` (several moves), ``tilize``,
    ``untilize``, ``transpose`` (``program.py``), ``pad`` (a source over a smaller part of a dimension),
    ``slice`` (the output over a smaller part), ``typecast`` (a change of data format, folded into a tilize,
    untilize or transpose: their compute kernels pack the output's format); none: a plain copy."""
    st = analyse_data_movement(problem.program)
    found = set(computed(problem, st))
    if found & {"tilize", "untilize", "transpose"}:
        found.discard("typecast")
    if len(st.moves) > 1:
        found.add("concat")
    if _parts(problem, st.output):
        found.add("slice")
    if any(_parts(problem, t) for t in st.streamed) and "concat" not in found:
        found.add("pad")
    return tuple(sorted(found))


# the ttnn function of each combination of features one ttnn op runs
FUNCTIONS: dict[tuple[str, ...], str] = {
    (): "ttnn.clone",
    ("tilize",): "ttnn.tilize",
    ("pad", "tilize"): "ttnn.tilize_with_val_padding",
    ("untilize",): "ttnn.untilize",
    ("slice", "untilize"): "ttnn.untilize_with_unpadding",
    ("transpose",): "ttnn.transpose",
    ("slice",): "ttnn.slice",
    ("pad",): "ttnn.pad",
    ("typecast",): "ttnn.typecast",
    ("concat",): "ttnn.concat",
}


def ttnn_function(problem: Problem) -> str:
    """The ttnn function that runs ``problem``'s program (module docstring); ConfigError when no single ttnn
    op does what its moves do together (say, a pad and a transpose: two ttnn calls)."""
    found = features(problem)
    if remaps(problem.program):
        return "ttnn.reshape"
    if scatters(problem.program):
        return "ttnn.transpose"
    if problem.has_option(WAITED):
        raise ConfigError(
            f"{problem.program.name} with the option {WAITED} is costed as ttnn's NLP create/concat heads readers "
            "(a barrier per tile), which no single ttnn data-movement call on these tensors runs"
        )
    if problem.has_option(TO_SHARD):
        raise ConfigError(
            f"{problem.program.name} with the option {TO_SHARD} is costed as ttnn's interleaved_to_sharded reader, "
            "whose output is an L1 shard: the export writes data-movement ops on DRAM-interleaved tensors"
        )
    if problem.has_option(STICK_WALK):
        raise ConfigError(
            f"{problem.program.name} with the option {STICK_WALK} is costed as ttnn's padded_slice / slice_write "
            "kernels, whose one side is an L1 shard: the export writes data-movement ops on DRAM-interleaved tensors"
        )
    if found not in FUNCTIONS:
        raise ConfigError(
            f"{problem.program.name} does {' and '.join(found)} at once; ttnn runs that as "
            f"{len(found)} ops (one of {', '.join(FUNCTIONS[(f,)] for f in found if (f,) in FUNCTIONS)} each), "
            "not one"
        )
    return FUNCTIONS[found]


def interleaved_default(problem: Problem) -> InterleavedSplit:
    """ttnn's default split of a data-movement ``problem`` (module docstring)."""
    st = analyse_data_movement(problem.program)
    function = ttnn_function(problem)
    rows = st.dims[:-1]
    by_rows = function.startswith(("ttnn.tilize", "ttnn.untilize")) or (
        bool(rows) and problem.program.dim(rows[-1]).tile == 1
    )
    if by_rows and len(rows) == 1:
        group = rows[0]
        depth = 1 if function.startswith("ttnn.tilize") else 2
        return InterleavedSplit(
            op=function,
            program=f"{function.removeprefix('ttnn.')}, interleaved, tile rows split",
            unit="tile row",
            units=math.prod(problem.tiles(d) for d in rows),
            group=group,
            streamed=st.streamed,
            block="block_rows",
            buffer_depth=depth,
        )
    return InterleavedSplit(
        op=function,
        program=f"{function.removeprefix('ttnn.')}, interleaved, tiles split",
        unit="tile",
        units=math.prod(problem.tiles(d) for d in st.dims),
        group="*".join(st.dims),
        streamed=st.streamed,
        block="block",
        buffer_depth=2,
    )


def _check_runs(schedule: SymbolicSchedule) -> None:
    """ExportError unless ttnn's op runs this candidate: DRAM-interleaved tensors, the default's layout."""
    problem, cand = schedule.problem, schedule.candidate
    if count_dims(problem.program):
        raise ExportError(
            f"{problem.program.name}: the op's logical shape is not in the program (its counts "
            f"{', '.join(sorted(count_dims(problem.program)))} stand for what the op makes of it), so no ttnn call "
            "can be written"
        )
    try:
        split = interleaved_default(problem)
    except ConfigError as exc:
        raise ExportError(str(exc)) from None
    if problem.has_option(TWO_RISCS):
        raise ExportError(
            f"{problem.program.name} with the option {TWO_RISCS} is costed as ttnn's row-major reshape run by two "
            "RISC-Vs a core (its default split otherwise), which the exported copy of tensors of one shape does not run"
        )
    in_l1 = [t for t, p in problem.placements if p.in_l1]
    if in_l1:
        raise ExportError(
            f"{', '.join(in_l1)} in L1: the export writes ttnn's data-movement ops on DRAM-interleaved tensors "
            "(the sharded variants, e.g. interleaved_to_sharded, are not written)"
        )
    if cand.axes != (("xy", split.group),):
        raise ExportError(
            f"{split.op} deals its {split.unit}s over the grid itself ({split.group}@xy, one {split.unit} at a "
            f"time); candidate {cand.name} is not a split ttnn can be told to run"
        )


def _equivalent(schedule: SymbolicSchedule, v: dict[str, int]) -> tuple[str | None, dict[str, object], list[str]]:
    _check_runs(schedule)
    split = interleaved_default(schedule.problem)
    return (
        None,
        {},
        [
            f"ttnn deals the {split.unit}s over the whole grid itself (split_work_to_cores); the schedule's grid, "
            "block and buffer depths are not passed to the card"
        ],
    )


def _memory(schedule: SymbolicSchedule, v: dict[str, int]) -> dict[str, object]:
    _check_runs(schedule)
    return {t.name: "DRAM" for t in schedule.problem.program.tensors}


def _torch_shape(problem: Problem, tensor: str) -> str:
    return "(" + ", ".join(f'SHAPE["{d}"]' for d in problem.program.tensor(tensor).dims) + ",)"


def _concat_axis(problem: Problem) -> int:
    """The output axis (negative, from the last) a concatenation joins its sources along: the one dimension
    each source covers a part of, the parts adding up to the whole; ExportError otherwise."""
    st = analyse_data_movement(problem.program)
    program, out_dims = problem.program, [problem.program.whole(d) for d in problem.program.tensor(st.output).dims]
    parted = {program.whole(d) for t in st.streamed for d in program.tensor(t).dims if program.whole(d) != d}
    if len(parted) != 1:
        raise ExportError(
            f"{program.name}: a concatenation joins its sources along one dimension, not {sorted(parted)}"
        )
    (whole,) = parted
    covered = sum(
        problem.elements(next(d for d in program.tensor(t).dims if program.whole(d) == whole)) for t in st.streamed
    )
    if covered != problem.elements(whole) or whole not in out_dims:
        raise ExportError(
            f"{program.name}: the sources' parts of {whole} add up to {covered}, not its {problem.elements(whole)}"
        )
    if any([program.whole(d) for d in program.tensor(t).dims] != out_dims for t in st.streamed):
        raise ExportError(f"{program.name}: ttnn.concat joins sources laid out as its output (none permuted)")
    return out_dims.index(whole) - len(out_dims)


def _stride(problem: Problem, src: str, out: str) -> int:
    """The step of a strided slice (the option ``strided``, ``gather.py``): ``s = W // Wy`` of the source's
    and output's last dimensions, which must give ``ceil(W / s) = Wy`` kept elements; ExportError otherwise."""
    width = problem.elements(problem.program.tensor(src).dims[-1])
    kept = problem.elements(problem.program.tensor(out).dims[-1])
    step = max(1, width // kept)
    if -(-width // step) != kept:
        raise ExportError(f"{problem.program.name}: no step keeps {kept} of {width} elements of a row")
    return step


def _call(schedule: SymbolicSchedule) -> str:
    _check_runs(schedule)
    problem = schedule.problem
    st = analyse_data_movement(problem.program)
    function = ttnn_function(problem)
    out, src = st.output, st.streamed[0]
    memory = f'memory_config=configs["memory"]["{out}"]'
    dtype = f'dtype=getattr(ttnn, DTYPES["{out}"])'
    x = f'tensors["{src}"]'
    dims = problem.program.tensor(out).dims
    end = "[" + ", ".join(f'SHAPE["{d}"]' for d in dims) + "]"
    whole = "[" + ", ".join(f'SHAPE["{problem.program.whole(d)}"]' for d in dims) + "]"
    ref = f'inputs["{src}"].float()'
    calls = {
        "ttnn.tilize": f"ttnn.tilize({x}, {memory}, {dtype})",
        "ttnn.tilize_with_val_padding": f"ttnn.tilize_with_val_padding({x}, {whole}, 0, {memory}, {dtype})",
        "ttnn.untilize": f"ttnn.untilize({x}, {memory})",
        "ttnn.untilize_with_unpadding": (f"ttnn.untilize_with_unpadding({x}, [e - 1 for e in {end}], {memory})"),
        "ttnn.transpose": f"ttnn.transpose({x}, -2, -1, {memory})",
        "ttnn.typecast": f'ttnn.typecast({x}, getattr(ttnn, DTYPES["{out}"]), {memory})',
        "ttnn.slice": f"ttnn.slice({x}, [0] * {len(dims)}, {end}, {memory})",
        "ttnn.clone": f"ttnn.clone({x}, {memory})",
    }
    if function == "ttnn.pad":
        pads = ", ".join(
            f'(0, SHAPE["{problem.program.whole(d)}"] - SHAPE["{d}"])' for d in problem.program.tensor(src).dims
        )
        calls[function] = f"ttnn.pad({x}, [{pads}], 0, {memory})"
    if function == "ttnn.concat":
        axis = _concat_axis(problem)
        sources = ", ".join(f'tensors["{t}"]' for t in st.streamed)
        calls[function] = f"ttnn.concat([{sources}], {axis}, {memory})"
        ref = f"torch.cat([{', '.join(f'inputs[{t!r}].float()' for t in st.streamed)}], {axis})"
    if function == "ttnn.slice" and gathers(problem):
        step = _stride(problem, src, out)
        n = len(dims)
        calls[function] = f"ttnn.slice({x}, [0] * {n}, {whole}, [1] * {n - 1} + [{step}], {memory})"
        ref = f"{ref}[..., ::{step}]"
    elif function == "ttnn.transpose":
        ref = f"{ref}.transpose(-2, -1)"
    elif function == "ttnn.slice" or function == "ttnn.untilize_with_unpadding":
        ref = f"{ref}[" + ", ".join(f':SHAPE["{d}"]' for d in dims) + "]"
    elif function in ("ttnn.tilize_with_val_padding", "ttnn.pad"):
        pad = ", ".join(
            f'0, SHAPE["{problem.program.whole(d)}"] - SHAPE["{d}"]' for d in reversed(problem.program.tensor(src).dims)
        )
        ref = f"torch.nn.functional.pad({ref}, ({pad}))"
    row_major = [t.name for t in problem.program.tensors if t.layout == "row_major" and t.role == "input"]
    return _CALL.format(
        draws=", ".join(f'"{t}": torch.randn({_torch_shape(problem, t)}, dtype=torch.bfloat16)' for t in st.streamed),
        call=calls[function],
        value=ref,
        row_major=row_major,
    )


_CALL = '''\
ROW_MAJOR_INPUTS = {row_major}


def host_inputs():
    """The host tensors (torch, bfloat16) the call uploads."""
    return {{{draws}}}


def upload(inputs, configs, device):
    """The host inputs on ``device`` in their formats and memory configs: tiled, or row-major where the program
    reads a row-major tensor (this replaces the tiled-only upload above)."""
    return {{tensor: ttnn.from_torch(value, dtype=getattr(ttnn, DTYPES[tensor]),
                                    layout=ttnn.ROW_MAJOR_LAYOUT if tensor in ROW_MAJOR_INPUTS else ttnn.TILE_LAYOUT,
                                    device=device, memory_config=configs["memory"][tensor])
            for tensor, value in inputs.items()}}


def op(tensors, configs):
    """The ttnn call once, on uploaded ``tensors`` (DRAM-interleaved: ttnn splits the work itself)."""
    return {call}


def expected(inputs):
    return {value}
'''


def evaluate_sharded(hw: HardwareSpec, problem: Problem, split: ShardedSplit) -> Evaluated:
    """The referee's evaluation of ttnn's sharded split of ``problem`` (``ttnn_config.py``): its rows over
    ``split.cores`` cores (``ceil(rows / cores)`` each, the cores packed row by row on the chip's grid), every
    streamed buffer double-buffered. With the output in L1, a core's whole shard is one block (the reader fills a
    buffer bound to the whole shard: ``interleaved_to_sharded_program_factory.cpp`` @019b681e,
    ``ttnn_config.py``; the largest divisor of the share the L1 bound allows); with the output written to DRAM,
    one tile row a block (the writes stream, the last one drains). A split that fixes its block
    (``ShardedSplit.block_rows``) moves the largest divisor of the share up to it that L1 allows."""
    st = analyse_data_movement(problem.program)
    if len(st.dims) != 2:
        raise ConfigError(f"{problem.program.name}: the sharded split is modelled for [rows, columns] programs")
    if split.flat:
        return _evaluate_flat(hw, problem, split)
    rows = st.dims[0]
    per_core, gx, gy = _split_grid(hw, problem.tiles(rows), split.cores)
    candidate = Candidate(axes=(("xy", rows),), comms=tuple((t, Comm.dram) for t in st.streamed))
    schedule = build_schedule(hw, problem, candidate)
    block = 1
    if problem.placement(st.output).in_l1 or split.block_rows is not None:
        allowed = schedule.param("block_rows").var.values
        most = min(per_core, allowed.max, split.block_rows or per_core)
        block = max(v for v in range(1, most + 1) if per_core % v == 0 and v in allowed)
    values = {"grid_x": gx, "grid_y": gy, f"per_core_{rows}": per_core, "block_rows": block}
    values |= {p: 2 for p in schedule.param_names if p.endswith("_buffer_depth")}
    return evaluate_values(schedule, values)


def _split_grid(hw: HardwareSpec, units: int, cores: int) -> tuple[int, int, int]:
    """(units per core, grid_x, grid_y) of ``units`` dealt ``ceil(units / cores)`` a core over the cores they
    fill, row-major on the grid; a ConfigError when those cores do not fit it."""
    per_core = math.ceil(units / cores)
    used = math.ceil(units / per_core)
    gx = min(used, hw.grid.columns)
    gy = math.ceil(used / gx)
    if gy > hw.grid.rows:
        raise ConfigError(f"{cores} cores do not fit {hw.name}'s {hw.grid.columns}x{hw.grid.rows} grid")
    return per_core, gx, gy


def _evaluate_flat(hw: HardwareSpec, problem: Problem, split: ShardedSplit) -> Evaluated:
    """A split of every tile flattened over ``split.cores`` cores (``ceil(tiles / cores)`` each, in order), one
    tile a block, double-buffered: a reader that pushes each tile as it lands (the NLP create/concat heads
    readers, one tile per buffer slot; their tile rows dealt over the cores are runs of the flattened tiles)."""
    st = analyse_data_movement(problem.program)
    flat = "*".join(st.dims)
    per_core, gx, gy = _split_grid(hw, math.prod(problem.tiles(d) for d in st.dims), split.cores)
    candidate = Candidate(axes=(("xy", flat),), comms=tuple((t, Comm.dram) for t in st.streamed))
    schedule = build_schedule(hw, problem, candidate)
    values = {"grid_x": gx, "grid_y": gy, f"per_core_{flat}": per_core, "block": 1}
    values |= {p: 2 for p in schedule.param_names if p.endswith("_buffer_depth")}
    return evaluate_values(schedule, values)


def captured(hw: HardwareSpec, problem: Problem, call: CapturedCall) -> tuple[TtnnConfig | None, Evaluated]:
    """``TtnnOp.captured``: a row read with a sharded operand (``ShardedSplit``) costed as its sharded split,
    any other as ttnn's interleaved default."""
    if isinstance(call.config, ShardedSplit):
        return call.config, evaluate_sharded(hw, problem, call.config)
    return interleaved_captured(hw, problem, call)


OP = TtnnOp(
    "data_movement",
    no_program_config,
    _equivalent,
    _memory,
    _call,
    default=evaluate_interleaved_default,
    captured=captured,
    interleaved_default=interleaved_default,
)
"""The data-movement family's TTNN op (module docstring)."""
