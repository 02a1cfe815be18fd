"""A sweep on a mesh: ttnn's Galaxy split as pins, the per-op records of a planned layer (their shares add up
to the layer), the skip keys, the report's mesh tables, and a whole (tiny) layer swept on a T3000 through the
sweep's own machinery (an in-process Dask cluster, real per-chip solves: slow)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from loom_explorer.accuracy.family_error import error_for_op
from loom_explorer.hardware.mesh_load import load_mesh
from loom_explorer.mesh.graph import decoder_layer_graph
from loom_explorer.mesh.plan import Planner
from loom_explorer.mesh.states import MeshError
from loom_explorer.mesh.ttnn_galaxy_split import galaxy_layer_pins
from loom_explorer.store import SweepChoice, SweepRecord, open_store
from loom_explorer.sweep import mesh_task
from loom_explorer.sweep import run as sweep_run
from loom_explorer.sweep.mesh_task import MeshLayer, layer_ops, mesh_layers, mesh_op_key
from loom_explorer.sweep.ops import DECODE_KV, MODELS, Transformer
from loom_explorer.sweep.report import mesh_layer_rows, model_error, report_markdown
from loom_explorer.sweep.run import mesh_pending, run_sweep
from loom_explorer.sweep.task import SweepSettings


def test_galaxy_pins_are_valid_splits_on_the_galaxy() -> None:
    mesh = load_mesh("galaxy")
    for prefill, rows in ((True, 2048), (False, 32)):
        planner = Planner(mesh, decoder_layer_graph(MODELS["llama-3-70b"], rows, prefill, DECODE_KV))
        pins = planner.pins(galaxy_layer_pins(planner.graph, planner.views, prefill))
        assert {p.target for p in pins if p.field == "split"} == {o.name for o in planner.graph.ops} - {"out"}
        links = {p.target: p.value for p in pins if p.field == "num_links"}
        assert links["w2"] == ("3" if prefill else "4") and links["w1"] == "4"
        assert dict((p.target, p.value) for p in pins if p.field == "split")["attention"] == (
            "heads@rows,seq@columns" if prefill else "heads@rows,batch@columns"
        )  # 2k tokens of one user: ring-distributed SDPA over the columns
    one_user = Planner(mesh, decoder_layer_graph(MODELS["llama-3-70b"], 1, False, DECODE_KV))
    pins = one_user.pins(galaxy_layer_pins(one_user.graph, one_user.views, False))  # 1 user: not over 4 columns
    assert dict((p.target, p.value) for p in pins if p.field == "split")["attention"] == "heads@rows"
    with pytest.raises(MeshError, match="8 x 4"):
        t3000 = Planner(load_mesh("t3000"), decoder_layer_graph(MODELS["llama-3-70b"], 32, False, DECODE_KV))
        galaxy_layer_pins(t3000.graph, t3000.views, False)


def test_layer_ops_and_skip_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    layers = mesh_layers("llama-3-70b")
    assert [x.phase for x in layers] == ["prefill 2k", "prefill 8k", "decode b1", "decode b32"]
    ops = layer_ops(layers[0])
    assert [o.label.split(": ")[1] for o in ops] == [
        "attn_norm", "qkv", "attention", "wo", "residual_attn", "ffn_norm", "w1", "w3", "swiglu", "w2", "residual_ffn",
    ]  # fmt: skip
    assert ops[2].options == frozenset({"causal"}) and ops[1].shape == "M=2048,N=10240,K=8192"
    t3000 = load_mesh("t3000")
    keys = {mesh_op_key(t3000, op) for op in ops}
    assert len(keys) == len(ops)
    todo, skipped = mesh_pending(layers[:2], ["t3000"], keys)  # the first layer recorded: only the second
    assert skipped == len(ops) and [t.layer for t in todo] == [layers[1]]
    todo, _ = mesh_pending(layers[:1], ["t3000"], set(list(keys)[1:]))  # one op missing: the layer again
    assert len(todo) == 1 and todo[0].ops == ops
    monkeypatch.setattr(mesh_task, "LAYER_PRECISION", "bf16")  # recorded at another preset: planned again
    assert len(mesh_pending(layers[:1], ["t3000"], keys)[0]) == 1
    monkeypatch.undo()
    failed = mesh_task.failed_layer("t3000", layers[0], "boom")
    assert {(r.precision, r.dtype, r.status) for r in failed} == {(mesh_task.LAYER_PRECISION, "bfloat16", "failed")}
    assert mesh_task.LAYER_PRECISION == "performance"  # tt-transformers' (mesh/precision.py), as the graph's
    assert mesh_task.layer_graph(layers[0])[0].precision == mesh_task.LAYER_PRECISION


def _record(label: str, ours_ns: float, ttnn_ns: float | None) -> SweepRecord:
    best = SweepChoice("N@ring", (("M", 32),), int(ours_ns), ours_ns, 0.5, ("x ring:Sc -> ring:R: all_gather",))
    return SweepRecord(
        label, "t3000", "", "0", label, "gemm", "M=32,K=64,N=64", "bfloat16", "hifi2", (), "ok", "", best, None,
        None, ttnn_ns, "split K@ring; w2 ring:P -> ring:Sc: reduce_scatter" if ttnn_ns else "no split", 1.0,
    )  # fmt: skip


def test_report_gives_a_mesh_its_layer_and_op_tables() -> None:
    records = [
        _record("llama-3-70b decode b32: w1", 1000.0, 3000.0),
        _record("llama-3-70b decode b32: w2", 3000.0, 3000.0),
    ]
    rows = mesh_layer_rows(records)
    assert rows == [["t3000: llama-3-70b decode b32", "not recorded", "2", "4.0", "6.0", "1.50x"]]  # 6 us / 4 us
    text = report_markdown(records, "t")
    assert "## Mesh layers" in text and "## t3000 (mesh)" in text
    assert "| M=32,K=64,N=64 | not recorded |" in text  # a record without a precision (an older store's)
    records = [replace(r, precision="performance") for r in records]
    assert mesh_layer_rows(records)[0][:2] == ["t3000: llama-3-70b decode b32", "performance"]
    assert "| M=32,K=64,N=64 | performance |" in report_markdown(records, "t")
    # the model's error beside a mesh's ops is its chip's (every device of a T3000 is a wormhole_n300)
    assert model_error(records[0]) == error_for_op("gemm", {"M": 32, "K": 64, "N": 64}, "wormhole_n300")
    assert model_error(records[0]) != error_for_op("gemm", {"M": 32, "K": 64, "N": 64}, "t3000")
    assert "K@ring<br>w2 ring:P -> ring:Sc: reduce_scatter" in text and "3.00x" in text
    assert SweepChoice.from_json(records[0].best.to_json()) == records[0].best
    unpriced = mesh_layer_rows([_record("m p: a", 1000.0, None), _record("m p: b", 2000.0, 5.0)])
    assert unpriced[0][3:] == ["3.0", "-", "-"]  # ours is the layer still; ttnn's needs every op


@contextlib.contextmanager
def _in_process_client(scheduler: str | None, workers: int | None, stop: object = None) -> Iterator[object]:
    from distributed import Client, LocalCluster

    with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        yield client


@pytest.mark.slow
def test_a_tiny_layer_swept_on_a_t3000(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(MODELS, "tiny", Transformer(hidden=256, ffn=512, heads=8, kv_heads=8, head_dim=64))
    monkeypatch.setattr(mesh_task, "PHASES", (("decode b32", 32, False),))
    monkeypatch.setattr(sweep_run, "dask_client", _in_process_client)
    monkeypatch.setenv("LOOM_EXPLORER_STORE", str(tmp_path / "memory.sqlite"))
    store = tmp_path / "sweep.sqlite"
    layers = mesh_layers("tiny")
    summary = run_sweep([], [], store, meshes=["t3000"], layers=layers, settings=SweepSettings(60.0), progress=None)
    assert (summary.solved, summary.failed) == (11, 0)
    with open_store(store) as s:
        records = s.sweep_results()
    assert {r.hardware for r in records} == {"t3000"} and all(r.best and r.ttnn_default_ns for r in records)
    assert {(r.precision, r.dtype) for r in records} == {("performance", "bfloat16")}  # weights', activations'
    # the shares add up to the planned layers (mesh_task checks it too): ours proven no slower than ttnn's
    graph, _ = mesh_task.layer_graph(MeshLayer("tiny", "decode b32"))
    planner = Planner(load_mesh("t3000"), graph)
    ours, ttnn = planner.plan(), planner.plan(mesh_task.ttnn_split_pins(planner.mesh, graph, planner.views, False))
    cycles = sum(r.best.latency_cycles for r in records if r.best)
    assert cycles == ours.result.latency_cycles
    assert sum(r.ttnn_default_ns or 0 for r in records) >= sum(r.best.latency_ns for r in records if r.best) - 1e-6
    assert ttnn.result.latency_cycles >= cycles
    again = run_sweep([], [], store, meshes=["t3000"], layers=layers, settings=SweepSettings(60.0), progress=None)
    assert (again.solved, again.skipped) == (0, 11)
