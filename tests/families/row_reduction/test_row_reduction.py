"""The row-reduction family (``families/row_reduction/program.py``, its model): which programs it
takes, its candidates, its latency by hand, CP-SAT against brute force, the traffic of a split row, and
where the shape sends the work."""

from __future__ import annotations

import math

import pytest
from loom_helpers import assert_result_sound

from loom_explorer.brute import brute_force
from loom_explorer.hardware import load_hardware
from loom_explorer.mapping import enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.model.expr import evaluate
from loom_explorer.problem import KernelTarget, Placement, make_problem
from loom_explorer.program import ProgramError, analyse_program, load_program, program_family
from loom_explorer.program.dsl import Dim, Eltwise, Reduce, Tensor, TileProgram
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.targets.ttnn.defaults import evaluate_interleaved_default
from loom_explorer.traffic.tiles import tile_traffic
from loom_explorer.traffic.transfers import schedule_transfers
from loom_explorer.validate import referee

HW = ("H", "W")


def program(tensors: tuple[Tensor, ...], ops: tuple[Eltwise | Reduce, ...]) -> TileProgram:
    return TileProgram(
        name="t", description="test", dims=(Dim("H", "parallel"), Dim("W", "reduction")), tensors=tensors, ops=ops
    )


def test_the_shipped_norms_and_softmax_are_row_reductions() -> None:
    for name in ("softmax", "rmsnorm", "layernorm"):
        st = analyse_program(load_program(name))
        assert program_family(load_program(name)).name == "row_reduction"
        assert st.spread_dims == ("H",) and st.split_dims == ("W",) and st.gather_1d
    assert [r.op for r in analyse_program(load_program("layernorm")).reductions] == ["mean", "mean"]  # type: ignore[attr-defined]
    assert program_family(load_program("swiglu")).name == "elementwise"


X, Y, S = Tensor("x", HW, "input"), Tensor("y", HW, "output"), Tensor("s", ("H",), "intermediate")


@pytest.mark.parametrize(
    ("tensors", "ops", "says"),
    [
        ((X, S, Y), (Reduce("sum", "y", operand="x"),), "Reduce sum reduces"),
        (
            (X, S, Y),
            (Eltwise("mul", "y", unit="fpu", operand="s", source="x"), Reduce("sum", "s", operand="x")),
            "reads s before any op writes it",
        ),
        ((X, S, Y), (Reduce("sum", "s", operand="x"), Eltwise("mul", "y", unit="fpu", operand="s")), "names no source"),
        ((X, S, Tensor("y", ("W",), "output")), (Reduce("sum", "s", operand="x"),), "output y"),
        ((X, S, Y), (Reduce("sum", "s", operand="x"),), "no op writes output y"),
    ],
)
def test_malformed_row_reductions_are_refused_naming_the_fault(tensors, ops, says) -> None:
    with pytest.raises(ProgramError, match=says):  # the DSL's own refusals, or the family's (a subclass)
        analyse_program(program(tensors, ops))


def test_candidates_keep_rows_whole_or_split_them_with_a_gather() -> None:
    names = {
        c.name.split("|")[0]: c for c in enumerate_candidates(make_problem(load_program("softmax"), "H=2048,W=2048"))
    }
    assert set(names) == {"H@y,W@x", "W@y,H@x", "H@xy", "W@xy"}
    assert names["H@y,W@x"].gather_axis == "x" and names["W@xy"].gather_axis == "xy"
    assert names["H@xy"].gather_axis is None
    # a decode row (one tile high): only its columns can be spread
    thin = {c.name.split("|")[0] for c in enumerate_candidates(make_problem(load_program("rmsnorm"), "H=32,W=4096"))}
    assert thin == {"W@xy"}


def test_latency_by_hand_on_rows_kept_whole() -> None:
    """softmax on a 1 x 1 grid (rows on x), 4 x 8 tiles in blocks of 2 rows, x double-buffered."""
    hw = load_hardware("wormhole_n150")
    problem = make_problem(load_program("softmax"), "H=128,W=256")
    candidate = next(c for c in enumerate_candidates(problem) if c.name == "H@xy|x=dram")
    verdict = referee(
        build_schedule(hw, problem, candidate, noc_bound=False),
        {"grid_x": 1, "grid_y": 1, "per_core_H": 4, "block_h": 2, "x_buffer_depth": 2},
    )
    assert verdict.legal and verdict.solution is not None
    c, d = hw.compute, hw.dram
    block, col = 2 * 8, 2
    sfpu = c.sfpu_tile_cycles
    assert c.unpack_bytes_per_cycle is not None
    # an FPU op unpacks two bfloat16 tiles (a reduction: its operand and the scaler) at U bytes a cycle
    fpu = max(c.eltwise_tile_cycles, math.ceil(2 * 2048 / c.unpack_bytes_per_cycle))
    # TTNN's softmax acquires Dst once a row for a reduction or the column vector's ops, once per blk = 8
    # tiles (a row) of a pass over the rows: o a row, ceil(o / 8) a tile
    o, o_tile = c.subblock_overhead_cycles, math.ceil(c.subblock_overhead_cycles / 8)
    # max(x), x - m and exp on e (one pack), sum(e), recip on s, e * s: each pass over its tiles
    compute = (
        block * fpu
        + col * (c.tile_pack_cycles + o)
        + block * (fpu + sfpu["exp"] + c.tile_pack_cycles + o_tile)
        + block * fpu
        + col * (c.tile_pack_cycles + o)
        + col * (sfpu["recip"] + c.tile_pack_cycles + o)
        + block * (fpu + c.tile_pack_cycles + o_tile)
    )
    read = math.ceil(block * 2048 / d.core_read_bytes_per_cycle) + d.read_latency_cycles
    write = math.ceil(block * 2048 / d.core_write_bytes_per_cycle)
    chip = math.ceil(block * 2048 / d.chip_read_bytes_per_cycle)
    step = max(compute, read, write, chip)
    fill = math.ceil(2048 / d.core_read_bytes_per_cycle) + d.read_latency_cycles
    drain = math.ceil(2048 / d.core_write_bytes_per_cycle) + d.write_latency_cycles
    terms = dict(verdict.solution.breakdown)
    assert terms["compute"] == 2 * compute and terms["fill"] == fill and terms["write_back"] == drain
    assert verdict.solution.latency_cycles == c.kernel_launch_cycles + fill + 2 * step + drain


