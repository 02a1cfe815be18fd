"""``mesh export`` scripts against the real ttnn 0.81.1, no card: every ``ttnn.<f>(...)`` call binds to one of
the real callable's signatures (nanobind's ``__nb_signature__``: positional count and every keyword), every
``ttnn.X.Y`` it names exists, ``build`` makes real configs and mesh mappers for the ``MeshShape`` without a
device whose host shards are each chip's planned slice, and ``main`` fails at opening the mesh, not before."""

from __future__ import annotations

import ast
import inspect
import re
import sys
import traceback
from functools import cache
from pathlib import Path

import pytest
import torch
import ttnn
from contract_helpers import OpenDeviceReached, import_file

from loom_explorer.hardware.mesh_load import load_mesh
from loom_explorer.mesh.graph import attention_graph, matmul_graph
from loom_explorer.mesh.plan import Planner
from loom_explorer.sweep.ops import Transformer
from loom_explorer.targets.ttnn.mesh_calls import (
    ChipConfig,
    FusedGather,
    HostTensor,
    MeshProgram,
    OpCall,
    SeqRing,
    StatsGather,
    local_shape_of,
    mesh_program,
)
from loom_explorer.targets.ttnn.mesh_script import mesh_source

PINS = {
    "row_parallel": ("matmul.split=K",),
    "fused": ("matmul.split=agN@ring",),
    "mesh_2d": ("view=mesh", "matmul.split=M@rows,N@columns"),
    "ring_attention": ("attention.split=seq@ring",),  # a causal attention block, ring-distributed SDPA
}


TINY = Transformer(hidden=512, ffn=1024, heads=8, kv_heads=2, head_dim=64, vocab=1000, layers=1)  # an attention block


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("mesh_contract") / "results.db")


@cache
def _planned(store: str, case: str) -> MeshProgram:
    mesh = load_mesh("t3000")
    graph = attention_graph(TINY, 512, True, 256) if case == "ring_attention" else matmul_graph(32, 512, 1024)
    planner = Planner(mesh, graph, store=store)
    return mesh_program(planner.plan(list(PINS[case])), mesh, planner.chip, planner.graph, store=store)


def _every_writer() -> MeshProgram:
    """A hand-made program with one op of every kind the writer has (distributed and plain norm, prefill and
    decode attention, SwiGLU, residual add, a fused all-gather + matmul): its calls' text only."""
    chip = ChipConfig("p", "c", 1, None, {}, {"math_fidelity": "HiFi2", "math_approx_mode": False,
                                              "fp32_dest_acc_en": False, "packer_l1_acc": False}, ())  # fmt: skip
    w = HostTensor("n.weight", (1, 1, 1, 64), (None, -1))
    cache_ = HostTensor("dec.k_cache", (4, 2, 64, 32), (None, 1), "bfloat8_b")
    ops = (
        OpCall("n", "rmsnorm", "cols@rows", ("rows",), ("x@a",), "n@a", (w,), (("H", 32), ("W", 32)), chip, 1,
               stats_gathers=(StatsGather("rows", 0, 1, "Linear"),)),
        OpCall("m", "rmsnorm", "rep", ("-",), ("n@a",), "m@a", (HostTensor("m.weight", (1, 1, 1, 64), (None, None)),),
               (("H", 32), ("W", 64)), chip, 1),
        OpCall("g", "gemm", "agN@rows", ("N",), ("m@a",), "g@a", (HostTensor("g.weight", (1, 1, 64, 64), (-1, None),
                                                                           "bfloat4_b"),),
               (("M", 32), ("K", 64), ("N", 32)), chip, 1, fused=FusedGather("rows", 0, 1, "Linear")),
        OpCall("att", "flash_attention", "heads", ("heads",), ("g@a",), "att@a", (),
               (("B", 1), ("H", 2), ("Hkv", 1), ("Sq", 32), ("Skv", 32), ("D", 32)), chip, 1, causal=True),
        OpCall("ring", "flash_attention", "seq@rows", ("seq",), ("g@a",), "ring@a", (),
               (("B", 1), ("H", 2), ("Hkv", 1), ("Sq", 64), ("Skv", 160), ("D", 32)), chip, 1,
               seq=SeqRing("rows", 0, 2, 64, 1, "Ring")),
        OpCall("dec", "flash_attention", "heads", ("heads",), ("g@a",), "dec@a",
               (cache_, HostTensor("dec.v_cache", (4, 2, 64, 32), (None, 1), "bfloat8_b")),
               (("B", 4), ("H", 2), ("Hkv", 1), ("Sq", 1), ("Skv", 64), ("D", 32)), chip, 1, decode=True),
        OpCall("s", "swiglu", "rep", ("-",), ("g@a", "g@a"), "s@a", (), (("H", 32), ("W", 32)), chip, 1),
        OpCall("r", "binary", "rep", ("-",), ("s@a", "m@a"), "r@a", (), (("H", 32), ("W", 32)), chip, 1),
    )  # fmt: skip
    x = HostTensor("x", (1, 1, 32, 64), (None, None))
    return MeshProgram("every", "t3000", "wormhole_n300", "mesh", (2, 4), "FABRIC_1D", (), 7, 0.0, x, "x@a", "r@a", ops)


