"""A schedule as a TTNN program config plus the call that uses it: a Python file for a machine with a card.

Only candidates TTNN's own ops implement are exported (``ttnn_equivalent`` says why the others are not):

| candidate | TTNN |
|---|---|
| ``M@y,N@x\\|in0=mcast_x,in1=mcast_y`` | ``MatmulMultiCoreReuseMultiCastProgramConfig(transpose_mcast=False)`` |
| ``N@y,M@x\\|in0=mcast_y,in1=mcast_x`` | the same with ``transpose_mcast=True`` |
| ``N@xy\\|in0=mcast_xy,in1=dram`` | ``MatmulMultiCoreReuseMultiCast1DProgramConfig(mcast_in0=True)`` |
| ``M@xy\\|in0=dram,in1=mcast_xy`` | the same with ``mcast_in0=False`` |
| attention ``...@xy\\|q=dram,k=dram,v=dram`` (flattened B x H x Sq) | ``SDPAProgramConfig`` |

TTNN fixes what the model leaves free in a few places; the file lists each such difference in its
``NOTES`` (e.g. input buffers of 2 blocks where the schedule chose 3) so a measurement is read knowing
it. ``PROGRAM_CONFIG`` and ``COMPUTE_CONFIG`` use the constructors' own argument names (the form
``loom-explorer predict --ttnn-config`` reads).
"""

from __future__ import annotations

import pprint

from loom_explorer.export.schedule_json import RebuiltSchedule, ScheduleDocument
from loom_explorer.export.ttlang_common import TTNN_DTYPES, ExportError
from loom_explorer.hardware.schema import Fidelity
from loom_explorer.mapping.candidate import Comm
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.problem import Problem
from loom_explorer.program.attention import Attention
from loom_explorer.program.contraction import Contraction
from loom_explorer.program.structure import analyse_program

FIDELITY = {Fidelity.lofi: "LoFi", Fidelity.hifi2: "HiFi2", Fidelity.hifi3: "HiFi3", Fidelity.hifi4: "HiFi4"}
TTNN_BUFFER_BLOCKS = 2  # TTNN double-buffers both inputs (single-buffers with one K block)


