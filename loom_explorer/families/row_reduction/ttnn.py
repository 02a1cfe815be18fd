"""A row-reduction schedule as TTNN's sharded norm or softmax: ``LayerNormShardedMultiCoreProgramConfig`` for
``ttnn.rms_norm`` / ``ttnn.layer_norm``, ``SoftmaxShardedMultiCoreProgramConfig`` for ``ttnn.softmax_in_place``.

Which op: a program is TTNN's when its ops are, up to tensor names, exactly those of the shipped ``rmsnorm``,
``layernorm`` or ``softmax`` kernel (``row_reduction_op``: same ops in the same order, same units, same
operands, tensors of the same kinds). The scalar ``eps`` becomes the call's ``epsilon`` (``EPSILON`` in the
file), ``gamma`` its ``weight`` and ``beta`` its ``bias``, which TTNN reads DRAM-interleaved on every core:
a candidate that multicasts them is refused, as it would measure another schedule.

Which layout (TTNN's validation in ``layernorm_device_operation.cpp`` and ``softmax_device_operation.cpp``):

- norms take a width- or block-sharded input and write the output sharded alike, so ``x`` and ``y`` must
  both be ``l1_width`` on ``W@xy`` (the 1-D "mcast" form: ``block_h = Ht``, ``block_w = Wt / cores``, the
  partial sums gathered to the first core and multicast back, as the schedule's gather does) or both
  ``l1_block`` on ``H@y,W@x`` (``block_h = Ht / grid_y``, ``block_w = Wt / grid_x``);
- softmax takes a height-sharded input in place (``y`` is ``x``'s buffer), whole rows per core
  (``block_w = Wt``), and the shards must fill ``compute_with_storage_grid_size`` exactly: ``x`` and ``y``
  ``l1_height`` on ``H@xy`` with ``Ht = per_core_H * grid_x * grid_y``, the input a 4-D ``[1, 1, H, W]``.

Both need whole tiles (``H`` and ``W`` multiples of 32) and even shards; ``subblock_w`` is the largest
divisor of ``block_w`` the destination registers hold (8 tiles, 4 with fp32 accumulation). TTNN computes a
whole shard at once, so the schedule's ``block_h`` and buffer depths do not reach the card (``NOTES``).

ttnn's default on DRAM-interleaved tensors (``interleaved_default``, costed by ``targets/ttnn/defaults.py``,
whose docstring gives the sources): a unit is one tile row, the rows over a 1-D layout (``H@xy``, whole rows per
core, every input read from DRAM), one tile row at a time (``block_h = 1``), one block (the whole row) in every
input's buffer. ``ttnn.experimental.fast_reduce_nc`` (the ``reduce_nc`` kernel: a lone sum over a ``tile=1``
dimension of rows of ``tile=1``) splits the same way: ``split_work_to_cores`` over its output tiles, each core
summing all the reduced input tiles of each of its output tiles
(``ttnn/cpp/ttnn/operations/experimental/reduction/fast_reduce_nc/device/fast_reduce_nc_program_factory.cpp``
@ 03725f262db70230eacdd7eb082878fe07cdf2de).
"""

from __future__ import annotations

from dataclasses import dataclass

from loom_explorer.export.exporter import ExportError
from loom_explorer.families.row_reduction.groupnorm import GroupNormConfig, evaluate_group_norm
from loom_explorer.families.row_reduction.program import analyse_row_reduction
from loom_explorer.families.row_reduction.signature import is_group_norm, shipped_signature, signature
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.candidate import Comm
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.problem import Placement, Problem
from loom_explorer.program.dsl import Eltwise, Reduce, TileProgram
from loom_explorer.targets.ttnn.config import TtnnConfig
from loom_explorer.targets.ttnn.defaults import TtnnDefaultOp, evaluate_interleaved_default, interleaved_captured
from loom_explorer.targets.ttnn.evaluate import ConfigError, Evaluated
from loom_explorer.targets.ttnn.op import CapturedCall, InterleavedSplit, TtnnOp, no_program_config
from loom_explorer.targets.ttnn.sharding import DRAM, TILE, grid_shard

