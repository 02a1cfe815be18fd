"""An element-wise schedule as the TTNN op that runs it on L1-sharded tensors.

TTNN's element-wise ops take no program config: on DRAM-interleaved tensors they deal the tiles over the
whole grid themselves (``predict --ttnn-default`` costs that), and on sharded tensors every core computes
the shard it holds. So a schedule is pinned on the card by its memory configs alone, and only a schedule
whose every ``[R, C]`` tensor is L1-sharded as its candidate splits them (``targets/ttnn/sharding.py::grid_shard``:
``l1_height`` on ``R@xy``, ``l1_width`` on ``C@xy``, ``l1_block`` on ``R@y,C@x``) is exported; a DRAM tensor
is refused with the ``--memory`` that would pin it.

The program must be one TTNN op (``elementwise_call``):

- one SFPU op ``y = f(x)``: the unary op ``ttnn.<f>`` (``recip`` is ``ttnn.reciprocal``);
- one FPU op ``y = a (+|-|*) b``: ``ttnn.add`` / ``subtract`` / ``multiply`` (``binary_ng``);
- an SFPU op on ``a`` then one FPU op with ``b``, ``y = f(a) * b`` (SwiGLU): the binary op with ``f`` fused as
  ``input_tensor_a_activations=[ttnn.UnaryOpType.F]``, as Llama's MLP calls it.

Inputs indexed by fewer dimensions (a broadcast row, column or scalar) are refused: TTNN's sharded binary op
needs both operands sharded alike. TTNN computes a core's whole shard at once, so the schedule's block sides
and buffer depths do not reach the card; the file's ``NOTES`` say so.

ttnn's default on DRAM-interleaved tensors (``interleaved_default``, costed by ``targets/ttnn/defaults.py``, whose
docstring gives the sources): a unit is one output tile, dealt out row-major (the flattened ``H*W@xy``
candidate, every input read from DRAM by the core that needs it), one tile per read-compute-write cycle
(``block = 1``), 2 tiles in every input's circular buffer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from loom_explorer.export.exporter import ExportError
from loom_explorer.families.elementwise.program import analyse_elementwise
from loom_explorer.families.elementwise.sharded import ShardedElementwise, evaluate_sharded
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.problem import Problem
from loom_explorer.program.dsl import Eltwise
from loom_explorer.targets.ttlang.ops import FPU_OPS, POSITIVE_DOMAIN, SFPU_OPS, op_name
from loom_explorer.targets.ttnn.config import TtnnConfig
from loom_explorer.targets.ttnn.defaults import evaluate_interleaved_default, interleaved_captured
from loom_explorer.targets.ttnn.evaluate import Evaluated
from loom_explorer.targets.ttnn.op import CapturedCall, InterleavedSplit, TtnnOp, no_program_config
from loom_explorer.targets.ttnn.sharding import grid_shard

BINARY_OPS = {"add": "ttnn.add", "sub": "ttnn.subtract", "mul": "ttnn.multiply"}
"""TTNN's binary op for each FPU op."""

UNARY_OPS = {name: f"ttnn.{'reciprocal' if name == 'recip' else name}" for name in SFPU_OPS}
"""TTNN's unary op for each SFPU op the TT-Lang writer knows."""


@dataclass(frozen=True, slots=True)
class ElementwiseCall:
    """One TTNN call for an element-wise program: ``function(first[, second])``, with ``sfpu`` the unary op
    (or, beside an FPU op, the one fused onto ``first``) and ``fpu`` the binary op."""

    function: str  # e.g. "ttnn.multiply"
    first: str  # the tensor the chain starts from (unary: its input)
    second: str | None  # the FPU op's operand
    sfpu: str | None
    fpu: str | None


