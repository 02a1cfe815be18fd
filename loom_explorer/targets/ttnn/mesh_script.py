"""A multi-chip plan's ttnn calls (``mesh_calls.MeshProgram``) as a Python script for a machine with the mesh,
and as the plan's JSON document. Text only: ttnn is never imported here.

The script makes every ttnn object that needs no device first (``build``: each op's program and compute
config, and each uploaded tensor's mesh mapper, made for the ``MeshShape`` with ttnn's device-free
``create_mesh_mapper(mesh_shape, config)``), then opens the mesh (``open_mesh``: ``set_fabric_config``, then
``open_mesh_device``), then makes the host tensors (a layer's weights are gigabytes), uploads them through
their mappers and runs the plan's steps in order (``run``): each op with its per-chip configs, each
transition's collectives with the plan's ``dim``, ``cluster_axis``, ``num_links`` and ``topology``.
``tests/ttnn_contract`` checks it against the real ttnn 0.81.1, without a card.
"""

from __future__ import annotations

import json
import pprint
from dataclasses import asdict

from loom_explorer.export.exporter import ExportError
from loom_explorer.targets.ttnn.mesh_calls import MESH_PLAN_SCHEMA_VERSION, CollectiveCall, MeshProgram, OpCall

DRAM = "ttnn.DRAM_MEMORY_CONFIG"


def plan_document(program: MeshProgram) -> str:
    """The plan as JSON: ``schema_version``, the mesh, view and fabric, the predicted latency, every op (split,
    per-chip problem, schedule, program config, weights' placements, cycles) and every collective, in the
    order they run (``steps``, each with its ``step`` kind)."""
    steps = [{"step": "op" if isinstance(s, OpCall) else "collective", **asdict(s)} for s in program.steps]
    doc = {
        "schema_version": MESH_PLAN_SCHEMA_VERSION,
        **{k: v for k, v in asdict(program).items() if k != "steps"},
        "steps": steps,
    }
    return json.dumps(doc, indent=1) + "\n"


def _literal(value: object) -> str:
    return pprint.pformat(value, sort_dicts=False, width=110)


def _t(name: str) -> str:
    return f"t[{name!r}]"


def _collective(c: CollectiveCall) -> list[str]:
    what = f"{c.kind} on {c.axis}, {c.piece_bytes:,} B per device before it"
    lines = [f"    # {c.tensor} -> {', '.join(c.consumers)}: {what}, predicted {c.latency_cycles:,} cycles"]
    dim = "" if c.dim is None else f", {c.dim}"
    if c.kind == "mesh_partition":
        call = f"ttnn.mesh_partition({_t(c.source)}{dim}, cluster_axis={c.cluster_axis}, memory_config={DRAM})"
    else:
        call = (
            f"ttnn.{c.kind}({_t(c.source)}{dim}, cluster_axis={c.cluster_axis}, num_links={c.num_links}, "
            f"topology=ttnn.Topology.{c.topology}, memory_config={DRAM})"
        )
    lines.append(f"    {_t(c.target)} = {call}")
    return lines


def _matmul(o: OpCall) -> list[str]:
    weight, src = _t(f"{o.op}.weight"), _t(o.inputs[0])
    configs = f'program_config=P["{o.op}"], compute_kernel_config=C["{o.op}"]'
    if o.fused is not None:
        return [
            f"    _, {_t(o.output)} = ttnn.experimental.all_gather_matmul_async(",
            f"        {src}, {weight}, dim=3, multi_device_global_semaphore=semaphores(mesh_device),",
            "        all_gather_core_grid_offset=ttnn.CoreCoord(0, 0),",
            f"        num_links={o.fused.num_links}, topology=ttnn.Topology.{o.fused.topology},",
            f"        memory_config_mm={DRAM},",
            f"        {configs}, dtype=ttnn.bfloat16)",
        ]
    return [
        f"    {_t(o.output)} = ttnn.matmul({src}, {weight}, {configs},",
        f"                              memory_config={DRAM}, dtype=ttnn.bfloat16)",
    ]


def _attention(o: OpCall) -> list[str]:
    dims = dict(o.local_dims)
    configs = f'program_config=P["{o.op}"], compute_kernel_config=C["{o.op}"]'
    heads = (
        f"ttnn.experimental.nlp_create_qkv_heads({_t(o.inputs[0])}, num_heads={dims['H']}, "
        f"num_kv_heads={dims['Hkv']}, transpose_k_heads=False, memory_config={DRAM})"
    )
    if o.seq is not None:
        return _ring_attention(o, heads, configs)
    if not o.decode:
        return [
            f"    q, k, v = {heads}",
            f"    o = ttnn.transformer.scaled_dot_product_attention(q, k, v, is_causal={o.causal}, {configs})",
            f"    {_t(o.output)} = ttnn.experimental.nlp_concat_heads(o, memory_config={DRAM})",
        ]
    return [
        f"    q, _, _ = {heads}",
        "    q = ttnn.permute(q, (0, 2, 1, 3))  # [1, users, heads, head dim], as sdpa_decode takes it",
        "    o = ttnn.transformer.scaled_dot_product_attention_decode(",
        f"        q, {_t(o.op + '.k_cache')}, {_t(o.op + '.v_cache')}, is_causal=False, {configs})",
        f"    {_t(o.output)} = ttnn.experimental.nlp_concat_heads(ttnn.permute(o, (0, 2, 1, 3)), memory_config={DRAM})",
    ]