def ttnn_equivalent(schedule: SymbolicSchedule, v: dict[str, int]) -> tuple[str, dict[str, object], list[str]]:
    """(config class, its arguments, notes on what TTNN fixes differently) of ``schedule`` at parameter
    values ``v``; ExportError when TTNN has no op that runs this candidate."""
    cand, problem = schedule.candidate, schedule.problem
    structure = analyse_program(problem.program)
    grid = [v["grid_x"], v["grid_y"]]
    if isinstance(structure, Attention):
        if not (cand.flattened and all(c is Comm.dram for _, c in cand.comms)):
            raise ExportError(f"TTNN's SDPA splits batch x heads x query chunks over the cores and reads q, k and v "
                              f"from DRAM on every core; candidate {cand.name} does not, so it has no TTNN config")
        return "SDPAProgramConfig", {"compute_with_storage_grid_size": grid, "q_chunk_size": v["q_chunk_size"],
                                     "k_chunk_size": v["k_chunk_size"], "exp_approx_mode": False}, []
    if not isinstance(structure, Contraction) or structure.batch_dims:
        raise ExportError(f"TTNN export covers GEMM and SDPA so far; {problem.program.name} is neither")
    if any(problem.is_enabled(t.name) for t in problem.program.inputs if t.name not in
           (structure.matmul.a, structure.matmul.b)) or problem.activation:
        raise ExportError("TTNN export covers C = A @ B so far (no bias, no activation)")
    a, b = structure.matmul.a, structure.matmul.b
    comms = (cand.comm(a), cand.comm(b))
    blocking = {"in0_block_w": v["in0_block_w"], "out_subblock_h": v["out_subblock_h"],
                "out_subblock_w": v["out_subblock_w"], "out_block_h": v["out_block_h"],
                "out_block_w": v["out_block_w"], "per_core_M": v[f"per_core_{structure.m_dim}"],
                "per_core_N": v[f"per_core_{structure.n_dim}"]}
    m_axis = cand.axis_of(structure.m_dim)
    if comms == (Comm.mcast_x, Comm.mcast_y) and m_axis == "y":
        name, args = "MatmulMultiCoreReuseMultiCastProgramConfig", {"transpose_mcast": False}
    elif comms == (Comm.mcast_y, Comm.mcast_x) and m_axis == "x":
        name, args = "MatmulMultiCoreReuseMultiCastProgramConfig", {"transpose_mcast": True}
    elif comms == (Comm.mcast_xy, Comm.dram) and cand.axis_of(structure.n_dim) == "xy":
        name, args = "MatmulMultiCoreReuseMultiCast1DProgramConfig", {"mcast_in0": True}
    elif comms == (Comm.dram, Comm.mcast_xy) and m_axis == "xy":
        name, args = "MatmulMultiCoreReuseMultiCast1DProgramConfig", {"mcast_in0": False}
    else:
        why = "splits K over cores (TTNN's matmul has no split-K)" if cand.gather_axis else \
            "reads an input from DRAM on every core of a 2-D grid (TTNN's 2-D config multicasts both inputs)" \
            if not cand.is_1d else "does not multicast exactly one input to every core (TTNN's 1-D config does)"
        raise ExportError(f"candidate {cand.name} has no TTNN program config: it {why}")
    notes = []
    k_steps = v[f"per_core_{structure.k_dim}"] // v["in0_block_w"]
    ttnn_depth = TTNN_BUFFER_BLOCKS if k_steps > 1 else 1
    for tensor, param in ((a, "in0_buffer_depth"), (b, "in1_buffer_depth")):
        if v.get(param, ttnn_depth) != ttnn_depth:
            notes.append(f"{tensor}: TTNN buffers {ttnn_depth} block(s); this schedule chose {v[param]}")
    return name, {"compute_with_storage_grid_size": grid, **blocking, **args, "fuse_batch": True,
                  "fused_activation": None}, notes


def compute_config_args(problem: Problem) -> dict[str, object]:
    """``ttnn.WormholeComputeKernelConfig`` arguments for ``problem`` (``math_fidelity`` names a
    ``ttnn.MathFidelity``)."""
    return {"math_fidelity": FIDELITY[problem.fidelity], "math_approx_mode": False,
            "fp32_dest_acc_en": problem.fp32_acc, "packer_l1_acc": False}


def _literal(value: object) -> str:
    return pprint.pformat(value, sort_dicts=False, width=110)


def ttnn_source(built: RebuiltSchedule, doc: ScheduleDocument) -> str:
    """The Python file (module docstring) for ``built``; ExportError when TTNN cannot run it."""
    name, args, notes = ttnn_equivalent(built.schedule, built.solution.values())
    problem, hw = built.problem, built.hardware
    compute = compute_config_args(problem)
    dtypes = {t: TTNN_DTYPES[f] for t, f in problem.formats}
    attention = name == "SDPAProgramConfig"
    call = _SDPA_CALL if attention else _MATMUL_CALL
    shape = dict(problem.shape)
    return _TEMPLATE.format(
        kernel=problem.program.name, shape=problem.shape_text, hw=hw.name, candidate=doc.candidate,
        latency_cycles=built.solution.latency_cycles, latency_us=hw.cycles_to_us(built.solution.latency_cycles),
        config_name=name, config=_literal(args), compute=_literal(compute), notes=_literal(notes),
        dtypes=_literal(dtypes), shape_dict=_literal(shape),
        causal=problem.has_option("causal"), call=call, document=doc.to_json())