def elementwise_call(problem: Problem) -> ElementwiseCall:
    """The single TTNN call that computes ``problem``'s program (module docstring); ExportError naming what
    does not fit."""
    st = analyse_elementwise(problem.program)
    name, ops = problem.program.name, st.ops
    if st.broadcast:
        raise ExportError(
            f"{name} broadcasts {', '.join(st.broadcast)}; TTNN's sharded element-wise ops need every "
            "operand sharded like the output, so this export covers inputs of the output's shape"
        )
    for op in ops:
        if op.unit == "sfpu" and op_name(problem, op) not in UNARY_OPS:
            raise ExportError(f"{name} applies {op_name(problem, op)!r}; TTNN export knows {', '.join(UNARY_OPS)}")
    last = ops[-1]
    if len(ops) == 1 and last.unit == "sfpu" and last.operand in st.full:
        f = op_name(problem, last)
        return ElementwiseCall(UNARY_OPS[f], last.operand, None, f, None)
    fused = ops[0] if len(ops) == 2 and ops[0].unit == "sfpu" else None
    if last.unit == "fpu" and last.op in BINARY_OPS and len(ops) == 1 + (fused is not None):
        first = fused.operand if fused else _start(st.full, last)
        if first in st.full and last.operand in st.full and first != last.operand:
            return ElementwiseCall(
                BINARY_OPS[last.op], first, last.operand, op_name(problem, fused) if fused else None, last.op
            )
    raise ExportError(
        f"{name} is not one TTNN element-wise op (y = f(x), y = a op b, or y = f(a) op b with op "
        f"{', '.join(BINARY_OPS)})"
    )


def _start(inputs: tuple[str, ...], op: Eltwise) -> str | None:
    """The tensor a lone FPU op's chain starts from: its ``source``, else the one input it does not name."""
    if op.source:
        return op.source
    others = [t for t in inputs if t != op.operand]
    return others[0] if len(others) == 1 else None


def _equivalent(schedule: SymbolicSchedule, v: dict[str, int]) -> tuple[str | None, dict[str, object], list[str]]:
    elementwise_call(schedule.problem)
    _memory(schedule, v)
    notes = [
        "TTNN computes each core's whole shard in one block; the schedule's block sides and buffer depths "
        "are not passed to the card"
    ]
    return None, {}, notes


def _memory(schedule: SymbolicSchedule, v: dict[str, int]) -> dict[str, object]:
    problem, cand = schedule.problem, schedule.candidate
    st = analyse_elementwise(problem.program)
    r, c = st.dims
    memory: dict[str, object] = {}
    for tensor in (*st.full, *st.outputs):
        placement = problem.placement(tensor)
        if not placement.in_l1:
            raise ExportError(
                f"{tensor}=dram: on DRAM-interleaved tensors TTNN's element-wise ops split the tiles "
                "over the whole grid themselves (`predict --ttnn-default` costs that), so only "
                f"L1-sharded operands pin this schedule: place every tensor with --memory "
                f"{tensor}=l1_height|l1_width|l1_block as candidate {cand.name} splits them"
            )
        try:
            memory[tensor] = grid_shard(placement, cand, (r, problem.tiles(r)), (c, problem.tiles(c)), v)
        except ValueError as exc:
            raise ExportError(f"{tensor}={placement.value}: {exc}") from None
    return memory


def _call(schedule: SymbolicSchedule) -> str:
    problem = schedule.problem
    call = elementwise_call(problem)
    st = analyse_elementwise(problem.program)
    r, c = st.dims
    inputs = [t for t in (call.first, call.second) if t]
    draws = ", ".join(f'"{t}": {_draw(call, t, r, c)}' for t in inputs)
    args = ", ".join(f'tensors["{t}"]' for t in inputs)
    fused = f", input_tensor_a_activations=[ttnn.UnaryOpType.{call.sfpu.upper()}]" if call.fpu and call.sfpu else ""
    value = f'inputs["{call.first}"].float()'
    if call.sfpu:
        value = f"{SFPU_OPS[call.sfpu]}({value})"
    if call.fpu:
        value = f'({value} {FPU_OPS[call.fpu]} inputs["{call.second}"].float())'
    return _CALL.format(draws=draws, function=call.function, args=args, fused=fused, out=st.output, value=value)


