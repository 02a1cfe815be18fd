"""Lower bounds of a per-chip problem's proven optimum that build no candidate's model.

The bound of a problem is the largest of three floors, each below the latency of every schedule of every
candidate the single-chip model prices (so below the optimum ``Session(...).solve`` proves):

* **compute** ``problem_ideal_cycles``: the compute roofline (``model/build.py``; ``latency_floor`` takes it
  for every candidate, and the families' tests check it on every legal schedule);
* **busiest core** (``core_cycles``, ``gemm`` and ``flash_attention`` only): the launch plus the work the
  busiest core does at least, its integer share of the problem's output tiles (or score tiles) priced with
  every per-tile cost the family charges on them, not only the tile matmuls (below);
* **DRAM** ``L + ceil(B / R)``: ``L`` the chip's ``compute.kernel_launch_cycles``, ``R`` its
  ``dram.chip_read_bytes_per_cycle``, ``B`` the bytes of the tensors the problem's family charges at the
  chip's shared DRAM rate, each counted once (``charged_tensors``).

**Why the DRAM floor holds.** Every family below adds the launch to the rest of its latency
(``T = L + ...``), and its rest is at least its total shared-DRAM charge:

* contraction (``gemm``; ``families/contraction/latency.py``): every K step is
  ``max(..., chip)``, ``chip = ceil(sum_X readers_X * B_X / R)`` over both matmul operands ``in0``, ``in1``,
  and the ``n_out * n_k`` steps of the slowest core bring every tile of both operands in at least once
  (``k_loop_lower_bound`` sums them the same way), so ``T >= L + ceil((B_in0 + B_in1) / R)``
  (``n * ceil(x / R) >= ceil(n * x / R)``). The output's write-back is at one core's write rate, not
  charged at ``R``, so it is not counted.
* attention (``flash_attention``; ``families/attention/latency.py``): ``T = common + steps * step`` with
  ``common >= L`` and ``step = max(..., chip)`` over the key and value chunks every reading core takes in a
  step; every key/value chunk of every key/value head is read by some core (the last query chunk of a
  head needs all of them, causal or not), so ``T >= L + ceil((B_k + B_v) / R)``. ``q`` is not counted.
* element-wise (``binary``, ``swiglu``; ``families/elementwise/latency.py``): its lower bound
  ``L + max(..., once + chip_floor) + drain`` charges every full-size input and every DRAM output at ``R``
  together (``dram_traffic_cycles``: a GDDR6 channel's one bus), so ``T >= L + ceil((inputs + outputs) / R)``.
* row reduction (``rmsnorm``; ``families/row_reduction/latency.py``): ``T = L + max(steady, shared)`` with
  ``shared = dram_floor_cycles``, every core's reads (the full-size input ``x`` at least once) and DRAM
  writes (``y``) at ``R``; ``gamma`` and ``eps`` are not counted.

**The busiest-core floor** is the family's ``ModelFamily.core_floor_cycles`` (the work the busiest core does
at least; its proof beside it: ``families/contraction/floors.py``, ``families/attention/floors.py``).

A tensor's bytes are its tiles (each dim's ``Dim.tiles``: tile-padded as the model pads them) times the
chip's ``tile_bytes`` of its format. The DRAM floor is skipped (compute only) for a problem with any tensor
not in DRAM (a sharded input need not be read from DRAM) or of another family. The floors are checked
against proven optima in ``tests/mesh/test_mesh_bounds.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from math import ceil, prod

from loom_explorer.hardware.schema import DataFormat, HardwareSpec
from loom_explorer.model.build import problem_ideal_cycles
from loom_explorer.model.families import model_family
from loom_explorer.problem import Placement, Problem
from loom_explorer.program import TileProgram


@dataclass(frozen=True, slots=True)
class ChipBound:
    """The floors of one per-chip problem, in cycles (module docstring); ``cycles`` the larger."""

    compute_cycles: int
    dram_cycles: int
    dram_bytes: int
    core_cycles: int = 0

    @property
    def cycles(self) -> int:
        return max(self.compute_cycles, self.dram_cycles, self.core_cycles)


def _full_size(problem: Problem, output: str) -> tuple[str, ...]:
    """The inputs with the output's dims, and the outputs (element-wise and row-reduction families)."""
    prog = problem.program
    dims = prog.tensor(output).dims
    ins = [t.name for t in prog.tensors if t.role == "input" and t.dims == dims and problem.is_enabled(t.name)]
    return (*ins, *(t.name for t in prog.tensors if t.role == "output"))


def charged_tensors(problem: Problem) -> tuple[str, ...]:
    """The tensors the problem's family charges at the chip's DRAM rate (module docstring); () when none
    is known to be (another family, or a tensor not in DRAM)."""
    prog = problem.program
    if any(problem.placement(t.name) is not Placement.dram for t in prog.tensors if t.role != "intermediate"):
        return ()
    family = model_family(prog).name
    outputs = [t.name for t in prog.tensors if t.role == "output"]
    if family == "contraction" and prog.name == "gemm":
        return ("in0", "in1")
    if family == "attention" and prog.name == "flash_attention":
        return ("k", "v")
    if family in ("elementwise", "row_reduction") and prog.name in ("binary", "swiglu", "rmsnorm"):
        return _full_size(problem, outputs[0])
    return ()


def tiled_bytes(hw: HardwareSpec, program: TileProgram, tensor: str, shape: Mapping[str, int], fmt: DataFormat) -> int:
    """Bytes of ``program``'s ``tensor`` at extents ``shape`` in ``fmt``: its tiles, ``prod_d ceil(shape[d] /
    tile_d)`` over its dims (``Dim.tiles``: each dim tile-padded, as the model pads it), times the chip's
    ``tile_bytes`` of ``fmt``. No problem is built: the DRAM capacity of every split (``capacity.py``) reads it."""
    t = program.tensor(tensor)
    return prod(program.dim(d).tiles(shape[d]) for d in t.dims) * hw.tile_bytes[fmt]


def tensor_bytes(hw: HardwareSpec, problem: Problem, tensor: str) -> int:
    """Bytes of ``tensor`` of ``problem`` in DRAM (``tiled_bytes`` at the problem's shape and format)."""
    return tiled_bytes(hw, problem.program, tensor, dict(problem.shape), problem.data_format(tensor))


def _rate(bytes_per_cycle: float) -> Fraction:
    return Fraction(bytes_per_cycle).limit_denominator(1000)  # as ``ceil_rate`` takes it


def core_cycles(hw: HardwareSpec, problem: Problem) -> int:
    """The busiest core's floor of the problem's family (``ModelFamily.core_floor_cycles``); 0 when it has none."""
    floor = model_family(problem.program).core_floor_cycles
    return floor(hw, problem) if floor is not None else 0


def chip_bound(hw: HardwareSpec, problem: Problem) -> ChipBound:
    """The compute, busiest-core and DRAM floors of ``problem`` on ``hw`` (module docstring)."""
    compute = problem_ideal_cycles(hw, problem)
    core = core_cycles(hw, problem)
    charged = charged_tensors(problem)
    if not charged:
        return ChipBound(compute, 0, 0, core)
    nbytes = sum(tensor_bytes(hw, problem, t) for t in charged)
    dram = hw.compute.kernel_launch_cycles + ceil(nbytes / _rate(hw.dram.chip_read_bytes_per_cycle))
    return ChipBound(compute, dram, nbytes, core)
