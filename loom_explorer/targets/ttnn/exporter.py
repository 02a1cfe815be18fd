"""``--format ttnn``: a schedule as a TTNN program config plus the call that uses it, a Python file for a machine
with a card.

Only candidates TTNN's own ops implement are exported (``ttnn_equivalent`` says why the others are not):
the 2-D and 1-D multicast matmul configs (``families/contraction/ttnn.py``) and each other family's op (its
``ttnn.py``: attention's ``SDPAProgramConfig`` for the flattened candidate, flash-decoding's for ``sdpa_decode``).

Memory placements are realised, not dropped (``op.ttnn_memory``): an L1-sharded operand becomes a
``ttnn.MemoryConfig(<layout>, BufferType.L1, ShardSpec(CoreRangeSet, shard_shape, orientation))`` on the
cores the schedule uses, so the card runs the schedule that was predicted (the layouts each op realises:
its family's ``ttnn.py``).

Every other L1 placement is refused with the reason (``in1`` in L1: TTNN's multicast matmuls read
it interleaved; ``l1``: a what-if with no TTNN layout; the other families' refusals: their ``ttnn.py``).

TTNN fixes what the model leaves free in a few places; the file lists each such difference in its
``NOTES`` (e.g. input buffers of 2 blocks where the schedule chose 3) so a measurement is read knowing
it. ``PROGRAM_CONFIG`` and ``COMPUTE_CONFIG`` use the constructors' own argument names (the form
``loom-explorer predict --ttnn-config`` reads).
"""

from __future__ import annotations

import pprint

from loom_explorer.export.exporter import ExportError, SolvedSchedule
from loom_explorer.export.schedule_json import RebuiltSchedule, ScheduleDocument, rebuild_own, solved_document
from loom_explorer.hardware.schema import Fidelity
from loom_explorer.problem import KernelTarget, Problem
from loom_explorer.targets.ttnn.dtypes import TTNN_DTYPES
from loom_explorer.targets.ttnn.op import ttnn_equivalent, ttnn_memory, ttnn_op_of
from loom_explorer.targets.ttnn.sharding import DRAM

FIDELITY = {Fidelity.lofi: "LoFi", Fidelity.hifi2: "HiFi2", Fidelity.hifi3: "HiFi3", Fidelity.hifi4: "HiFi4"}


def compute_config_args(problem: Problem) -> dict[str, object]:
    """``ttnn.WormholeComputeKernelConfig`` arguments for ``problem`` (``math_fidelity`` names a
    ``ttnn.MathFidelity``)."""
    return {
        "math_fidelity": FIDELITY[problem.fidelity],
        "math_approx_mode": False,
        "fp32_dest_acc_en": problem.fp32_acc,
        "packer_l1_acc": False,
    }


def _literal(value: object) -> str:
    return pprint.pformat(value, sort_dicts=False, width=110)


def ttnn_source(built: RebuiltSchedule, doc: ScheduleDocument) -> str:
    """The Python file (module docstring) for ``built``; ExportError when TTNN cannot run it.

    The file makes every ttnn object it needs (``build``: program, compute and memory configs) and the
    host inputs before ``main`` opens the device, so everything up to ``ttnn.open_device`` runs (and is
    checked: ``tests/ttnn_contract``) on a machine without a card. ``deploy/card_launch.py`` imports the
    same file to measure it, so the runner and the exported file run the same calls."""
    values = built.solution.values()
    name, args, notes = ttnn_equivalent(built.schedule, values)
    memory = ttnn_memory(built.schedule, values)
    problem, hw = built.problem, built.hardware
    compute = compute_config_args(problem)
    dtypes = {t: TTNN_DTYPES[f] for t, f in problem.formats}
    call = ttnn_op_of(problem, built.schedule.candidate).call(built.schedule)
    sharded = [t for t, m in memory.items() if m != DRAM]
    placement_line = (
        f"L1-sharded operands (as the schedule places them): {', '.join(sharded)}."
        if sharded
        else "All operands DRAM-interleaved (as the schedule places them)."
    )
    return _TEMPLATE.format(
        kernel=problem.program.name,
        shape=problem.shape_text,
        hw=hw.name,
        candidate=doc.candidate,
        latency_cycles=built.solution.latency_cycles,
        latency_us=hw.cycles_to_us(built.solution.latency_cycles),
        placement_line=placement_line,
        config_name=name,
        config=_literal(args),
        compute=_literal(compute),
        memory=_literal(memory),
        notes=_literal(notes),
        dtypes=_literal(dtypes),
        shape_dict=_literal(dict(problem.shape)),
        causal=problem.has_option("causal"),
        call=call,
        document=doc.to_json(),
    )


