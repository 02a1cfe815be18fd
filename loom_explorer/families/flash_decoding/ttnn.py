"""The flash-decoding family's TTNN op (``OP``): ttnn's ``scaled_dot_product_attention_decode`` with an
``SDPAProgramConfig`` whose ``max_cores_per_head_batch`` makes it split the groups as the schedule does; the
formats and placements SDPA takes are attention's (``families/attention/ttnn.py``).

It takes over from attention's op the problems ttnn runs with ``sdpa_decode`` (``ttnn_config.py``: the decode
work split of an ``SDPAProgramConfig`` and ttnn's default of it).
"""

from __future__ import annotations

from dataclasses import replace

from loom_explorer.export.exporter import ExportError
from loom_explorer.families.attention.program import analyse_attention
from loom_explorer.families.attention.ttnn import SDPA_CONFIGS, sdpa_config, sdpa_memory
from loom_explorer.families.flash_decoding.quantities import ttnn_decode_work
from loom_explorer.families.flash_decoding.ttnn_config import (
    captured_decode,
    decode_default,
    decode_takes_over,
    evaluate_decode,
)
from loom_explorer.mapping.candidate import Candidate, Comm
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.problem import Problem, ProblemError
from loom_explorer.targets.ttnn.op import TtnnOp


def _decode_runs(problem: Problem, cand: Candidate) -> bool:
    return all(c is Comm.dram for _, c in cand.comms)


def _decode_equivalent(schedule: SymbolicSchedule, v: dict[str, int]) -> tuple[str, dict[str, object], list[str]]:
    args = sdpa_config(schedule, v, _decode_runs(schedule.problem, schedule.candidate))
    args["max_cores_per_head_batch"] = _decode_cores_per_head(schedule, v)
    return "SDPAProgramConfig", args, []


def _decode_cores_per_head(schedule: SymbolicSchedule, v: dict[str, int]) -> int:
    """``max_cores_per_head_batch`` that makes ttnn's ``sdpa_decode`` split the work as the schedule does on
    its grid (``ttnn_decode_split``); ExportError when no value does."""
    try:
        split = ttnn_decode_work(schedule.problem, v["grid_x"] * v["grid_y"], v["kv_cores"], v["k_chunk_size"])
    except ProblemError as exc:
        raise ExportError(f"{exc} (the schedule's)") from exc
    group = schedule.candidate.dim_on("xy")
    wanted = (v["kv_cores"], v[f"per_core_{group}"])
    if split != wanted:
        raise ExportError(
            f"ttnn's sdpa_decode on a {v['grid_x']}x{v['grid_y']} grid does not split the groups "
            f"as this schedule does (kv_cores {wanted[0]}, {wanted[1]} groups per core)"
        )
    return v["kv_cores"]


def _decode_call(schedule: SymbolicSchedule) -> str:
    """``scaled_dot_product_attention_decode`` on the program's q, k, v and output."""
    structure = analyse_attention(schedule.problem.program)
    q, k, v = structure.streamed
    return _SDPA_DECODE_CALL.format(q=q, k=k, v=v, out=structure.output)


OP = TtnnOp(
    "flash_decoding",
    _decode_runs,
    _decode_equivalent,
    sdpa_memory,
    _decode_call,
    function="ttnn.transformer.scaled_dot_product_attention_decode",
    default=decode_default,
    captured=captured_decode,
    configs=replace(SDPA_CONFIGS, evaluate=evaluate_decode),
    takes_over=decode_takes_over,
)


_SDPA_DECODE_CALL = '''\
def host_inputs():
    """The host tensors (torch, bfloat16) the call uploads: q as sdpa_decode takes it, [1, B, H, D]."""
    b, h, hkv, skv, d = (SHAPE[x] for x in ("B", "H", "Hkv", "Skv", "D"))
    return {{"{q}": torch.randn((1, b, h, d), dtype=torch.bfloat16),
            "{k}": torch.randn((b, hkv, skv, d), dtype=torch.bfloat16),
            "{v}": torch.randn((b, hkv, skv, d), dtype=torch.bfloat16)}}


def op(tensors, configs):
    """The TTNN call once, on uploaded ``tensors``; returns its device output ([1, B, H, D])."""
    return ttnn.transformer.scaled_dot_product_attention_decode(
        tensors["{q}"], tensors["{k}"], tensors["{v}"], is_causal=False, program_config=configs["program"],
        compute_kernel_config=configs["compute"], memory_config=configs["memory"]["{out}"])


def expected(inputs):
    q, k, v = inputs["{q}"].float().permute(1, 2, 0, 3), inputs["{k}"].float(), inputs["{v}"].float()
    groups = q.shape[1] // k.shape[1]
    out = torch.nn.functional.scaled_dot_product_attention(
        q, k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1))
    return out.permute(2, 0, 1, 3)
'''