def _parameters(text: str) -> list[tuple[str, str, bool]]:
    """(name, kind, has default) of one nanobind signature ``def f(a: T, b: T = \\0, *, c: T = \\1) -> R``;
    kind ``pos`` (positional or keyword), ``posonly`` or ``kwonly``. nanobind allows a parameter without a
    default after one with (``persistent_output_buffer = None, dim``), which Python's parser refuses."""
    inner = text[text.index("(") + 1 : text.rindex(") ->") if ") ->" in text else text.rindex(")")]
    parts, depth, current = [], 0, ""
    for ch in inner:
        depth += ch in "[(" and 1 or (ch in "])" and -1 or 0)
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    parts.append(current.strip())
    out: list[tuple[str, str, bool]] = []
    kind = "pos"
    for p in parts:
        if p in ("", "self"):
            continue
        if p == "*":
            kind = "kwonly"
            continue
        if p == "/":
            out = [(n, "posonly", d) for n, _, d in out]
            continue
        name = re.match(r"\**(\w+)", p)
        assert name is not None, p
        out.append((name.group(1) if not p.startswith("*") else p, kind, "=" in p))
    return out


def _signatures(obj: object) -> list[list[tuple[str, str, bool]]]:
    """Each overload's parameters: nanobind's own signatures, else Python's (a FastOperation's function)."""
    target = getattr(obj, "function", obj)
    for holder in (type(target).__call__, target, getattr(target, "__init__", None)):
        nb = getattr(holder, "__nb_signature__", None)
        if nb:
            return [_parameters(sig[0]) for sig in nb]
    sig = inspect.signature(target)  # type: ignore[arg-type]
    kinds: dict[object, str] = {inspect.Parameter.POSITIONAL_ONLY: "posonly", inspect.Parameter.KEYWORD_ONLY: "kwonly"}
    stars: dict[object, str] = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}
    return [
        [
            (stars.get(p.kind, "") + p.name, kinds.get(p.kind, "pos"), p.default is not inspect.Parameter.empty)
            for p in sig.parameters.values()
        ]
    ]


def _binds(params: list[tuple[str, str, bool]], positional: int, keywords: list[str]) -> bool:
    if any(n.startswith("*") for n, _, _ in params):
        return True  # *args/**kwargs: anything binds
    ordered = [p for p in params if p[1] != "kwonly"]
    if positional > len(ordered):
        return False
    given = {n for n, _, _ in ordered[:positional]}
    names = {n: k for n, k, _ in params}
    for k in keywords:
        if k in given or names.get(k) in (None, "posonly"):
            return False
        given.add(k)
    return all(has_default or n in given for n, _, has_default in params)