NORM_CONFIG = "LayerNormShardedMultiCoreProgramConfig"
SOFTMAX_CONFIG = "SoftmaxShardedMultiCoreProgramConfig"
EPSILON = 1e-5  # the file's epsilon (the DSL's eps tensor is a runtime value)
DST_TILES = 8  # destination-register tiles a subblock may use (4 with fp32 accumulation)


@dataclass(frozen=True, slots=True)
class RowReductionOp:
    """TTNN's op for a row-reduction program: the shipped kernel it matches and the program's tensor for
    each of that kernel's tensor names (``x``, ``y``, ``gamma``, ``beta``, ``eps``)."""

    kernel: str  # "rmsnorm", "layernorm" or "softmax"
    tensors: tuple[tuple[str, str], ...]  # (shipped name, this program's name)

    def tensor(self, shipped: str) -> str:
        return dict(self.tensors)[shipped]

    @property
    def function(self) -> str:
        return {"rmsnorm": "ttnn.rms_norm", "layernorm": "ttnn.layer_norm"}.get(self.kernel, "ttnn.softmax_in_place")

    @property
    def config_class(self) -> str:
        return SOFTMAX_CONFIG if self.kernel == "softmax" else NORM_CONFIG


_KERNELS = ("rmsnorm", "layernorm", "softmax")
GROUP_NORM_EXPORT = (
    "ttnn.group_norm takes x as [N, 1, HW, C] with the groups' channels side by side in its tiles; this "
    "kernel's rows are the groups (x[G, E], a re-indexing of those channels), so no memory config of x can "
    "be written from its schedule"
)


def row_reduction_op(program: TileProgram) -> RowReductionOp | None:
    """The TTNN op whose shipped kernel ``program`` matches up to tensor names (module docstring), or None."""
    ops, names = signature(analyse_row_reduction(program))
    for kernel in _KERNELS:
        shipped_ops, shipped_names = shipped_signature(kernel)
        if ops == shipped_ops:
            return RowReductionOp(kernel, tuple(zip(shipped_names, names, strict=True)))
    return None


def _op(problem: Problem) -> RowReductionOp:
    op = row_reduction_op(problem.program)
    if op is None and is_group_norm(problem.program):
        raise ExportError(GROUP_NORM_EXPORT)
    if op is None:
        raise ExportError(
            f"{problem.program.name} is not TTNN's softmax, rms_norm or layer_norm (its ops differ "
            "from the shipped softmax, rmsnorm and layernorm kernels'), so TTNN has no op for it"
        )
    return op


