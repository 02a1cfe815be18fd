"""The attention family's TTNN op (``OP``): ttnn's SDPA, ``ttnn.transformer.scaled_dot_product_attention`` with an
``SDPAProgramConfig``, for the flattened ``...@xy|q=dram,k=dram,v=dram`` candidate (B x H x Sq dealt over the
cores).

Any L1 operand is refused (this export runs SDPA on DRAM-interleaved tensors). SDPA takes q, k and v in
``bfloat16``, ``bfloat8_b`` or ``bfloat4_b`` only (``SDPA_DTYPES``): a problem with another q/k/v format is
refused (the op would reject it on the card).

Its program configs read and costed (``predict``, ``ingest``, ``improve``): ``ttnn_config.py``.
"""

from __future__ import annotations

from loom_explorer.export.exporter import ExportError
from loom_explorer.families.attention.program import analyse_attention
from loom_explorer.families.attention.ring_predict import captured_attention
from loom_explorer.families.attention.ttnn_config import (
    evaluate_sdpa,
    exported_sdpa_config,
    parse_sdpa_config,
    sdpa_default,
    unpredicted_sdpa,
)
from loom_explorer.mapping.candidate import Candidate, Comm
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.problem import Problem
from loom_explorer.targets.ttnn.dtypes import TTNN_DTYPES
from loom_explorer.targets.ttnn.op import ProgramConfigs, TtnnOp
from loom_explorer.targets.ttnn.sharding import DRAM

SDPA_DTYPES = ("bfloat16", "bfloat8_b", "bfloat4_b")  # what ttnn's SDPA accepts for q, k and v


def _sdpa_runs(problem: Problem, cand: Candidate) -> bool:
    return cand.flattened and all(c is Comm.dram for _, c in cand.comms)


def sdpa_config(schedule: SymbolicSchedule, v: dict[str, int], runs: bool) -> dict[str, object]:
    """The ``SDPAProgramConfig`` arguments of ``schedule`` at values ``v``; ExportError for q, k or v in a format
    SDPA does not take (first: it refuses every candidate of the problem, whatever its split), for a candidate
    the op does not run (``runs`` false) and for an L1 placement."""
    cand, problem = schedule.candidate, schedule.problem
    structure = analyse_attention(problem.program)
    grid = [v["grid_x"], v["grid_y"]]
    for t in structure.streamed:
        fmt = TTNN_DTYPES[problem.data_format(t)]
        if fmt not in SDPA_DTYPES:
            raise ExportError(
                f"TTNN's SDPA takes q, k and v in {', '.join(SDPA_DTYPES)} only; {t} is {fmt} "
                "(the op refuses it on the card)"
            )
    if not runs:
        raise ExportError(
            f"TTNN's SDPA splits batch x heads x query chunks over the cores and reads q, k and v "
            f"from DRAM on every core; candidate {cand.name} does not, so it has no TTNN config"
        )
    sdpa_memory(schedule, v)
    return {
        "compute_with_storage_grid_size": grid,
        "q_chunk_size": v["q_chunk_size"],
        "k_chunk_size": v["k_chunk_size"],
        "exp_approx_mode": False,
    }


def _sdpa_equivalent(schedule: SymbolicSchedule, v: dict[str, int]) -> tuple[str, dict[str, object], list[str]]:
    return "SDPAProgramConfig", sdpa_config(schedule, v, _sdpa_runs(schedule.problem, schedule.candidate)), []


def sdpa_memory(schedule: SymbolicSchedule, v: dict[str, int]) -> dict[str, object]:
    """Every operand DRAM-interleaved; ExportError naming the first placed in L1."""
    problem = schedule.problem
    structure = analyse_attention(problem.program)
    operands = [*structure.streamed, structure.output]
    placed = {t: problem.placement(t) for t in operands if problem.placement(t).in_l1}
    if placed:
        t, p = next(iter(placed.items()))
        raise ExportError(
            f"{t}={p.value}: this export runs TTNN's SDPA on DRAM-interleaved q, k, v and output; "
            "an L1 placement is not realised, so it is refused"
        )
    return dict.fromkeys(operands, DRAM)


def _sdpa_call(schedule: SymbolicSchedule) -> str:
    """``scaled_dot_product_attention`` on the program's q, k, v and output."""
    structure = analyse_attention(schedule.problem.program)
    q, k, v = structure.streamed
    return _SDPA_CALL.format(q=q, k=k, v=v, out=structure.output)


SDPA_CONFIGS = ProgramConfigs(parse=parse_sdpa_config, evaluate=evaluate_sdpa, exported=exported_sdpa_config)
"""How ``SDPAProgramConfig``s are read and costed (``ttnn_config.py``); flash-decoding's op reads them alike."""

OP = TtnnOp(
    "attention",
    _sdpa_runs,
    _sdpa_equivalent,
    sdpa_memory,
    _sdpa_call,
    function="ttnn.transformer.scaled_dot_product_attention",
    default=sdpa_default,
    captured=captured_attention,
    configs=SDPA_CONFIGS,
    unpredicted_candidate=unpredicted_sdpa,
)


_SDPA_CALL = '''\
def host_inputs():
    """The host tensors (torch, bfloat16) the call uploads."""
    b, h, hkv, sq, skv, d = (SHAPE[x] for x in ("B", "H", "Hkv", "Sq", "Skv", "D"))
    return {{"{q}": torch.randn((b, h, sq, d), dtype=torch.bfloat16),
            "{k}": torch.randn((b, hkv, skv, d), dtype=torch.bfloat16),
            "{v}": torch.randn((b, hkv, skv, d), dtype=torch.bfloat16)}}


def op(tensors, configs):
    """The TTNN call once, on uploaded ``tensors``; returns its device output."""
    return ttnn.transformer.scaled_dot_product_attention(
        tensors["{q}"], tensors["{k}"], tensors["{v}"], is_causal=CAUSAL, program_config=configs["program"],
        compute_kernel_config=configs["compute"], memory_config=configs["memory"]["{out}"])


def expected(inputs):
    q, k, v = inputs["{q}"].float(), inputs["{k}"].float(), inputs["{v}"].float()
    groups = q.shape[1] // k.shape[1]
    return torch.nn.functional.scaled_dot_product_attention(
        q, k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1), is_causal=CAUSAL)
'''