@pytest.mark.parametrize("target", [KernelTarget.ttnn, KernelTarget.ttlang])
def test_ttnn_s_layernorm_packs_after_every_fpu_op(target: KernelTarget) -> None:
    """layernorm on one core, two blocks of one row of 8 tiles: mean(x), x - mu, c * c, mean(q), r's add and
    rsqrt, then y = c * r * gamma + beta. TTNN's kernel packs after each of the last three FPU ops
    (``work.py``) and so unpacks two bfloat16 tiles for each (``u``, at Wormhole's U = 64 B/cycle); the
    TT-Lang kernel chains the run in the registers, packs once and unpacks only gamma, then beta, after the
    first op. TTNN's also acquires the destination registers per block of each pass (``work.py``)."""
    hw = load_hardware("wormhole_n150")
    problem = make_problem(load_program("layernorm"), "H=64,W=256", target=target)
    candidate = next(c for c in enumerate_candidates(problem) if c.name == "H@xy|x=dram,gamma=dram,beta=dram,eps=dram")
    verdict = referee(
        build_schedule(hw, problem, candidate, noc_bound=False),
        {"grid_x": 1, "grid_y": 1, "per_core_H": 2, "block_h": 1, "x_buffer_depth": 2},
    )
    assert verdict.solution is not None
    c, sfpu = hw.compute, hw.compute.sfpu_tile_cycles
    assert c.unpack_bytes_per_cycle is not None
    block, e, p = 8, c.eltwise_tile_cycles, c.tile_pack_cycles
    u = max(e, math.ceil(2 * 2048 / c.unpack_bytes_per_cycle))  # two bfloat16 tiles unpacked: 64
    one = max(e, math.ceil(2048 / c.unpack_bytes_per_cycle))  # one: 32
    ttnn = target is KernelTarget.ttnn
    y = 3 * u + 3 * p if ttnn else u + 2 * one + p
    # TTNN acquires Dst once a row for each reduction and for r, once per blk = 8 tiles for each pack set
    o = c.subblock_overhead_cycles if ttnn else 0
    compute = (
        block * u
        + p  # mean(x) (x and the scaler unpacked), its one tile packed
        + block * (u + p)  # c = x - mu
        + block * (u + p)  # q = c * c
        + block * u
        + p  # mean(q)
        + (u + sfpu["rsqrt"] + p)  # r = rsqrt(r + eps), one tile
        + block * y  # y = c * r * gamma + beta
        + 3 * o
        + block * (math.ceil(o / 8) * 2 + math.ceil(3 * o / 8))
    )
    assert dict(verdict.solution.breakdown)["compute"] == 2 * compute


def test_a_split_row_gathers_each_reduction_and_multicasts_it_back() -> None:
    """layernorm on 4 cores along x (one tile row of 8 tiles each split 4 ways): per reduction the three
    other cores send their partial tile to core (0, 0), which multicasts the combined one back."""
    hw = load_hardware("wormhole_n150")
    problem = make_problem(load_program("layernorm"), "H=32,W=1024")
    candidate = next(
        c for c in enumerate_candidates(problem) if c.name.startswith("W@xy|x=dram,gamma=dram,beta=dram,eps=dram")
    )
    schedule = build_schedule(hw, problem, candidate)
    values = {"grid_x": 4, "grid_y": 1, "per_core_W": 8, "block_h": 1, "x_buffer_depth": 2}
    verdict = referee(schedule, values)
    assert verdict.legal and verdict.solution is not None
    assert dict(verdict.solution.breakdown)["gather"] > 0
    traffic = tile_traffic(hw, problem, schedule_transfers(hw, schedule, values))
    assert traffic.dram_read_tiles == {"x": 32, "gamma": 32, "beta": 32, "eps": 4}
    assert traffic.dram_written_tiles == {"y": 32}
    # two reductions: a partial from each of 3 cores into (0, 0), a combined tile to each of 3 cores
    assert traffic.pipe_received_tiles == {(0, 0): 2 * 3, (1, 0): 2, (2, 0): 2, (3, 0): 2}