def _equivalent(schedule: SymbolicSchedule, v: dict[str, int]) -> tuple[str | None, dict[str, object], list[str]]:
    problem = schedule.problem
    op = _op(problem)
    memory = _memory(schedule, v)
    shard = memory[op.tensor("x")]
    assert isinstance(shard, dict)
    block_h, block_w = (side // TILE for side in shard["shard_shape"])
    limit = DST_TILES // 2 if problem.fp32_acc else DST_TILES
    subblock_w = max(d for d in range(1, min(block_w, limit) + 1) if block_w % d == 0)
    args: dict[str, object] = {
        "compute_with_storage_grid_size": [v["grid_x"], v["grid_y"]],
        "subblock_w": subblock_w,
        "block_h": block_h,
        "block_w": block_w,
    }
    if op.kernel != "softmax":
        args["inplace"] = False
    notes = ["TTNN holds each core's shard whole; the schedule's buffer depths are not passed to the card"]
    if v["block_h"] != block_h:
        notes.append(
            f"TTNN computes the shard's {block_h} tile rows in one block; the schedule chose block_h={v['block_h']}"
        )
    if "eps" in dict(op.tensors):
        notes.append(f"eps is the call's epsilon={EPSILON}, not a tensor")
    return op.config_class, args, notes


def _memory(schedule: SymbolicSchedule, v: dict[str, int]) -> dict[str, object]:
    problem, cand = schedule.problem, schedule.candidate
    st = analyse_row_reduction(problem.program)
    op = _op(problem)
    x, y = op.tensor("x"), op.tensor("y")
    r, c = st.rows_dim, st.cols_dim
    wanted = (
        (Placement.l1_height, f"{r}@xy")
        if op.kernel == "softmax"
        else (Placement.l1_width, f"{c}@xy")
        if cand.is_1d
        else (Placement.l1_block, f"{r}@y,{c}@x")
    )
    for tensor in (x, y):
        if problem.placement(tensor) is not wanted[0]:
            raise ExportError(
                f"{tensor}={problem.placement(tensor).value}: {op.function} runs this schedule only on "
                f"{wanted[0].value} {x} and {y} (candidate {wanted[1]}); on DRAM-interleaved "
                "tensors it splits the rows over the whole grid itself (`predict --ttnn-default` "
                "costs that)"
            )
    for dim in (r, c):
        if problem.elements(dim) % TILE:
            raise ExportError(
                f"{dim}={problem.elements(dim)}: TTNN's sharded {op.kernel} needs whole tiles "
                f"({dim} a multiple of {TILE})"
            )
    try:
        shard = grid_shard(wanted[0], cand, (r, problem.tiles(r)), (c, problem.tiles(c)), v)
    except ValueError as exc:
        raise ExportError(f"{x}={wanted[0].value}: {exc}") from None
    if op.kernel == "softmax" and problem.tiles(r) != v[f"per_core_{r}"] * v["grid_x"] * v["grid_y"]:
        raise ExportError(
            f"TTNN's sharded softmax needs one shard per core of its {v['grid_x']}x{v['grid_y']} grid; "
            f"{problem.tiles(r)} tile rows in shards of {v[f'per_core_{r}']} do not fill it"
        )
    memory: dict[str, object] = {x: shard, y: shard}
    for shipped in ("gamma", "beta"):
        vector = dict(op.tensors).get(shipped)
        if vector is not None:
            if problem.placement(vector).in_l1 or cand.comm(vector) is not Comm.dram:
                raise ExportError(
                    f"{op.function} reads its {shipped} ({vector}) DRAM-interleaved on every core; "
                    f"candidate {cand.name} does not, so it would measure another schedule"
                )
            memory[vector] = DRAM
    return memory


def _call(schedule: SymbolicSchedule) -> str:
    problem = schedule.problem
    op = _op(problem)
    st = analyse_row_reduction(problem.program)
    r, c = st.rows_dim, st.cols_dim
    names = dict(op.tensors)
    x, y = names["x"], names["y"]
    if op.kernel == "softmax":
        # ttnn's softmax_in_place defaults to numeric_stable=False; the model costs the stable kernel unless the
        # problem has the option unstable (``work.skips_max``), so the call says which it ran
        return _SOFTMAX_CALL.format(x=x, r=r, c=c, stable=not problem.has_option("unstable"))
    vectors = [(role, names[shipped]) for role, shipped in (("weight", "gamma"), ("bias", "beta")) if shipped in names]
    draws = "".join(f', "{t}": torch.randn((1, SHAPE["{c}"]), dtype=torch.bfloat16)' for _, t in vectors)
    kwargs = "".join(f', {role}=tensors["{t}"]' for role, t in vectors)
    value = (
        "x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPSILON)"
        if op.kernel == "rmsnorm"
        else "(x - x.mean(-1, keepdim=True)) * torch.rsqrt(x.var(-1, unbiased=False, keepdim=True) + EPSILON)"
    )
    value += "".join(f' {"*" if role == "weight" else "+"} inputs["{t}"].float()' for role, t in vectors)
    return _NORM_CALL.format(
        x=x, y=y, r=r, c=c, draws=draws, function=op.function, kwargs=kwargs, value=value, epsilon=EPSILON
    )


BUFFER_BLOCKS = 1  # the interleaved norm/softmax factories hold one whole tile row per input
DEFAULT_NORM_PROGRAM = "interleaved, LayerNormDefaultProgramConfig"
DEFAULT_SOFTMAX_PROGRAM = "interleaved, SoftmaxDefaultProgramConfig"
DEFAULT_FAST_REDUCE_NC_PROGRAM = "interleaved, output tiles split over the cores"


def _ttnn_op(problem: Problem) -> tuple[str, str]:
    """(ttnn op, program) of a row reduction: a max then a sum around ``exp`` is ``ttnn.softmax``; one mean
    then ``rsqrt`` ``ttnn.rms_norm``; two means then ``rsqrt`` ``ttnn.layer_norm``; a lone sum of whole tiles
    (both dimensions ``tile=1``) ``ttnn.experimental.fast_reduce_nc``; any other the same split under a generic
    name."""
    st = analyse_row_reduction(problem.program)
    reductions = [op.op for op in st.ops if isinstance(op, Reduce)]
    whole_tiles = all(problem.program.dim(d).tile == 1 for d in st.dims)
    if whole_tiles and [op.op if isinstance(op, Reduce) else "eltwise" for op in st.ops] == ["sum"]:
        return "ttnn.experimental.fast_reduce_nc", DEFAULT_FAST_REDUCE_NC_PROGRAM
    sfpu = {op.op for op in st.ops if isinstance(op, Eltwise) and op.unit == "sfpu"}
    if reductions == ["max", "sum"] and "exp" in sfpu:
        return "ttnn.softmax", DEFAULT_SOFTMAX_PROGRAM
    if reductions == ["mean"] and "rsqrt" in sfpu:
        return "ttnn.rms_norm", DEFAULT_NORM_PROGRAM
    if reductions == ["mean", "mean"] and "rsqrt" in sfpu:
        return "ttnn.layer_norm", DEFAULT_NORM_PROGRAM
    return "ttnn row reduction", DEFAULT_NORM_PROGRAM


def interleaved_default(problem: Problem) -> InterleavedSplit:
    """ttnn's default of a row-reduction ``problem``: every tile row, whole rows per core, one row at a time
    (module docstring)."""
    rst = analyse_row_reduction(problem.program)
    op, program = _ttnn_op(problem)
    return InterleavedSplit(
        op=op,
        program=program,
        unit="tile row",
        units=problem.tiles(rst.rows_dim),
        group=rst.rows_dim,
        streamed=tuple(rst.streamed),
        block="block_h",
        buffer_depth=BUFFER_BLOCKS,
    )


def _default(hw: HardwareSpec, problem: Problem) -> tuple[TtnnDefaultOp, Evaluated]:
    """ttnn's interleaved default (module docstring); a group norm has none the model reproduces from the
    kernel's shape."""
    if is_group_norm(problem.program):
        raise ConfigError(
            "ttnn.group_norm's split depends on the tensor's channels, groups and the config's grid, which "
            "the groupnorm kernel's [G, E] shape does not give; `ingest` costs a profiler row's split"
        )
    return evaluate_interleaved_default(hw, problem)


def _captured(hw: HardwareSpec, problem: Problem, call: CapturedCall) -> tuple[TtnnConfig | None, Evaluated]:
    """A group norm's split as it ran (``groupnorm.py``), else the interleaved default's evaluation."""
    if isinstance(call.config, GroupNormConfig):
        return call.config, evaluate_group_norm(hw, problem, call.config)
    return interleaved_captured(hw, problem, call)


OP = TtnnOp(
    "row_reduction",
    no_program_config,
    _equivalent,
    _memory,
    _call,
    default=_default,
    captured=_captured,
    interleaved_default=interleaved_default,
)
"""The row-reduction family's TTNN op (module docstring)."""


_NORM_CALL = '''\
EPSILON = {epsilon}


def host_inputs():
    """The host tensors (torch, bfloat16) the call uploads."""
    return {{"{x}": torch.randn((SHAPE["{r}"], SHAPE["{c}"]), dtype=torch.bfloat16){draws}}}


def op(tensors, configs):
    """The TTNN call once, on uploaded ``tensors``; returns its device output (sharded like the input)."""
    return {function}(tensors["{x}"], epsilon=EPSILON{kwargs}, program_config=configs["program"],
                      compute_kernel_config=configs["compute"], memory_config=configs["memory"]["{y}"])


def expected(inputs):
    x = inputs["{x}"].float()
    return {value}
'''

_SOFTMAX_CALL = '''\
def host_inputs():
    """The host tensors (torch, bfloat16) the call uploads: a 4-D input, as the sharded softmax reads shape[3]."""
    return {{"{x}": torch.randn((1, 1, SHAPE["{r}"], SHAPE["{c}"]), dtype=torch.bfloat16)}}


def op(tensors, configs):
    """The TTNN call once, on the uploaded input it overwrites (the output is the input's sharded buffer)."""
    return ttnn.softmax_in_place(tensors["{x}"], program_config=configs["program"],
                                 compute_kernel_config=configs["compute"], numeric_stable={stable})


def expected(inputs):
    return torch.softmax(inputs["{x}"].float(), dim=-1)
'''
