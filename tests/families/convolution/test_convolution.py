"""The convolution family: its program analysis, its model (the implicit GEMM with ttnn's K blocking and the
halo'd shard), the conv2d rows of the shipped DeepLabV3 capture read and predicted with the config each
ran, a better Conv2dConfig written back, and the TT-Lang refusal."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from loom_explorer.accuracy.capture import Columns, ProfilerRow, attributes_of
from loom_explorer.accuracy.ingest import IngestedOp, Predictor, op_problem, read_ops_perf
from loom_explorer.families.convolution.accuracy import read_conv
from loom_explorer.families.convolution.implicit_gemm import gemm_problem, k_tiles
from loom_explorer.families.convolution.program import analyse_convolution
from loom_explorer.families.convolution.ttlang import REASON
from loom_explorer.families.convolution.ttnn import OP, shard_layout
from loom_explorer.families.convolution.ttnn_config import (
    TtnnConv2dConfig,
    core_ranges,
    evaluate_conv_config,
    exported_conv_config,
)
from loom_explorer.hardware import load_hardware
from loom_explorer.mapping.enumerate import enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.problem import Placement, make_problem
from loom_explorer.program import Dim, Matmul, Tensor, TileProgram, load_program
from loom_explorer.program.family import ProgramStructureError
from loom_explorer.program.structure import program_family
from loom_explorer.solve.solver import Session
from loom_explorer.targets.ttlang.writer import ttlang_writers
from loom_explorer.targets.ttnn.evaluate import ConfigError
from loom_explorer.targets.ttnn.op import CapturedCall, problem_ttnn_op

CAPTURES = Path(__file__).resolve().parents[3] / "loom_explorer" / "data" / "published" / "captures"
DLV3 = CAPTURES / "bh_p100_dlv3.csv.gz"
CONV = load_program("conv2d")
HEIGHT = {"in0": Placement.l1_height, "out": Placement.l1_height}


def _conv_rows(path: Path, count: int) -> list[ProfilerRow]:
    with gzip.open(path, "rt") as f:
        import csv

        reader = csv.reader(f)
        columns = Columns(next(reader))
        rows = [ProfilerRow(columns, r) for r in reader if r and r[0] == "Conv2dDeviceOperation"]
    return rows[:count]


def test_conv2d_is_the_convolution_family_and_gemm_is_not() -> None:
    assert program_family(CONV).name == "convolution"
    assert program_family(load_program("gemm")).name == "contraction"
    conv = analyse_convolution(CONV)
    assert (conv.m_dim, conv.n_dim, conv.rows_dim, conv.window_dim) == ("M", "N", "KH", "KWC")
    assert conv.split_dims == ()


def test_a_spread_reduction_dimension_is_refused() -> None:
    program = TileProgram(
        name="spread_conv",
        description="",
        dims=(
            Dim("M", "parallel"),
            Dim("N", "parallel"),
            Dim("KH", "reduction", tile=1, spread=False),
            Dim("KWC", "reduction"),
        ),
        tensors=(
            Tensor("a", ("M", "KH", "KWC"), "input"),
            Tensor("b", ("KH", "KWC", "N"), "input"),
            Tensor("c", ("M", "N"), "output"),
        ),
        ops=(Matmul("a", "b", "c"),),
    )
    with pytest.raises(ProgramStructureError, match="KWC must be declared spread=False"):
        analyse_convolution(program)


def test_the_implicit_gemm_pads_each_filter_row_to_whole_tiles() -> None:
    problem = make_problem(CONV, "M=131072,N=64,KH=3,KWC=24")  # 3x3 conv of 8 channels: 24 per filter row
    assert k_tiles(problem) == 3  # not ceil(72/32) = 3 by chance: 3 rows of one tile each
    wide = make_problem(CONV, "M=4096,N=64,KH=3,KWC=40")
    assert k_tiles(wide) == 6  # 3 rows of ceil(40/32) = 2 tiles, not ceil(120/32) = 4
    assert gemm_problem(wide).elements("K") == 6 * 32


def test_the_model_keeps_ttnn_output_block_and_the_halo_shard() -> None:
    hw = load_hardware("blackhole_p150a")
    problem = make_problem(CONV, "M=65536,N=64,KH=3,KWC=192", placements=HEIGHT)
    cand = next(c for c in enumerate_candidates(problem) if shard_layout(problem, c) == "HEIGHT_SHARDED")
    schedule = build_schedule(hw, problem, cand)
    blocking = [c for c in schedule.constraints if c.name == "conv_weight_block_w"]
    assert len(blocking) == 1 and blocking[0].kind == "eq"
    shard = next(b for b in schedule.l1_buffers if b.name == "in0_shard")
    # per_core_M tiles of pixels by 2 tiles of channels (6 window tiles / 3 rows), not per_core_M x 18
    assert "halo'd input shard" in shard.description
    values = {"per_core_M": 10}
    from loom_explorer.model.expr import evaluate

    assert evaluate(shard.bytes_expr, values) == 10 * 2 * hw.tile_bytes[problem.data_format("in0")]


def test_the_solver_computes_a_core_s_whole_output_width() -> None:
    hw = load_hardware("blackhole_p150a")
    problem = make_problem(CONV, "M=65536,N=64,KH=3,KWC=192", placements=HEIGHT)
    session = Session(hw, problem)
    results = session.solve()
    assert results and all(r.solution is not None for r in results)
    for r in results:
        assert r.solution is not None
        params = dict(r.solution.params)
        assert params["out_block_w"] == params["per_core_N"]


@pytest.fixture(scope="module")
def dlv3_ops() -> list[IngestedOp]:
    return [op for op in read_ops_perf(DLV3).ops if op.kernel == "conv2d"]


def test_the_first_dlv3_conv_row_reads_as_ttnn_ran_it() -> None:
    row = _conv_rows(DLV3, 1)[0]
    attributes = row.get("ATTRIBUTES")
    attrs, compute = attributes_of(attributes)
    reading = read_conv(row, attributes, attrs, compute)
    # 3x3 stride-2 conv of a 512x1024 image of 3 channels padded to 8: 256*512 output pixels, K = 3 x 32
    assert reading.shape == {"M": 131072, "N": 64, "KH": 3, "KWC": 32}
    assert reading.activation == "relu" and reading.bias
    cfg = reading.config
    assert isinstance(cfg, TtnnConv2dConfig)
    assert cfg.shard_layout == "HEIGHT_SHARDED" and cfg.compute_with_storage_grid_size == (11, 10)
    m = cfg.memory
    assert (m.per_core_out_matrix_height_ntile, cfg.act_block_h_override, m.act_block_w_ntiles) == (38, 38 * 32, 1)


def test_every_dlv3_conv_is_predicted_with_its_config(dlv3_ops: list[IngestedOp]) -> None:
    assert len(dlv3_ops) == 46
    predictor = Predictor(load_hardware("blackhole_p100a"), str(DLV3), (11, 10))
    layouts = set()
    for op in dlv3_ops:
        predicted = predictor(op)
        assert predicted.failure == "", predicted.failure
        assert predicted.evaluated is not None and predicted.evaluated.result.solution is not None
        assert isinstance(op.config, TtnnConv2dConfig)
        layouts.add((op.config.shard_layout, predicted.evaluated.result.candidate_name))
    assert layouts == {
        ("HEIGHT_SHARDED", "M@xy|in0=local,in1=mcast_xy"),
        ("BLOCK_SHARDED", "M@y,N@x|in0=mcast_x,in1=mcast_y"),
    }


def test_a_config_written_back_costs_as_the_one_read(dlv3_ops: list[IngestedOp]) -> None:
    hw = load_hardware("blackhole_p100a")
    op = dlv3_ops[0]
    problem = op_problem(op)
    assert problem is not None and isinstance(op.config, TtnnConv2dConfig)
    ran = OP.captured(hw, problem, CapturedCall(op.config)) if OP.captured else None
    assert ran is not None
    again = exported_conv_config(problem, "Conv2dConfig", op.config.model_dump(mode="json", exclude={"compute"}))
    assert evaluate_conv_config(hw, problem, again).values == ran[1].values
    with pytest.raises(ConfigError, match="takes a Conv2dConfig"):
        exported_conv_config(problem, "MatmulMultiCoreReuseMultiCastProgramConfig", {})


def test_the_solved_schedule_writes_a_config_ttnn_resolves(dlv3_ops: list[IngestedOp]) -> None:
    hw = load_hardware("blackhole_p100a")
    problem = op_problem(dlv3_ops[1])  # a 3x3 conv of 64 channels, height sharded
    assert problem is not None and problem_ttnn_op(problem) is OP
    session = Session(hw, problem)
    schedule = next(s for s in session.schedules if OP.runs(problem, s.candidate))
    result = session.solve(candidates=[schedule.candidate.name])[0]
    assert result.solution is not None
    name, args, _ = OP.equivalent(schedule, dict(result.solution.params))
    assert name is not None
    cfg = exported_conv_config(problem, name, args)
    assert isinstance(cfg, TtnnConv2dConfig) and cfg.memory.act_block_w_ntiles == 6  # ttnn's: one filter row
    assert set(cfg.ttnn_arguments()) == {
        "act_block_h_override",
        "transpose_shards",
        "enable_act_double_buffer",
        "enable_weights_double_buffer",
    }
    assert "shard_layout=ttnn.TensorMemoryLayout.HEIGHT_SHARDED" in cfg.ttnn_lines()[0]
    cores = sum((x1 - x0 + 1) * (y1 - y0 + 1) for (x0, y0), (x1, y1) in core_ranges(cfg))
    assert cores == cfg.memory.num_cores_nhw
    assert evaluate_conv_config(hw, problem, cfg).result.solution is not None


def test_width_sharded_and_grouped_convs_are_skipped_with_the_reason() -> None:
    row = _conv_rows(DLV3, 1)[0]
    attributes = row.get("ATTRIBUTES")
    width = attributes.replace("HEIGHT_SHARDED", "WIDTH_SHARDED")
    attrs, compute = attributes_of(width)
    from loom_explorer.accuracy.capture import RowSkip

    with pytest.raises(RowSkip, match="WIDTH_SHARDED conv: another program factory"):
        read_conv(row, width, attrs, compute)
    grouped = attributes.replace("'groups': '1'", "'groups': '64'")
    attrs, compute = attributes_of(grouped)
    with pytest.raises(RowSkip, match="groups=64"):
        read_conv(row, grouped, attrs, compute)


def test_ttlang_refuses_a_convolution_with_the_reason() -> None:
    hw = load_hardware("wormhole_n150")
    problem = make_problem(CONV, "M=4096,N=64,KH=3,KWC=192")
    schedule = build_schedule(hw, problem, enumerate_candidates(problem)[0])
    assert ttlang_writers()["convolution"].unsupported(schedule) == REASON


def test_the_ttnn_export_refuses_what_no_conv_runs() -> None:
    from loom_explorer.export.exporter import ExportError
    from loom_explorer.families.convolution.ttnn import conv_geometry

    hw = load_hardware("wormhole_n150")
    dram = make_problem(CONV, "M=4096,N=64,KH=3,KWC=192")  # the activation read from DRAM: no ttnn conv
    schedule = build_schedule(hw, dram, enumerate_candidates(dram)[0])
    with pytest.raises(ExportError, match="not what ttnn's sharded conv runs"):
        OP.equivalent(schedule, {})
    with pytest.raises(ExportError, match="square, stride-1, same-padded"):
        conv_geometry(make_problem(CONV, "M=4096,N=64,KH=3,KWC=32", placements=HEIGHT))  # 32 is no 3 columns
    geometry = conv_geometry(make_problem(CONV, "M=4096,N=64,KH=3,KWC=192", placements=HEIGHT))
    assert (geometry.height, geometry.width, geometry.channels) == (64, 64, 64)


def test_ttnn_sub_block_rule_reproduces_every_captured_conv(dlv3_ops: list[IngestedOp]) -> None:
    from loom_explorer.families.convolution.ttnn_config import ttnn_subblock

    for op in dlv3_ops:
        problem, cfg = op_problem(op), op.config
        assert problem is not None and isinstance(cfg, TtnnConv2dConfig)
        m = cfg.memory
        picked = ttnn_subblock(problem, cfg.act_block_h_ntiles, m.per_core_out_matrix_width_ntile)
        assert picked == (m.out_subblock_h_ntiles, m.out_subblock_w_ntiles), op.row


def test_the_default_is_ttnn_s_height_sharded_resolution() -> None:
    from loom_explorer.families.convolution.ttnn_config import closest_divisor_with_padding, default_conv

    # 4096 output rows of tiles on 110 cores: 110 and 109 pad by a core's share or more, 108 does not
    assert closest_divisor_with_padding(4096, 110) == 108
    hw = load_hardware("blackhole_p100a")
    problem = make_problem(CONV, "M=131072,N=64,KH=3,KWC=192")
    cfg, evaluated = default_conv(hw, problem)
    assert isinstance(cfg, TtnnConv2dConfig) and cfg.memory.num_cores_nhw == 108
    assert cfg.memory.per_core_out_matrix_height_ntile == 38 and cfg.act_block_h_ntiles == 38
    assert evaluated.result.candidate_name == "M@xy|in0=local,in1=mcast_xy"


def test_the_buffers_follow_the_double_buffer_flags(dlv3_ops: list[IngestedOp]) -> None:
    from loom_explorer.families.convolution.ttnn_config import buffer_depths

    op = dlv3_ops[0]  # height sharded, one activation block per core, act double buffered, weights not
    problem = op_problem(op)
    assert problem is not None and isinstance(op.config, TtnnConv2dConfig)
    assert op.config.enable_act_double_buffer and not op.config.enable_weights_double_buffer
    assert buffer_depths(problem, op.config) == {"in0_buffer_depth": 2, "in1_buffer_depth": 1}
    several = op.config.model_copy(update={"act_block_h_override": 32 * 19})  # two blocks per core
    assert buffer_depths(problem, several)["in1_buffer_depth"] == 3  # the weights held whole: KH blocks


def test_an_older_ttnn_s_field_names_read_alike() -> None:
    row = _conv_rows(DLV3, 1)[0]
    attributes = row.get("ATTRIBUTES")
    older = attributes.replace("Conv2dParallelizationConfig", "OptimizedConvParallelizationConfig").replace(
        "_ntile=", "_ntiles="
    )
    attrs, compute = attributes_of(older)
    assert read_conv(row, older, attrs, compute).config == read_conv(row, attributes, *attributes_of(attributes)).config


def test_an_older_capture_s_optimized_conv_rows_are_read() -> None:
    path = CAPTURES / "ops_perf_results_2025_02_16_18_11_10.csv.gz"  # OptimizedConvNew, no PAD[LOGICAL] columns
    with gzip.open(path, "rt") as f:
        import csv

        reader = csv.reader(f)
        columns = Columns(next(reader))
        row = next(ProfilerRow(columns, r) for r in reader if r and r[0] == "OptimizedConvNew")
    attributes = row.get("ATTRIBUTES")
    reading = read_conv(row, attributes, *attributes_of(attributes))
    # a 7x7 stride-4 conv of a 512x512 image of 3 (padded to 16) channels: 128x128 pixels, K = 7 rows x 4 tiles
    assert reading.shape == {"M": 16384, "N": 32, "KH": 7, "KWC": 128}
    cfg = reading.config
    assert isinstance(cfg, TtnnConv2dConfig) and cfg.memory.per_core_out_matrix_height_ntile == 8  # 256 rows
    assert cfg.memory.per_core_out_matrix_width_ntile == 1 and cfg.act_block_h_ntiles == 8


def test_the_ttnn_file_calls_conv2d_with_the_schedule_s_config() -> None:
    from loom_explorer.export.schedule_json import rebuild_own, schedule_document
    from loom_explorer.solve.solver import SolveOptions
    from loom_explorer.targets.ttnn.exporter import ttnn_source

    hw = load_hardware("wormhole_n150")
    problem = make_problem(CONV, "M=4096,N=128,KH=3,KWC=192", placements=HEIGHT, activation="relu")
    result = next(
        r for r in Session(hw, problem).solve() if r.solution and r.candidate_name == "M@xy|in0=local,in1=mcast_xy"
    )
    doc = schedule_document(hw, "wormhole_n150", "conv2d", problem, result, SolveOptions())
    source = ttnn_source(rebuild_own(doc), doc)
    assert "PROGRAM_CONFIG_CLASS = 'Conv2dConfig'" in source and "ttnn.conv2d(" in source
    assert "in_channels=64, out_channels=128" in source and "input_height=64, input_width=64" in source
    assert 'shard_layout=getattr(ttnn.TensorMemoryLayout, resolved["shard_layout"])' in source
    assert "ttnn.UnaryWithParam(ttnn.UnaryOpType.RELU)" in source and "torch.relu(" in source
    compile(source, "exported_conv.py", "exec")  # valid Python (tests/ttnn_contract builds it with ttnn)


def test_every_pool_and_upsample_row_is_skipped_with_its_one_reason() -> None:
    from loom_explorer.families.convolution.accuracy import WINDOW_OP_SKIPS

    report = read_ops_perf(DLV3)
    reasons: dict[str, set[str]] = {}
    for s in report.skipped:
        if s.op_code.lower() in WINDOW_OP_SKIPS:
            reasons.setdefault(s.op_code.lower(), set()).add(s.reason)
    assert {code: {*r} for code, r in reasons.items()} == {code: {WINDOW_OP_SKIPS[code]} for code in reasons}
    assert set(reasons) == set(WINDOW_OP_SKIPS)
