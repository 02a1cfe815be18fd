"""Group norm in the row-reduction family: the shipped kernel, ttnn's splits as its factories make them, the
profiler rows read with the split they ran, and their cost repeated per group and block."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from loom_explorer.accuracy.ingest import Predictor, captured_call, op_problem, parse_ops_perf, repeated_cycles
from loom_explorer.export.exporter import ExportError
from loom_explorer.families.row_reduction.groupnorm import (
    affine_overcount_cycles,
    affine_tile_cycles,
    config_of,
    evaluate_group_norm,
    interleaved_config,
    sharded_config,
    tile_span,
)
from loom_explorer.families.row_reduction.signature import is_group_norm
from loom_explorer.families.row_reduction.ttnn import OP
from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.grid import restrict_grid
from loom_explorer.hardware.schema import Fidelity
from loom_explorer.mapping import enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.problem import KernelTarget, make_problem
from loom_explorer.program import load_program, program_family
from loom_explorer.targets.ttnn.evaluate import ConfigError

CAPTURES = Path(__file__).resolve().parents[3] / "loom_explorer" / "data" / "published" / "captures"


def test_the_shipped_groupnorm_is_a_row_reduction_and_no_other_norm() -> None:
    program = load_program("groupnorm")
    assert program_family(program).name == "row_reduction" and is_group_norm(program)
    assert not any(is_group_norm(load_program(k)) for k in ("layernorm", "rmsnorm", "softmax"))


def test_a_group_s_tile_span() -> None:
    assert [tile_span(256, 16), tile_span(32, 4), tile_span(96, 48), tile_span(512, 64)] == [1, 1, 2, 2]


def test_the_interleaved_split_follows_the_mcast_factory() -> None:
    """OFT's 25344 x 256, 16 groups on a 4x4 grid, num_out_blocks 2: 4 channel columns of 64 channels (4
    groups each), 4 rows of cores of 198 tile rows, a group in 2 blocks of 99 tiles."""
    cfg = interleaved_config((4, 4), 25344, 256, 16, 2)
    assert (cfg.e_cores, cfg.per_core_E, cfg.groups_per_core, cfg.num_out_blocks) == (4, 198, 4, 2)
    assert (cfg.repeats, cfg.block_tiles, cfg.model_shape) == (8, 99, {"G": 1, "E": 4 * 99 * 32})
    # the factory's heuristic for -1: 25344*256 / (65536 * 16) = 6 -> the next power of two
    assert interleaved_config((4, 4), 25344, 256, 16, -1).num_out_blocks == 8


def test_the_sharded_split_follows_the_shard() -> None:
    height = sharded_config((5, 4), 30720, 64, 16, (1536, 64))
    assert (height.e_cores, height.per_core_E, height.groups_per_core) == (20, 48, 16)
    block = sharded_config((5, 4), 480, 512, 16, (96, 128))  # 4 groups of 32 channels a core
    assert (block.e_cores, block.per_core_E, block.groups_per_core) == (5, 3, 4)
    assert block.placements() and not interleaved_config((4, 4), 25344, 256, 16, 2).placements()
    with pytest.raises(ConfigError, match="whole groups"):
        sharded_config((5, 4), 480, 512, 16, (96, 100))
    with pytest.raises(ConfigError, match="not a group norm config"):
        config_of("LayerNormShardedMultiCoreProgramConfig(compute_with_storage_grid_size=(x=4;y=4))", "", 32, 64, 2)


def test_one_block_is_costed_on_the_multicast_group_with_gathers() -> None:
    hw = restrict_grid(load_hardware("blackhole_p150a"), 4, 4)
    cfg = interleaved_config((4, 4), 25344, 256, 16, 2)
    problem = make_problem(load_program("groupnorm"), cfg.model_shape)
    evaluated = evaluate_group_norm(hw, problem, cfg)
    solution = evaluated.result.solution
    assert solution is not None and evaluated.values["per_core_E"] == 99 and evaluated.values["grid_x"] == 4
    terms = dict(solution.breakdown)
    assert terms["gather"] > 0 and terms["compute"] > 0
    once = terms["launch"] + terms["fill"]
    assert repeated_cycles(solution, cfg.repeats) == once + 8 * (solution.latency_cycles - once)
    with pytest.raises(ConfigError, match="costs the groupnorm kernel"):
        evaluate_group_norm(hw, make_problem(load_program("groupnorm"), "G=1,E=64"), cfg)


def test_the_interleaved_reader_reads_each_tile_with_a_round_trip_three_times_and_the_output_back() -> None:
    """TTNN's interleaved group norm reader (``ttnn_reads.py``): a block of 99 bf16 tiles of x read 3 times
    and the 99 output tiles read back, each tile one DRAM round trip on Blackhole of ``L_read +
    ceil(2048 / r_core) = 479 + ceil(2048 / 34.9) = 479 + 59 = 538`` cycles, all exposed (x's buffer holds
    one block; the mask, double-buffered, hides behind compute): ``data_movement = 4 * 99 * 538``. The
    TT-Lang kernel of the same schedule streams the block once: no round trip a tile (and chains its ops in
    the destination registers, ``work.py``)."""
    hw = restrict_grid(load_hardware("blackhole_p150a"), 4, 4)
    cfg = interleaved_config((4, 4), 25344, 256, 16, 2)
    program = load_program("groupnorm")
    ttnn = evaluate_group_norm(hw, make_problem(program, cfg.model_shape), cfg).result.solution
    ttlang_problem = make_problem(program, cfg.model_shape, target=KernelTarget.ttlang)
    ttlang = evaluate_group_norm(hw, ttlang_problem, cfg).result.solution
    assert ttnn is not None and ttlang is not None
    assert dict(ttnn.breakdown)["data_movement"] == 4 * 99 * 538
    assert dict(ttlang.breakdown)["data_movement"] < 99 * 538
    # TTNN's compute packs after every FPU op (3 packs more a tile: centring and re-masking, scaling by
    # gamma and beta) and adds each group into the output (an FPU op and a pack): 3*24 + 32 + 24 a tile;
    # it acquires Dst per tile row of a group for each of its 7 pack sets and the accumulation, and once a
    # row for the two reductions and r (o = 6 on Blackhole, the rows a block: 1); its five multiplies (the
    # two maskings, c * c, c * r, * gamma) and two mean reductions run once per fidelity phase (HiFi2: two,
    # one more pass of c_fpu = 32 each, as Blackhole's chip file gives no unpack bound to hide it)
    o = hw.compute.subblock_overhead_cycles
    extra = 99 * (3 * 24 + 32 + 24 + 8 * o) + 3 * o + 99 * 7 * (2 - 1) * hw.compute.eltwise_tile_cycles
    assert dict(ttnn.breakdown)["compute"] - dict(ttlang.breakdown)["compute"] == extra


def test_ttnn_gathers_a_group_s_partials_one_core_at_a_time() -> None:
    """OFT's height-sharded 30720 x 64 group norm on Blackhole's 5x4 cores: a group over g = 20 cores, each
    of its two reductions gathered by 19 NoC round trips (``L_tx = 373``, hops ``9 * 19``), combined
    (``19 * 32 + 24``) and multicast back (``ceil(2048 / 24) + 9 * 19 + 366``):
    ``gather = 2 * ((19 * 373 + 171) + 632 + 623) = 17026``; the TT-Lang kernel moves the partials in one
    transfer, far less."""
    hw = restrict_grid(load_hardware("blackhole_p150a"), 5, 4)
    cfg = sharded_config((5, 4), 30720, 64, 16, (1536, 64))
    program = load_program("groupnorm")
    placements = cfg.placements()
    ttnn = evaluate_group_norm(hw, make_problem(program, cfg.model_shape, placements=placements), cfg)
    ttlang_problem = make_problem(program, cfg.model_shape, placements=placements, target=KernelTarget.ttlang)
    ttlang = evaluate_group_norm(hw, ttlang_problem, cfg)
    assert ttnn.result.solution is not None and ttlang.result.solution is not None
    assert dict(ttnn.result.solution.breakdown)["gather"] == 17026
    assert dict(ttlang.result.solution.breakdown)["gather"] < 17026 // 2


def test_ttnn_has_no_groupnorm_default_or_export_the_model_can_write() -> None:
    hw = load_hardware("wormhole_n150")
    problem = make_problem(load_program("groupnorm"), "G=16,E=4096")
    assert OP.default is not None
    with pytest.raises(ConfigError, match="split depends on the tensor's channels"):
        OP.default(hw, problem)
    candidate = next(iter(enumerate_candidates(problem)))
    with pytest.raises(ExportError, match="ttnn.group_norm takes x as"):
        OP.call(build_schedule(hw, problem, candidate))


def _rows(code: str) -> str:
    with gzip.open(CAPTURES / "bh20_oft.csv.gz", "rt") as f:
        lines = f.read().splitlines()
    return "\n".join([lines[0], *(line for line in lines[1:] if line.startswith(code + ","))]) + "\n"


def test_the_oft_group_norms_are_read_with_the_split_they_ran() -> None:
    report = parse_ops_perf(Path("oft_group_norm.csv"), _rows("GroupNormDeviceOperation"))
    assert len(report.ops) == 40 and not report.skipped
    big = [op for op in report.ops if op.config is not None and op.config.model_dump()["num_out_blocks"] == 2]
    assert len(big) == 16 and all(op.batch_repeats == 8 and op.grid == (4, 4) for op in big)
    row_major = next(op for op in report.ops if op.shape == {"G": 8, "E": 122880})
    assert "row-major" in row_major.note and row_major.batch_repeats == 8


def test_the_oft_group_norms_are_predicted_or_refused_with_the_l1_conflict() -> None:
    """Every distinct row is predicted but the 122880 x 32 one, whose group of 192 tiles a core, held with
    its intermediates, overflows the model's L1 (ttnn reuses its buffers): the conflict names it."""
    report = parse_ops_perf(Path("oft_group_norm.csv"), _rows("GroupNormDeviceOperation"))
    predict = Predictor(load_hardware("blackhole_p150a"), "oft_group_norm.csv", (5, 4))
    for op in {(tuple(op.shape.items()), op.batch_repeats): op for op in report.ops}.values():
        problem = op_problem(op)
        assert problem is not None and OP.captured is not None
        predicted = predict(op)
        assert predicted.evaluated is not None, op.shape
        conflict = predicted.evaluated.result.conflict
        if op.shape == {"G": 8, "E": 122880}:
            assert conflict is not None and "l1_capacity" in conflict.message
        else:
            assert predicted.evaluated.result.solution is not None, (op.shape, conflict)
        assert captured_call(op).config is op.config