def _resolve(path: str) -> object:
    obj: object = ttnn
    for part in path.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def _check_script(source: str) -> int:
    """Every ttnn call binds and every ``ttnn.X...`` exists; the number of calls checked."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and ast.unparse(node).startswith("ttnn."):
            _resolve(ast.unparse(node))  # AttributeError names the missing one
    checked = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node.func).startswith("ttnn."):
            path = ast.unparse(node.func)
            if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
                continue  # f(**args): the constructor's arguments are checked by building them
            sigs = _signatures(_resolve(path))
            keywords = [k.arg for k in node.keywords if k.arg]
            assert any(_binds(s, len(node.args), keywords) for s in sigs), (path, len(node.args), keywords)
            checked += 1
    return checked


@pytest.mark.parametrize("case", sorted(PINS))
def test_every_ttnn_call_of_a_planned_script_binds(store: str, case: str) -> None:
    source = mesh_source(_planned(store, case))
    assert _check_script(source) >= 10
    assert hasattr(ttnn.FabricConfig, _planned(store, case).fabric_config)


def test_every_op_writer_binds() -> None:
    source = mesh_source(_every_writer())
    for call in (
        "ttnn.rms_norm_pre_all_gather(", "ttnn.rms_norm_post_all_gather(", "ttnn.rms_norm(",
        "ttnn.transformer.scaled_dot_product_attention(", "ttnn.transformer.scaled_dot_product_attention_decode(",
        "ttnn.experimental.nlp_create_qkv_heads(", "ttnn.multiply(", "ttnn.add(", "ttnn.all_gather(",
        "ttnn.transformer.ring_distributed_scaled_dot_product_attention(", "ttnn.split(", "ttnn.slice(",
        "ttnn.concat(",
    ):  # fmt: skip
        assert call in source, call
    assert _check_script(source) >= 20
    # the weights' and caches' data types (the plan's precision) are ttnn's, as upload() passes them
    host = ast.literal_eval(ast.unparse(next(n.value for n in ast.parse(source).body if isinstance(n, ast.Assign)
                                             and ast.unparse(n.targets[0]) == "HOST_TENSORS")))  # fmt: skip
    assert {v[2] for v in host.values()} == {"bfloat16", "bfloat8_b", "bfloat4_b"}
    assert all(isinstance(getattr(ttnn, v[2]), ttnn.DataType) for v in host.values())


def test_the_ring_sdpa_call_binds_its_ring_size_positionally() -> None:
    """ttnn 0.81.1: ``(q, k, v, ring_size, ring_id=None, *, scale, memory_config, program_config,
    compute_kernel_config, page_table, chunk_start_idx)``; the ring id is left to ttnn (inferred per device)."""
    ring = _signatures(ttnn.transformer.ring_distributed_scaled_dot_product_attention)
    assert any(_binds(s, 4, ["program_config", "compute_kernel_config"]) for s in ring)
    assert not any(_binds(s, 3, ["program_config"]) for s in ring)  # ring_size is required
    assert not any(_binds(s, 4, ["is_causal"]) for s in ring)  # causal only, no flag


def test_the_binder_refuses_what_ttnn_does_not_take() -> None:
    """The check can fail: a keyword ttnn does not have, a missing required argument, too many positionals."""
    gather = _signatures(ttnn.all_gather)
    assert any(_binds(s, 2, ["cluster_axis", "num_links", "topology"]) for s in gather)
    assert not any(_binds(s, 2, ["cluster_axes"]) for s in gather)
    assert not any(_binds(s, 1, ["cluster_axis"]) for s in gather)  # dim is required
    fused = _signatures(ttnn.experimental.all_gather_matmul_async)
    assert not any(_binds(s, 2, ["dim", "multi_device_global_semaphore", "all_gather_core_grid_offset",
                                 "cluster_axis"]) for s in fused)  # fmt: skip


@pytest.mark.parametrize("case", sorted(PINS))
def test_build_makes_real_configs_and_mappers_that_shard_as_planned(store: str, case: str, tmp_path: Path) -> None:
    program = _planned(store, case)
    module = import_file(mesh_source(program), tmp_path, f"mesh_{case}")
    configs = module.build()
    for op in program.ops:
        built = configs["program"][op.op]
        assert built is None if op.chip.config_class is None else isinstance(built, getattr(ttnn, op.chip.config_class))
        assert isinstance(configs["compute"][op.op], ttnn.WormholeComputeKernelConfig)
    host = module.host_tensors()
    tensors = {program.input.name: program.input, **{w.name: w for o in program.ops for w in o.weights}}
    rows, cols = program.mesh_shape
    for name, tensor in tensors.items():
        assert isinstance(getattr(ttnn, tensor.dtype), ttnn.DataType), name  # the type upload() passes
        sharded = ttnn.from_torch(host[name], dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT,
                                  mesh_mapper=configs["mappers"][name])  # fmt: skip
        shards = ttnn.get_device_tensors(sharded)
        assert len(shards) == rows * cols
        local = local_shape_of(program, tensor)
        for index, shard in enumerate(shards):
            assert tuple(shard.shape) == local, (name, index)
            piece = host[name]
            for coord, dim in zip((index // cols, index % cols), tensor.placements, strict=True):
                if dim is not None:
                    piece = piece.narrow(dim, coord * local[dim], local[dim])
            assert torch.equal(ttnn.to_torch(shard), piece), (name, index)


@pytest.mark.parametrize("case", sorted(PINS))
def test_main_fails_opening_the_mesh_and_not_before(store: str, case: str, tmp_path: Path) -> None:
    program = _planned(store, case)
    module = import_file(mesh_source(program), tmp_path, f"mesh_main_{case}")
    with pytest.raises(RuntimeError, match="No chips detected") as failed:
        module.main()
    frames = [f for f in traceback.extract_tb(failed.value.__traceback__) if f.filename == module.__file__]
    assert [f.name for f in frames] == ["main", "open_mesh"]
    assert "set_fabric_config" in (frames[-1].line or "")


@pytest.mark.parametrize("case", sorted(PINS))
def test_main_opens_the_planned_mesh_shape_with_the_planned_fabric(
    store: str, case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    program = _planned(store, case)
    module = import_file(mesh_source(program), tmp_path, f"mesh_open_{case}")
    seen: dict[str, object] = {}

    def open_mesh_device(*args: object, **kwargs: object) -> None:
        seen["shape"], seen["configs"] = args[0], sys._getframe(2).f_locals.get("configs")
        raise OpenDeviceReached

    monkeypatch.setattr(ttnn, "set_fabric_config", lambda config: seen.setdefault("fabric", config))
    monkeypatch.setattr(ttnn, "open_mesh_device", open_mesh_device)
    with pytest.raises(OpenDeviceReached):
        module.main()
    assert seen["fabric"] == getattr(ttnn.FabricConfig, program.fabric_config)
    assert list(seen["shape"]) == list(program.mesh_shape)  # type: ignore[call-overload]
    configs = seen["configs"]
    assert isinstance(configs, dict) and set(configs) == {"program", "compute", "mappers"}
