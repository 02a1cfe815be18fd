"""Ring-joint SDPA per device (families/attention/ring.py, ring_predict.py, ring_accuracy.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from loom_explorer.accuracy.ingest import choose_hardware, read_ops_perf, report_measurements
from loom_explorer.families.attention.ring import (
    RingError,
    RingStep,
    StepCosts,
    arrival_order,
    core_ranges,
    ring_index_of,
    ring_joint_latency,
    ring_joint_shape,
    step_kind,
)
from loom_explorer.families.attention.ring_predict import kv_arrivals, ring_mesh
from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.mesh_load import load_mesh
from loom_explorer.hardware.schema import DataFormat, Fidelity
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.targets.ttnn.op import RingAttentionCall

CAPTURE = (
    Path(__file__).parents[3] / "loom_explorer" / "data" / "published" / "captures" / "bh_8xp150_deepseek_v3_d_p.csv.gz"
)
COSTS = StepCosts(step=(("qk_matmul", 10.0),), chunk=(("write_back", 3.0),), merge_cycles=2.0, fixed=(("launch", 5.0),))


def test_the_arrival_order_is_the_fused_op_receivers() -> None:
    # the orders tt-metal's ring-joint SDPA notes verify for a line (Linear topology)
    assert [arrival_order(2, r) for r in range(2)] == [(0, 1), (1, 0)]
    assert [arrival_order(4, r) for r in range(4)] == [(0, 1, 2, 3), (1, 2, 0, 3), (2, 3, 1, 0), (3, 2, 1, 0)]
    assert arrival_order(8, 3) == (3, 4, 2, 5, 1, 6, 0, 7)
    with pytest.raises(RingError, match="ring_index"):
        arrival_order(2, 2)


def test_the_causal_structure_decides_each_step() -> None:
    assert step_kind(1, 1, causal=True, balanced=False) is RingStep.diagonal
    assert step_kind(1, 0, causal=True, balanced=False) is RingStep.full
    assert step_kind(0, 1, causal=True, balanced=False) is RingStep.skipped
    assert step_kind(1, 0, causal=True, balanced=True) is RingStep.half_kv
    assert step_kind(0, 1, causal=True, balanced=True) is RingStep.heavy_q
    assert step_kind(0, 1, causal=False, balanced=False) is RingStep.full


def test_device_ids_map_to_ring_indices_along_the_cluster_axis() -> None:
    assert [ring_index_of(d, 2, 4, 0) for d in range(8)] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert [ring_index_of(d, 2, 4, 1) for d in range(8)] == [0, 1, 2, 3, 0, 1, 2, 3]
    mesh = ring_mesh("blackhole_p150a", 8, 2)  # the shipped p150x8 (2x4): a ring of 2 runs down a column
    assert (mesh.rows, mesh.columns, mesh.cluster_axis) == (2, 4, 0)
    assert mesh.mesh is not None and mesh.mesh.name == "p150x8"
    assumed = ring_mesh("blackhole_p150a", 6, 2)  # no shipped mesh of 6 p150s: the stated assumption
    assert (assumed.rows, assumed.columns, assumed.cluster_axis, assumed.mesh) == (2, 3, 0, None)
    with pytest.raises(RingError, match="does not divide"):
        ring_mesh("blackhole_p150a", 6, 4)


def test_a_small_ring_by_hand() -> None:
    # 2 heads x 2 local Q chunks (128 tokens, 64-token chunks), 2 K/V chunks per device, 3 cores:
    # flat Q chunks dealt [0, 2), [2, 3), [3, 4); core 0 (2 chunks) is the slowest
    shape = ring_joint_shape(
        batch_heads=2,
        local_tokens=128,
        joint_tokens=0,
        q_chunk_size=64,
        k_chunk_size=64,
        ring_size=2,
        logical_n=256,
        causal=True,
        balanced=False,
    )
    assert core_ranges(4, 3) == ((0, 2), (2, 3), (3, 4))
    first = ring_joint_latency(shape, 0, 3, COSTS, {})
    later = ring_joint_latency(shape, 1, 3, COSTS, {})
    # device 0: its diagonal step only, 2 chunks x 2 K/V chunks: 5 + 4*10 + 2*3 = 51
    assert first.total_cycles == 51 and first.core_cycles == (51, 28, 28)
    assert [(w.ring_id, w.sdpa_steps) for w in first.work] == [(0, 4), (1, 0)]
    # device 1: the diagonal, then device 0's keys in full with the log-sum-exp merge: 51 + 40 + 6 + 2*2 = 101
    assert later.total_cycles == 101 and dict(later.terms)["lse_merge"] == 4
    assert later.sdpa_steps == 2 * first.sdpa_steps  # the later half of the sequence attends to twice the keys
    # a skipped step still waits for its keys: device 0 ends when device 1's K/V arrive
    waited = ring_joint_latency(shape, 0, 3, COSTS, {1: 200})
    assert waited.total_cycles == 200 and dict(waited.terms)["ring_wait"] == 149


def test_balanced_and_joint_steps() -> None:
    kw = dict(batch_heads=1, local_tokens=128, q_chunk_size=64, k_chunk_size=64, ring_size=2, logical_n=256)
    balanced = ring_joint_shape(**kw, joint_tokens=0, causal=True, balanced=True)
    # device 0 takes only its late Q chunk against device 1's keys; device 1 half of device 0's keys
    assert [balanced.runs(0, 1, q) for q in range(2)] == [False, True]
    assert balanced.kv_chunks(1, 0) == 1 and balanced.kv_chunks(0, 0) == 2
    joint = ring_joint_shape(**kw, joint_tokens=40, causal=False, balanced=False)
    assert (joint.joint_q_chunks, joint.joint_kv_chunks) == (1, 1)
    assert joint.kv_chunks(0, 1) == 3 and joint.kv_chunks(0, 0) == 2  # the last device's step adds the joint K/V
    short = ring_joint_shape(**(kw | {"logical_n": 160}), joint_tokens=0, causal=False, balanced=False)
    assert short.kv_chunks(1, 1) == 1  # device 1's second K/V chunk starts past logical_n


def test_kv_arrivals_grow_with_the_distance() -> None:
    mesh = load_mesh("t3000")
    hw = load_hardware(mesh.chip)
    problem = make_problem(
        load_program("flash_attention"), dict(B=1, H=8, Hkv=8, Sq=1024, Skv=1024, D=128), DataFormat.bfloat16,
        Fidelity.hifi2, options={"causal"},
    )  # fmt: skip
    call = RingAttentionCall(4, 0, False, 4096, 0, 8, 128, devices=4)
    placed = ring_mesh(mesh.chip, 8, 4)  # the T3000's 2x4: the ring of 4 along its columns
    assert (placed.cluster_axis, placed.mesh) == (1, mesh)
    arrivals = kv_arrivals(hw, problem, call, 0, placed)
    assert sorted(arrivals) == [1, 2, 3] and 0 < arrivals[1] < arrivals[2] < arrivals[3]
    assert arrivals[3] - arrivals[2] == arrivals[2] - arrivals[1]


def test_ingest_predicts_every_ring_joint_row_per_device() -> None:
    report = read_ops_perf(CAPTURE)
    assert not [s for s in report.skipped if s.op_code == "RingJointSDPADeviceOperation"]
    ring = tuple(op for op in report.ops if op.ring is not None)
    assert len(ring) == 8 and {op.ring.devices for op in ring if op.ring} == {8}
    hw, grid, _ = choose_hardware(report)
    measured = report_measurements(replace(report, ops=ring), hw, grid=grid)
    by_device = {op.device_id: m for op, m in zip(ring, measured, strict=True)}
    early = [by_device[d].predicted_ns or 0.0 for d in range(4)]
    late = [by_device[d].predicted_ns or 0.0 for d in range(4, 8)]
    assert len(set(early)) == 1 and len(set(late)) == 1  # devices of one ring index alike
    assert 1.8 < late[0] / early[0] < 2.2  # the later half attends to twice the keys (measured: 1.97)
    for m in measured:
        assert m.predicted_ns is not None and m.measured_ns is not None
        assert abs(m.predicted_ns / m.measured_ns - 1) < 0.2, m.note