_MATMUL_CALL = '''\
def run(device):
    m, k, n = SHAPE["M"], SHAPE["K"], SHAPE["N"]
    a = torch.randn((m, k), dtype=torch.bfloat16)
    b = torch.randn((k, n), dtype=torch.bfloat16)
    out = ttnn.matmul(to_device(a, DTYPES["in0"], device), to_device(b, DTYPES["in1"], device),
                      program_config=program_config(), compute_kernel_config=compute_config(),
                      memory_config=ttnn.DRAM_MEMORY_CONFIG, dtype=getattr(ttnn, DTYPES["out"]))
    return ttnn.to_torch(out).float(), a.float() @ b.float()
'''

_SDPA_CALL = '''\
def run(device):
    b, h, hkv, sq, skv, d = (SHAPE[x] for x in ("B", "H", "Hkv", "Sq", "Skv", "D"))
    q = torch.randn((b, h, sq, d), dtype=torch.bfloat16)
    k = torch.randn((b, hkv, skv, d), dtype=torch.bfloat16)
    v = torch.randn((b, hkv, skv, d), dtype=torch.bfloat16)
    out = ttnn.transformer.scaled_dot_product_attention(
        to_device(q, DTYPES["q"], device), to_device(k, DTYPES["k"], device), to_device(v, DTYPES["v"], device),
        is_causal=CAUSAL, program_config=program_config(), compute_kernel_config=compute_config())
    groups = h // hkv
    expected = torch.nn.functional.scaled_dot_product_attention(
        q.float(), k.float().repeat_interleave(groups, dim=1), v.float().repeat_interleave(groups, dim=1),
        is_causal=CAUSAL)
    return ttnn.to_torch(out).float(), expected
'''

_TEMPLATE = '''\
"""{kernel} {shape} on {hw}: the TTNN program config of loom-explorer's schedule, and the call that uses it.

Candidate {candidate}; predicted {latency_cycles:,} cycles ({latency_us:.2f} us).
Run on a machine with a Tenstorrent card and ttnn: `python THIS_FILE.py`.
"""

import json

import torch
import ttnn

SHAPE = {shape_dict}
DTYPES = {dtypes}
CAUSAL = {causal}

# ttnn.{config_name}(**PROGRAM_CONFIG), in the constructor's own argument names
PROGRAM_CONFIG_CLASS = "{config_name}"
PROGRAM_CONFIG = {config}

# ttnn.WormholeComputeKernelConfig(**COMPUTE_CONFIG) (math_fidelity names a ttnn.MathFidelity)
COMPUTE_CONFIG = {compute}

# Where TTNN fixes what the schedule chose differently (read measurements knowing these):
NOTES = {notes}


def program_config():
    args = dict(PROGRAM_CONFIG)
    args["compute_with_storage_grid_size"] = ttnn.CoreCoord(*args["compute_with_storage_grid_size"])
    if args.get("fused_activation", "absent") is None:
        del args["fused_activation"]
    return getattr(ttnn, PROGRAM_CONFIG_CLASS)(**args)


def compute_config():
    args = dict(COMPUTE_CONFIG)
    args["math_fidelity"] = getattr(ttnn.MathFidelity, args["math_fidelity"])
    return ttnn.WormholeComputeKernelConfig(**args)


def to_device(tensor, dtype, device):
    return ttnn.from_torch(tensor, dtype=getattr(ttnn, dtype), layout=ttnn.TILE_LAYOUT, device=device,
                           memory_config=ttnn.DRAM_MEMORY_CONFIG)


{call}

def main():
    torch.manual_seed(0)
    device = ttnn.open_device(device_id=0)
    try:
        result, expected = run(device)
    finally:
        ttnn.close_device(device)
    pcc = torch.corrcoef(torch.stack([result.flatten(), expected.flatten()]))[0, 1].item()
    print("LOOM_RESULT " + json.dumps({{"pcc": pcc}}))
    assert pcc >= 0.99, f"PCC {{pcc:.6f}}"  # on the card: bf16 HiFi2 reaches 0.999; LoFi and bfp8/bfp4 less


# The schedule this file was exported from (loom-explorer's schedule JSON, schema_version 1).
LOOM_SCHEDULE = r"""
{document}"""

if __name__ == "__main__":
    main()
'''
