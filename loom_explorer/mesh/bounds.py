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

**Why the busiest-core floor holds.** ``C`` the chip's cores (``grid.cores``), ``L`` the launch, ``c_f`` a tile
matmul at the problem's fidelity, ``c_p`` a tile pack.

* gemm (``families/contraction/latency.py``), ``W = B*Mt*Nt*Kt`` tile matmuls, ``O = B*Mt*Nt`` output tiles,
  the output in DRAM: a core with ``o = pb*pm*pn`` output tiles (partial ones under split-K) and ``pk`` K
  tiles takes ``T >= L + n_out*n_k*mm + write(o)``: ``T = L + fill + n_out*(n_k*step + epilogue + write_back)``
  with ``n_out`` blocks of ``out_block_h*out_block_w`` tiles (``n_out*out_block_h*out_block_w = o``) each
  written at ``write_back >= ceil(bytes / w_core) + L_write``, or under split-K the reducing core's
  ``write_back`` of its ``o`` tiles in the tail; ``step >= mm >= out_block_h*out_block_w*(in0_block_w*c_f
  + c_p)``, ``n_k >= 1``, so ``n_out*n_k*mm >= o*pk*c_f + o*c_p``, and ``n*ceil(x/w) >= ceil(n*x/w)``. Every
  tile matmul and every output tile is some core's, so the busiest core has ``o*pk >= ceil(W/C)`` and
  ``o >= ceil(O/C)``: ``T >= L + ceil(W/C)*c_f + ceil(O/C)*c_p + ceil(ceil(O/C)*b_out/w_core) + L_write``.
* flash_attention (``families/attention/latency.py``): ``T >= L + steps*step`` and
  ``step >= qk + sm + pv``; per step of ``qc x kc`` score tiles ``qk >= qc*kc*(D_t*c_f + c_p)``,
  ``pv >= qc*kc*D_t*c_f`` (each matmul's ``max(tile math, unpack)`` is at least its tile math) and ``sm`` at
  least its ops on the scores (``qc*kc`` tiles each, ``round(cost*f_kernel)``; the statistics and output
  ops left out). So ``T >= L + S*w`` with ``S = steps*qc*kc`` the score tiles the core computes and
  ``w = 2*D_t*c_f + c_p + sum_score_ops round(cost*f)`` (``c_f`` and ``f`` the smallest the kernels could
  take: HiFi4 for ttnn's accurate recipe, each ttnn kernel's softmax scale). Every (batch, head)'s score
  tiles on or below the causal diagonal (all of them when not causal: ``attention_work``'s tile pairs) are
  computed by some core's steps, so the busiest core has ``S >= ceil(pairs/C)``.

A tensor's bytes are its tiles (each dim's ``Dim.tiles``: tile-padded as the model pads them) times the
chip's ``tile_bytes`` of its format. The floor is skipped (compute only) for a problem with any tensor not
in DRAM (a sharded input need not be read from DRAM) or of another family. Both floors are checked against
proven optima in ``tests/mesh/test_mesh_bounds.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import ceil, prod

from loom_explorer.families.attention.model import attention_work
from loom_explorer.families.attention.program import analyse_attention
from loom_explorer.families.contraction.model import contraction_work
from loom_explorer.families.contraction.program import analyse_contraction
from loom_explorer.hardware.schema import Fidelity, HardwareSpec
from loom_explorer.model.build import problem_ideal_cycles
from loom_explorer.model.families import model_family
from loom_explorer.model.latency import eltwise_op_cycles
from loom_explorer.problem import Placement, Problem


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


def tensor_bytes(hw: HardwareSpec, problem: Problem, tensor: str) -> int:
    """Bytes of ``tensor`` in DRAM: its tiles (every dim tile-padded) times a tile of its format."""
    t = problem.program.tensor(tensor)
    return prod(problem.tiles(d) for d in t.dims) * hw.tile_bytes[problem.data_format(tensor)]


def _rate(bytes_per_cycle: float) -> Fraction:
    return Fraction(bytes_per_cycle).limit_denominator(1000)  # as ``ceil_rate`` takes it


def gemm_core_cycles(hw: HardwareSpec, problem: Problem) -> int:
    """The busiest core's floor of a gemm whose output is in DRAM (module docstring); 0 otherwise."""
    out = analyse_contraction(problem.program).matmul.out
    if problem.placement(out) is not Placement.dram:
        return 0
    c, cores = hw.compute, hw.grid.cores
    tile_matmuls = contraction_work(problem)[1]
    out_tiles = -(-prod(problem.tiles(d) for d in problem.program.tensor(out).dims) // cores)
    write = ceil(out_tiles * hw.tile_bytes[problem.data_format(out)] / _rate(hw.dram.core_write_bytes_per_cycle))
    matmuls = -(-tile_matmuls // cores) * c.matmul_tile_cycles[problem.fidelity]
    return c.kernel_launch_cycles + matmuls + out_tiles * c.tile_pack_cycles + write + hw.dram.write_latency_cycles


def attention_core_cycles(hw: HardwareSpec, problem: Problem) -> int:
    """The busiest core's floor of flash attention (module docstring)."""
    st = analyse_attention(problem.program)
    c = hw.compute
    head_tiles = problem.tiles(st.head_dim)
    pairs = attention_work(problem, problem.has_option("causal"))[1] // (2 * head_tiles)
    c_f = min(c.matmul_tile_cycles[problem.fidelity], c.matmul_tile_cycles[Fidelity.hifi4])
    scale = min([1.0, *c.sdpa_softmax_scale.values()])
    softmax = 0
    for op in st.step_ops("step"):
        dims = problem.program.tensor(op.tensor).dims
        if st.q_dim in dims and st.kv_dim in dims:  # a score tensor: qc*kc tiles a step (times D_t if it has it)
            per_score = head_tiles if st.head_dim in dims else 1
            softmax += per_score * round(eltwise_op_cycles(hw, problem, op) * scale)
    per_score_tile = 2 * head_tiles * c_f + c.tile_pack_cycles + softmax
    return c.kernel_launch_cycles + -(-pairs // hw.grid.cores) * per_score_tile


def core_cycles(hw: HardwareSpec, problem: Problem) -> int:
    """The busiest core's floor (module docstring) for a gemm or flash attention; 0 for other kernels."""
    if problem.program.name == "gemm" and model_family(problem.program).name == "contraction":
        return gemm_core_cycles(hw, problem)
    if problem.program.name == "flash_attention" and model_family(problem.program).name == "attention":
        return attention_core_cycles(hw, problem)
    return 0


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