_TEMPLATE = '''\
"""{kernel} {shape} on {hw}: the TTNN configs of loom-explorer's schedule, and the call that uses them.

Candidate {candidate}; predicted {latency_cycles:,} cycles ({latency_us:.2f} us).
{placement_line}
Run on a machine with a Tenstorrent card and ttnn: `python THIS_FILE.py`.
"""

import json

import torch
import ttnn

SHAPE = {shape_dict}
DTYPES = {dtypes}
CAUSAL = {causal}

# ttnn.<PROGRAM_CONFIG_CLASS>(**PROGRAM_CONFIG), in the constructor's own argument names
PROGRAM_CONFIG_CLASS = {config_name!r}
PROGRAM_CONFIG = {config}

# ttnn.WormholeComputeKernelConfig(**COMPUTE_CONFIG) (math_fidelity names a ttnn.MathFidelity)
COMPUTE_CONFIG = {compute}

# Where each operand lives: "DRAM" (DRAM-interleaved), "L1" (L1-interleaved) or a sharded
# ttnn.MemoryConfig's arguments (core_ranges: inclusive [[x0, y0], [x1, y1]] core ranges; shard_shape in elements).
MEMORY = {memory}

# Where TTNN fixes what the schedule chose differently (read measurements knowing these):
NOTES = {notes}


def program_config():
    if PROGRAM_CONFIG_CLASS is None:  # the op takes none: the sharded memory configs pin the schedule
        return None
    args = dict(PROGRAM_CONFIG)
    args["compute_with_storage_grid_size"] = ttnn.CoreCoord(*args["compute_with_storage_grid_size"])
    if args.get("fused_activation", "absent") is None:
        del args["fused_activation"]
    return getattr(ttnn, PROGRAM_CONFIG_CLASS)(**args)


def compute_config():
    args = dict(COMPUTE_CONFIG)
    args["math_fidelity"] = getattr(ttnn.MathFidelity, args["math_fidelity"])
    return ttnn.WormholeComputeKernelConfig(**args)


def memory_config(tensor):
    spec = MEMORY[tensor]
    if spec == "DRAM":
        return ttnn.DRAM_MEMORY_CONFIG
    if spec == "L1":
        return ttnn.L1_MEMORY_CONFIG
    cores = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(*first), ttnn.CoreCoord(*last))
                               for first, last in spec["core_ranges"]])
    shard = ttnn.ShardSpec(cores, spec["shard_shape"], getattr(ttnn.ShardOrientation, spec["shard_orientation"]))
    return ttnn.MemoryConfig(getattr(ttnn.TensorMemoryLayout, spec["memory_layout"]),
                             getattr(ttnn.BufferType, spec["buffer_type"]), shard)


def build():
    """Every ttnn object the call needs; made before a device is opened."""
    return {{"program": program_config(), "compute": compute_config(),
            "memory": {{tensor: memory_config(tensor) for tensor in MEMORY}}}}


def upload(inputs, configs, device):
    """The host inputs on ``device``, tiled, in their formats and memory configs."""
    return {{tensor: ttnn.from_torch(value, dtype=getattr(ttnn, DTYPES[tensor]), layout=ttnn.TILE_LAYOUT,
                                    device=device, memory_config=configs["memory"][tensor])
            for tensor, value in inputs.items()}}


{call}

def pcc(result, reference):
    return torch.corrcoef(torch.stack([result.flatten(), reference.flatten()]))[0, 1].item()


def main():
    torch.manual_seed(0)
    configs = build()
    inputs = host_inputs()
    device = ttnn.open_device(device_id=0)
    try:
        result = ttnn.to_torch(op(upload(inputs, configs, device), configs)).float()
    finally:
        ttnn.close_device(device)
    value = pcc(result, expected(inputs))
    print("LOOM_RESULT " + json.dumps({{"pcc": value}}))
    assert value >= 0.99, f"PCC {{value:.6f}}"  # on the card: bf16 HiFi2 reaches 0.999; LoFi and bfp8/bfp4 less


# The schedule this file was exported from (loom-explorer's schedule JSON, schema_version 1).
LOOM_SCHEDULE = r"""
{document}"""

if __name__ == "__main__":
    main()
'''


class TtnnExporter:
    """``--format ttnn``: the TTNN program config and the call that uses it (module docstring)."""

    name = "ttnn"
    order = 20
    suffix = "_ttnn.py"
    summary = "TTNN program config and the call"
    noun = "a TTNN program config"
    label = "TTNN program config and call (.py)"
    kernel_target: KernelTarget | None = None

    def can_export(self, solved: SolvedSchedule) -> str | None:
        try:
            ttnn_equivalent(solved.schedule, solved.values)
        except ExportError as exc:
            return str(exc)
        return None

    def export(self, solved: SolvedSchedule) -> str:
        doc = solved_document(solved)
        return ttnn_source(rebuild_own(doc), doc)


EXPORTER = TtnnExporter()