def _ring_attention(o: OpCall, heads: str, configs: str) -> list[str]:
    """The ``seq`` split: ring-distributed SDPA, then the sequence order restored (``mesh_calls.py``)."""
    assert o.seq is not None
    r = o.seq
    dims = dict(o.local_dims)
    width = dims["H"] * dims["D"]
    gather = (
        f"-2, cluster_axis={r.cluster_axis}, num_links={r.num_links}, topology=ttnn.Topology.{r.topology}, "
        f"memory_config={DRAM})"
    )
    return [
        f"    q, k, v = {heads}",
        f"    o = ttnn.transformer.ring_distributed_scaled_dot_product_attention(q, k, v, {r.ring_size}, {configs})",
        f"    o = ttnn.experimental.nlp_concat_heads(o, memory_config={DRAM})  # chunks i, {2 * r.ring_size - 1}-i",
        f"    first, second = ttnn.split(o, {r.chunk_rows}, 2)",
        f"    first = ttnn.all_gather(first, {gather}  # chunks 0 .. {r.ring_size - 1}",
        f"    second = ttnn.all_gather(second, {gather}  # chunks {2 * r.ring_size - 1} .. {r.ring_size}",
        f"    second = ttnn.concat([ttnn.slice(second, [0, 0, j * {r.chunk_rows}, 0], [1, 1, (j + 1) * {r.chunk_rows}, "
        f"{width}]) for j in reversed(range({r.ring_size}))], 2)",
        f"    {_t(o.output)} = ttnn.concat([first, second], 2, memory_config={DRAM})",
    ]


def _norm(o: OpCall) -> list[str]:
    src, weight = _t(o.inputs[0]), _t(f"{o.op}.weight")
    if not o.stats_gathers:
        return [
            f'    {_t(o.output)} = ttnn.rms_norm({src}, epsilon=EPSILON, weight={weight}, program_config=P["{o.op}"],',
            f'                                    compute_kernel_config=C["{o.op}"], memory_config={DRAM})',
        ]
    lines = [f'    stats = ttnn.rms_norm_pre_all_gather({src}, compute_kernel_config=C["{o.op}"])']
    for g in o.stats_gathers:
        lines.append(
            f"    stats = ttnn.all_gather(stats, -1, cluster_axis={g.cluster_axis}, num_links={g.num_links}, "
            f"topology=ttnn.Topology.{g.topology}, memory_config={DRAM})"
        )
    lines.append(
        f"    {_t(o.output)} = ttnn.rms_norm_post_all_gather({src}, stats, epsilon=EPSILON, weight={weight}, "
        f'compute_kernel_config=C["{o.op}"], memory_config={DRAM})'
    )
    return lines


def _eltwise(o: OpCall) -> list[str]:
    a, b = (_t(i) for i in o.inputs)
    if o.kernel == "binary":  # the residual add
        return [f"    {_t(o.output)} = ttnn.add({a}, {b}, memory_config={DRAM})"]
    if o.kernel == "swiglu":  # silu(a) * b, as families/elementwise/ttnn.py calls it
        return [
            f"    {_t(o.output)} = ttnn.multiply({a}, {b}, input_tensor_a_activations=[ttnn.UnaryOpType.SILU],",
            f"                                  memory_config={DRAM})",
        ]
    raise ExportError(f"op {o.op}: the mesh export has no ttnn call for kernel {o.kernel}")


_WRITERS = {"gemm": _matmul, "flash_attention": _attention, "rmsnorm": _norm, "binary": _eltwise, "swiglu": _eltwise}


def _op(o: OpCall) -> list[str]:
    writer = _WRITERS.get(o.kernel)
    if writer is None:
        raise ExportError(f"op {o.op}: the mesh export has no ttnn call for kernel {o.kernel}")
    config = o.chip.config_class or "ttnn's default"
    head = f"    # {o.op}: split {o.split}, per chip {o.chip.problem} ({o.chip.candidate}; {config}), "
    return [head + f"predicted {o.predicted_cycles:,} cycles", *writer(o)]


def mesh_source(program: MeshProgram) -> str:
    """The script (module docstring)."""
    host = {program.input.name: (list(program.input.shape), list(program.input.placements), program.input.dtype)}
    for o in program.ops:
        for w in o.weights:
            host[w.name] = (list(w.shape), list(w.placements), w.dtype)
    body = [f"    {_t(program.input_key)} = t[{program.input.name!r}]"]
    for step in program.steps:
        body += _op(step) if isinstance(step, OpCall) else _collective(step)
    body.append(f"    return {_t(program.output_key)}")
    return _TEMPLATE.format(
        graph=program.graph,
        mesh=program.mesh,
        chip=program.chip,
        view=program.view,
        shape=program.mesh_shape,
        fabric=program.fabric_config,
        latency_cycles=program.latency_cycles,
        latency_us=program.latency_us,
        pins=", ".join(program.pins) or "none",
        host=_literal(host),
        programs=_literal({o.op: (o.chip.config_class, o.chip.config_args) for o in program.ops}),
        computes=_literal({o.op: o.chip.compute_args for o in program.ops}),
        notes=_literal([*program.notes, *(f"{o.op}: {n}" for o in program.ops for n in o.chip.notes)]),
        body="\n".join(body),
        document=plan_document(program),
    )