def _draw(call: ElementwiseCall, tensor: str, r: str, c: str) -> str:
    """A host input's source text: uniform on [0.5, 2) where the op needs positive values, else normal."""
    shape = f'(SHAPE["{r}"], SHAPE["{c}"])'
    if tensor == call.first and call.sfpu in POSITIVE_DOMAIN:
        return f"torch.rand({shape}, dtype=torch.bfloat16) * 1.5 + 0.5"
    return f"torch.randn({shape}, dtype=torch.bfloat16)"


BUFFER_TILES = 2  # binary_ng's and unary's input circular buffers (tiles)


def _ttnn_op(problem: Problem) -> tuple[str, str]:
    """(ttnn op, program) of an element-wise program: one SFPU op is a unary op; one FPU add, subtract or
    multiply is ``binary_ng``, SFPU ops before it fused as ``input_tensor_a_activations`` (SwiGLU's
    ``ttnn.multiply(a, b, input_tensor_a_activations=[SILU])``) and after it as ``activations``."""
    ops = analyse_elementwise(problem.program).ops
    if problem.program.name == "rotary":
        return "ttnn.experimental.rotary_embedding_llama", "rotary_embedding_llama multi-core, interleaved"

    def name(op: Eltwise) -> str:
        return (problem.activation or op.op) if op.op == "activation" else op.op

    fpu = [i for i, op in enumerate(ops) if op.unit == "fpu"]
    if not fpu and len(ops) == 1:
        return f"ttnn.{name(ops[0])}", "unary, interleaved"
    if len(fpu) == 1 and ops[fpu[0]].op in BINARY_OPS:
        before, after = ops[: fpu[0]], ops[fpu[0] + 1 :]
        extra = "".join(
            f", {what}=[{', '.join(name(op).upper() for op in group)}]"
            for what, group in (("input_tensor_a_activations", before), ("activations", after))
            if group
        )
        return BINARY_OPS[ops[fpu[0]].op], f"binary_ng, interleaved{extra}"
    return "ttnn element-wise ops", "binary_ng/unary split, interleaved"


def interleaved_default(problem: Problem) -> InterleavedSplit:
    """ttnn's default of an element-wise ``problem``: every output tile, flattened row-major, one tile per
    cycle (module docstring)."""
    est = analyse_elementwise(problem.program)
    op, program = _ttnn_op(problem)
    return InterleavedSplit(
        op=op,
        program=program,
        unit="tile",
        units=math.prod(problem.tiles(d) for d in est.dims),
        group="*".join(est.dims),
        streamed=tuple(est.streamed),
        block="block",
        buffer_depth=BUFFER_TILES,
    )


def captured(hw: HardwareSpec, problem: Problem, call: CapturedCall) -> tuple[TtnnConfig | None, Evaluated]:
    """``TtnnOp.captured``: an op run on a sharded output on its shard grid (``sharded.py``), else ttnn's
    interleaved default."""
    if isinstance(call.config, ShardedElementwise):
        return call.config, evaluate_sharded(hw, problem, call.config)
    return interleaved_captured(hw, problem, call)


OP = TtnnOp(
    "elementwise",
    no_program_config,
    _equivalent,
    _memory,
    _call,
    default=evaluate_interleaved_default,
    captured=captured,
    interleaved_default=interleaved_default,
)
"""The element-wise family's TTNN op (module docstring)."""


_CALL = '''\
def host_inputs():
    """The host tensors (torch, bfloat16) the call uploads."""
    return {{{draws}}}


def op(tensors, configs):
    """The TTNN call once, on uploaded ``tensors`` (sharded: no program config); returns its device output."""
    return {function}({args}{fused}, memory_config=configs["memory"]["{out}"])


def expected(inputs):
    return {value}
'''