@pytest.mark.parametrize(
    ("kernel", "shape"), [("softmax", "H=96,W=128"), ("rmsnorm", "H=64,W=96"), ("layernorm", "H=32,W=128")]
)
def test_cpsat_optimum_equals_brute_force(tiny_hw, solve_cached, kernel: str, shape: str) -> None:
    session, results = solve_cached(tiny_hw, kernel, shape)
    assert results
    for r in results:
        schedule = session.schedule(r.candidate_name)
        assert_result_sound(schedule, r)
        brute = brute_force(schedule, time_limit_seconds=60)
        assert brute.complete, r.candidate_name
        assert (r.solution.latency_cycles if r.solution else None) == brute.best_latency_cycles, r.candidate_name


def test_the_shape_decides_whether_rows_stay_whole() -> None:
    """A decode row (one tile high) is split over many cores with gathers; with 256 rows of tiles, splitting
    every row over a 1-D layout (each core gathers for all 256) costs over twice the best, which spreads
    the rows (the norm is then bound by DRAM, 16 MB each way)."""
    hw = load_hardware("wormhole_n150")
    decode = Session(hw, make_problem(load_program("rmsnorm"), "H=32,W=8192")).solve({}, SolveOptions(fastest=1))[0]
    assert decode.solution is not None and decode.candidate_name.startswith("W@xy"), decode.candidate_name
    values = decode.solution.values()
    assert values["grid_x"] * values["grid_y"] >= 8, values
    prefill: dict[str, int] = {}
    for r in Session(hw, make_problem(load_program("rmsnorm"), "H=8192,W=1024")).solve({}, SolveOptions()):
        assert r.solution is not None, r.candidate_name
        layout = r.candidate_name.split("|")[0]
        prefill[layout] = min(prefill.get(layout, r.solution.latency_cycles), r.solution.latency_cycles)
    best = min(prefill.values())
    assert prefill["W@xy"] > 2 * best and prefill["H@xy"] < 1.05 * best, prefill


def test_an_l1_sharded_input_is_held_whole_and_never_read_from_dram() -> None:
    """rmsnorm with x width-sharded in L1 (TTNN's sharded norm): each core holds its 2 x 8 tiles of x for
    the whole kernel, reads none of them from DRAM, and still gathers the reduction (two blocks of one
    tile row: three partials into core 0 for each)."""
    hw = load_hardware("wormhole_n150")
    problem = make_problem(load_program("rmsnorm"), "H=64,W=1024", placements={"x": Placement.l1_width})
    candidate = next(c for c in enumerate_candidates(problem) if c.name == "W@xy|x=local,gamma=dram,eps=dram")
    schedule = build_schedule(hw, problem, candidate)
    values = {"grid_x": 4, "grid_y": 1, "per_core_W": 8, "block_h": 1, "x_buffer_depth": 2}
    verdict = referee(schedule, values)
    assert verdict.legal and verdict.solution is not None
    buffers = {b.name: b for b in schedule.l1_buffers}
    assert "x_shard" in buffers and "x" not in buffers
    assert evaluate(buffers["x_shard"].bytes_expr, values) == 2 * 8 * 2048  # both tile rows of its 8 columns, bf16
    traffic = tile_traffic(hw, problem, schedule_transfers(hw, schedule, values))
    assert "x" not in traffic.dram_read_tiles and traffic.dram_written_tiles == {"y": 64}
    assert traffic.pipe_received_tiles == {(0, 0): 2 * 3, (1, 0): 2, (2, 0): 2, (3, 0): 2}


def test_every_core_s_dram_reads_and_writes_share_the_chip_s_dram_rate() -> None:
    """DeepSeek's RMS norm, 3200 x 512 on Blackhole, as ttnn's interleaved default runs it: 100 tile rows on
    100 cores, each reading its row of x (16 bf16 tiles), its own gamma (16) and eps (1) and writing its
    row of y (16). The whole kernel's DRAM bytes, ``100 * (16 + 16 + 1 + 16) * 2048``, at the chip's 371
    B/cycle outlast the per-core blocks, so the latency is the launch plus that."""
    hw = load_hardware("blackhole_p150a")
    problem = make_problem(load_program("rmsnorm"), "H=3200,W=512")
    _, evaluated = evaluate_interleaved_default(hw, problem)
    solution = evaluated.result.solution
    assert solution is not None and evaluated.values["per_core_H"] == 1
    shared = math.ceil(100 * (16 + 16 + 1 + 16) * 2048 / hw.dram.chip_read_bytes_per_cycle)
    assert solution.latency_cycles == hw.compute.kernel_launch_cycles + shared
    terms = dict(solution.breakdown)
    assert sum(terms.values()) == solution.latency_cycles and terms["data_movement"] > terms["compute"]