_TEMPLATE = '''\
"""{graph} on {mesh} ({chip} chips): loom-explorer's proven multi-chip plan as ttnn calls.

View {view}: ttnn.MeshShape{shape}, fabric {fabric}; pins: {pins}.
Predicted {latency_cycles:,} cycles ({latency_us:,.1f} us) per device.
Run on a machine with the mesh and ttnn: `python THIS_FILE.py`. The program, compute configs and mesh
mappers are made before the mesh is opened; the host tensors after it (a layer's weights are gigabytes).
"""

import json

import torch
import ttnn

MESH_SHAPE = {shape}
FABRIC_CONFIG = {fabric!r}
EPSILON = 1e-5

# tensor -> (host shape, per mesh dim: the tensor dim it is sharded on (None: replicated), its ttnn data type)
HOST_TENSORS = {host}

# op -> (ttnn program config class or None for ttnn's default, its arguments in the constructor's names)
PROGRAM_CONFIGS = {programs}

# op -> ttnn.WormholeComputeKernelConfig(**args) (math_fidelity names a ttnn.MathFidelity)
COMPUTE_CONFIGS = {computes}

# Where ttnn runs something other than what the plan costs (read measurements knowing these):
NOTES = {notes}


def program_config(op):
    name, args = PROGRAM_CONFIGS[op]
    if name is None:
        return None
    args = dict(args)
    args["compute_with_storage_grid_size"] = ttnn.CoreCoord(*args["compute_with_storage_grid_size"])
    if args.get("fused_activation", "absent") is None:
        del args["fused_activation"]
    return getattr(ttnn, name)(**args)


def compute_config(op):
    args = dict(COMPUTE_CONFIGS[op])
    args["math_fidelity"] = getattr(ttnn.MathFidelity, args["math_fidelity"])
    return ttnn.WormholeComputeKernelConfig(**args)


def mesh_mapper_config(tensor):
    _, dims, _ = HOST_TENSORS[tensor]
    return ttnn.MeshMapperConfig([ttnn.PlacementReplicate() if d is None else ttnn.PlacementShard(d) for d in dims])


def build():
    """Every ttnn object that needs no device: program and compute configs, and the mesh mappers."""
    mesh_shape = ttnn.MeshShape(*MESH_SHAPE)
    return {{"program": {{op: program_config(op) for op in PROGRAM_CONFIGS}},
            "compute": {{op: compute_config(op) for op in COMPUTE_CONFIGS}},
            "mappers": {{t: ttnn.create_mesh_mapper(mesh_shape, mesh_mapper_config(t)) for t in HOST_TENSORS}}}}


def open_mesh():
    ttnn.set_fabric_config(getattr(ttnn.FabricConfig, FABRIC_CONFIG))
    return ttnn.open_mesh_device(ttnn.MeshShape(*MESH_SHAPE))


def host_tensors():
    torch.manual_seed(0)
    return {{t: torch.randn(shape, dtype=torch.bfloat16) for t, (shape, _, _) in HOST_TENSORS.items()}}


def upload(host, configs, mesh_device):
    """Each host tensor on the mesh in its data type, tiled, DRAM-interleaved, split by its mapper."""
    return {{t: ttnn.from_torch(value, dtype=getattr(ttnn, HOST_TENSORS[t][2]), layout=ttnn.TILE_LAYOUT,
                               device=mesh_device, memory_config=ttnn.DRAM_MEMORY_CONFIG,
                               mesh_mapper=configs["mappers"][t])
            for t, value in host.items()}}


def semaphores(mesh_device):
    """Two global semaphores on the whole worker grid, as the fused all-gather + matmul takes them."""
    grid = mesh_device.compute_with_storage_grid_size()
    cores = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(grid.x - 1, grid.y - 1))])
    return [ttnn.create_global_semaphore(mesh_device, cores, 0) for _ in range(2)]


def run(mesh_device, configs, t):
    """The plan's steps in order; ``t`` maps NAME@STATE (and each host tensor's name) to device tensors."""
    P, C = configs["program"], configs["compute"]
{body}


def main():
    configs = build()
    mesh_device = open_mesh()
    try:
        out = run(mesh_device, configs, upload(host_tensors(), configs, mesh_device))
        ttnn.synchronize_device(mesh_device)
        print("LOOM_RESULT " + json.dumps({{"output_shape": list(out.shape)}}))
    finally:
        ttnn.close_mesh_device(mesh_device)
        ttnn.set_fabric_config(ttnn.FabricConfig.DISABLED)


# The plan this file was exported from (loom-explorer's mesh plan JSON).
LOOM_MESH_PLAN = r"""
{document}"""

if __name__ == "__main__":
    main()
'''