def test_a_batch_of_images_and_welford_are_skipped_with_the_reason() -> None:
    header, first = _rows("GroupNormDeviceOperation").splitlines()[:2]
    columns = header.split(",")
    cells = first.split(",")
    batch = list(cells)
    batch[columns.index("INPUT_0_W_PAD[LOGICAL]")] = "2[2]"
    welford = [c.replace("'use_welford': 'false'", "'use_welford': 'true'") for c in cells]
    text = "\n".join([header, ",".join(batch), ",".join(welford)]) + "\n"
    report = parse_ops_perf(Path("variants.csv"), text)
    reasons = [s.reason for s in report.skipped]
    assert not report.ops and len(reasons) == 2
    assert reasons[0].startswith("a batch of 2") and reasons[1].startswith("use_welford")


def test_the_sharded_kernel_scales_and_shifts_once_a_shard() -> None:
    """OFT's height-sharded 30720 x 64 group norm of 16 groups (4 channels each) on Blackhole's 5x4 cores, a
    (1536, 64) shard a core: its 16 groups each span one tile column of 48 tile rows, ``per_core_E = 48``,
    while ``groupnorm_sharded_v2.cpp`` scales and shifts the shard's ``S = 48 * 2 = 96`` tiles once after the
    groups. At HiFi4 a tile of ``* gamma`` is ``4 * 32`` (one FPU pass a fidelity phase, ``work.py``)
    ``+ 24`` (pack) ``+ 6`` (acquire) = 158 cycles and of ``+ beta`` ``32 + 24 + 6 = 62``: ``a = 220``. One
    group's repeat gives back ``d = 48 * 220 - ceil(96 * 220 / 16) = 10560 - 1320 = 9240`` cycles of compute;
    the interleaved split (which scales within each group) and the TT-Lang target give back nothing."""
    hw = restrict_grid(load_hardware("blackhole_p150a"), 5, 4)
    cfg = sharded_config((5, 4), 30720, 64, 16, (1536, 64))
    assert (cfg.per_core_E, cfg.groups_per_core, cfg.shard_tiles) == (48, 16, 96)
    program = load_program("groupnorm")
    problem = make_problem(program, cfg.model_shape, fidelity=Fidelity.hifi4, placements=cfg.placements())
    assert affine_tile_cycles(hw, problem) == 220
    assert affine_overcount_cycles(hw, problem, cfg) == 9240
    once = evaluate_group_norm(hw, problem, cfg).result.solution
    per_group = evaluate_group_norm(hw, problem, cfg.model_copy(update={"shard_tiles": None})).result.solution
    assert once is not None and per_group is not None
    assert dict(per_group.breakdown)["data_movement"] == 0
    assert dict(per_group.breakdown)["compute"] - dict(once.breakdown)["compute"] == 9240
    assert per_group.latency_cycles - once.latency_cycles == 9240
    ttlang = make_problem(program, cfg.model_shape, placements=cfg.placements(), target=KernelTarget.ttlang)
    assert affine_overcount_cycles(hw, ttlang, cfg) == 0
    assert interleaved_config((4, 4), 25344, 256, 16, 2).shard_tiles is None
