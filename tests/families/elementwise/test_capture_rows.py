"""Element-wise rows of a device-profiler capture (``families/elementwise/accuracy.py``, ``op_types.py``,
``sharded.py``): which shipped kernel each is read as, with which SFPU chain and sharded config, what is
refused and why, and what the model costs them at."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from loom_explorer.accuracy.ingest import choose_hardware, read_ops_perf, report_measurements
from loom_explorer.data import capture_path
from loom_explorer.families.elementwise.op_types import BINARY_SFPU, SFPU_AS, UnknownOp, binary_chain, unary_chain
from loom_explorer.families.elementwise.program import analyse_elementwise
from loom_explorer.families.elementwise.sfpu import LLK_SLOTS
from loom_explorer.families.elementwise.sharded import NotSharded, ShardedElementwise, read_shard_spec
from loom_explorer.families.elementwise.ttnn import captured
from loom_explorer.families.elementwise.work import tile_cycles
from loom_explorer.hardware import list_hardware, load_hardware
from loom_explorer.problem import Placement, ProblemError, make_problem
from loom_explorer.program import load_program
from loom_explorer.targets.ttnn.op import CapturedCall

P150 = "blackhole_p150a"
DRAM = "DEV_0_DRAM_INTERLEAVED"
INTERLEAVED = (
    "MemoryConfig(memory_layout=TensorMemoryLayout::INTERLEAVED;buffer_type=BufferType::DRAM;shard_spec=std::nullopt;"
    "nd_shard_spec=std::nullopt;created_with_nd_shard_spec=0)"
)


def height_sharded(rows: int, cols: int, x1: int = 4, y1: int = 3) -> str:
    grid = f"{{[(x=0;y=0) - (x={x1};y={y1})]}}"
    spec = f"ShardSpec(grid={grid};shape={{{rows}; {cols}}};orientation=ShardOrientation::ROW_MAJOR)"
    return (
        f"MemoryConfig(memory_layout=TensorMemoryLayout::HEIGHT_SHARDED;buffer_type=BufferType::L1;shard_spec={spec};"
        "nd_shard_spec=NdShardSpec(shard_shape=Shape([1; 1]));created_with_nd_shard_spec=0)"
    )


def unary_type(*names: str) -> str:
    return "{" + "; ".join(f"BasicUnaryWithParam<float>(op_type=UnaryOpType::{n};param={{}})" for n in names) + "}"


def binary_attrs(kind: str, *, scalar: str = "std::nullopt", post: str = "", memory: str = INTERLEAVED) -> str:
    fields = {
        "binary_op_type": f"BinaryOpType::{kind}",
        "lhs_activations": "SmallVector([])",
        "memory_config": memory,
        "post_activations": f"SmallVector([{post}])",
        "rhs_activations": "SmallVector([])",
        "scalar": scalar,
    }
    return "{" + "; ".join(f"'{k}': '{v}'" for k, v in fields.items()) + "}"


def unary_attrs(*names: str, memory: str = INTERLEAVED) -> str:
    return "{" + f"'op_chain': '{unary_type(*names)}'; 'output_memory_config': '{memory}'" + "}"


def write_capture(tmp_path: Path, rows: list[tuple[str, str, list[tuple[tuple[int, int, int, int], str]]]]) -> Path:
    """A capture of ``rows`` (op code, ATTRIBUTES, [(INPUT_i's W, Z, Y, X, its memory)]) on a 64-core Blackhole."""
    header = ["OP CODE", "OP TYPE", "DEVICE KERNEL DURATION [ns]", "ATTRIBUTES", "CORE COUNT", "DEVICE ID"]
    header += ["DEVICE ARCH", "AVAILABLE WORKER CORE COUNT", "MATH FIDELITY"]
    for i in range(4):
        header += [f"INPUT_{i}_{a}_PAD[LOGICAL]" for a in "WZYX"] + [f"INPUT_{i}_DATATYPE", f"INPUT_{i}_MEMORY"]
    path = tmp_path / "ops_perf_results.csv"
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(header)
        for code, attrs, inputs in rows:
            cells = [code, "tt_dnn_device", "10000", attrs, "64", "0", "BLACKHOLE", "64", "HiFi4"]
            for i in range(4):
                if i < len(inputs):
                    shape, memory = inputs[i]
                    cells += [f"{v}[{v}]" for v in shape] + ["BFLOAT16", memory]
                else:
                    cells += [""] * 6
            out.writerow(cells)
    return path


OLD_BINARY = (
    "{'activations': '" + unary_type("RELU") + "'; 'binary_op_type': 'BinaryOpType::ADD'; "
    "'input_tensor_a_activation': 'std::nullopt'; 'memory_config': '" + INTERLEAVED + "'; 'scalar': 'std::nullopt'}"
)
X = (1, 1, 2048, 1024)
ROW = (1, 1, 1, 1024)
SHARD_SPEC = height_sharded(128, 1024)


def test_binary_and_unary_rows_are_read_as_their_kernels_and_chains(tmp_path: Path) -> None:
    path = write_capture(
        tmp_path,
        [
            ("BinaryNgDeviceOperation", binary_attrs("ADD"), [(X, DRAM), (X, DRAM)]),  # 2: the shipped binary
            ("BinaryNgDeviceOperation", binary_attrs("MUL", scalar="0.125"), [(X, DRAM)]),  # 3: scalar
            ("BinaryNgDeviceOperation", binary_attrs("SUB"), [(X, DRAM), (ROW, DRAM)]),  # 4: a row
            ("BinaryNgDeviceOperation", binary_attrs("ADD", post=unary_type("RELU")[1:-1]), [(X, DRAM), (X, DRAM)]),
            ("BinaryNgDeviceOperation", binary_attrs("GE"), [(X, DRAM), (X, DRAM)]),  # 6: sub then gez
            ("BinaryNgDeviceOperation", binary_attrs("DIV"), [(X, DRAM), (ROW, DRAM)]),  # 7: row, recip
            ("UnaryDeviceOperation", unary_attrs("NEG", "EXP", "ADD_UNARY_SFPU", "RECIP"), [(X, DRAM)]),  # 8
            ("UnaryDeviceOperation", unary_attrs("ERF"), [(X, DRAM)]),  # 9: erf, costed as itself
            ("BinaryDeviceOperation", OLD_BINARY, [(X, DRAM), (X, DRAM), (X, DRAM)]),  # 10: the older op's names
            ("BinaryDeviceOperation", OLD_BINARY.replace("::ADD", "::MUL"), [(X, DRAM), (X, DRAM)]),  # 11
            ("BinaryNgDeviceOperation", binary_attrs("MUL", post=unary_type("RELU")[1:-1]), [(X, DRAM), (X, DRAM)]),
            ("BinaryNgDeviceOperation", binary_attrs("GE", post=unary_type("RELU")[1:-1]), [(X, DRAM), (X, DRAM)]),
        ],
    )
    ops = {op.row: op for op in read_ops_perf(path).ops}
    got = {row: (op.kernel, op.activation, op.config) for row, op in ops.items()}
    assert got == {
        2: ("binary", None, None),
        3: ("binary_scalar", None, None),
        4: ("binary_row", None, None),
        5: ("binary", None, None),  # one post RELU: applied by the packer
        6: ("binary_act", "relu", None),
        7: ("binary_row_act", "recip", None),
        8: ("unary", "relu+exp+relu+recip", None),
        9: ("unary", "erf", None),
        10: ("binary", None, None),  # the older op's ADD with one RELU: the packer's too
        11: ("binary_act", "relu", None),  # the older op packs a RELU only after an ADD
        12: ("binary", None, None),  # binary_ng packs one post RELU after any FPU op
        13: ("binary_act", "relu+relu", None),  # GE's own comparison comes first: two post ops, both on the SFPU
    }
    assert "INPUT_2 (the output tensor ttnn was given) not read" in ops[10].note
    assert all("PACK_RELU" in ops[row].note for row in (5, 10, 12))
    assert all(op.shape == {"H": 2048, "W": 1024} for op in ops.values())
    assert " as " not in ops[9].note and "SUB costed as the FPU add" in ops[4].note


def test_a_chain_costs_the_sum_of_its_ops_and_an_unknown_op_is_named() -> None:
    hw = load_hardware(P150)
    c = hw.compute
    unary = load_program("unary")
    chained = make_problem(unary, "H=64,W=64", activation="relu+exp+recip")
    cycles = tile_cycles(hw, chained, analyse_elementwise(unary))
    # the chain's ops one after another, each 32 passes of its LLK loop body over 32 lanes (relu 5, exp 52, recip
    # 14 instruction slots: 32 * 71 = 2272 cycles), after one copy of x's tile into Dst (costed as an FPU op,
    # 32 on p150), then a pack (24)
    assert LLK_SLOTS["relu"] + LLK_SLOTS["exp"] + LLK_SLOTS["recip"] == 71
    assert cycles == 2272 + c.eltwise_tile_cycles + c.tile_pack_cycles == 2272 + 32 + 24
    # an op the LLK counts leave out takes the hardware file's cost
    rsqrt = make_problem(unary, "H=64,W=64", activation="rsqrt")
    assert tile_cycles(hw, rsqrt, analyse_elementwise(unary)) == c.sfpu_tile_cycles["rsqrt"] + 32 + 24
    with pytest.raises(ProblemError, match="no SFPU cost for op 'lgamma'"):
        tile_cycles(hw, make_problem(unary, "H=64,W=64", activation="relu+lgamma"), analyse_elementwise(unary))


def test_every_op_type_is_costed_by_an_op_every_shipped_chip_has() -> None:
    for name in list_hardware():
        costed = load_hardware(name).compute.sfpu_tile_cycles
        assert set(SFPU_AS.values()) <= set(costed) | set(LLK_SLOTS), name
    assert all(op in SFPU_AS for ops in BINARY_SFPU.values() for op in ops)
    assert binary_chain("LOGICAL_AND").activation == "relu+relu+relu"
    assert unary_chain("op_type=UnaryOpType::GELU").activation == "gelu"
    with pytest.raises(UnknownOp, match="BITWISE_AND"):
        binary_chain("BITWISE_AND")
    with pytest.raises(UnknownOp, match="unary op FOO"):
        unary_chain("op_type=UnaryOpType::FOO")


@pytest.mark.parametrize(
    ("code", "attrs", "inputs", "says"),
    [
        ("BinaryNgDeviceOperation", binary_attrs("DIV", scalar="2"), [(X, DRAM)], "a scalar operand with SFPU ops"),
        ("BinaryNgDeviceOperation", binary_attrs("ADD"), [(X, DRAM), ((1, 1, 2048, 1), DRAM)], "column broadcast"),
        ("BinaryNgDeviceOperation", binary_attrs("ADD"), [(ROW, DRAM), (X, DRAM)], "a broadcast first operand"),
        ("BinaryNgDeviceOperation", binary_attrs("ADD"), [((1, 8, 64, 64), DRAM), ((1, 1, 64, 64), DRAM)], "leading"),
        ("BinaryNgDeviceOperation", binary_attrs("BITWISE_AND"), [(X, DRAM), (X, DRAM)], "binary_op_type BITWISE_AND"),
        ("UnaryDeviceOperation", unary_attrs("FOO"), [(X, DRAM)], "unary op FOO has no SFPU cost"),
        ("TernaryDeviceOperation", "{}", [(X, DRAM), (X, DRAM), (X, DRAM)], "a ternary op"),
        ("BinaryNgDeviceOperation", binary_attrs("ADD"), [(X, "DEV_0_L1_HEIGHT_SHARDED"), (X, DRAM)], "and the output"),
    ],
)
def test_what_no_shipped_kernel_computes_is_skipped_with_the_reason(
    tmp_path: Path, code: str, attrs: str, inputs: list[tuple[tuple[int, int, int, int], str]], says: str
) -> None:
    report = read_ops_perf(write_capture(tmp_path, [(code, attrs, inputs)]))
    assert not report.ops and says in report.skipped[0].reason, report.skipped[0].reason


def test_a_sharded_row_runs_on_its_shard_grid_from_l1(tmp_path: Path) -> None:
    sharded = "DEV_0_L1_HEIGHT_SHARDED"
    uneven = (1, 1, 2000, 1024)  # 2000 rows in shards of 128: a partial last shard
    path = write_capture(
        tmp_path,
        [
            ("BinaryNgDeviceOperation", binary_attrs("ADD", memory=SHARD_SPEC), [(X, sharded), (X, sharded)]),
            ("BinaryNgDeviceOperation", binary_attrs("ADD", memory=SHARD_SPEC), [(X, sharded), (X, DRAM)]),
            ("BinaryNgDeviceOperation", binary_attrs("ADD", memory=SHARD_SPEC), [(uneven, sharded), (uneven, sharded)]),
            ("BinaryDeviceOperation", binary_attrs("ADD", memory=SHARD_SPEC), [(X, sharded), (X, DRAM)]),
            ("UnaryDeviceOperation", unary_attrs("RELU", memory=SHARD_SPEC), [(X, sharded)]),
        ],
    )
    report = read_ops_perf(path)
    both, mixed, ragged, older, relu = report.ops
    assert both.config == ShardedElementwise(
        op="ttnn.add", layout="height", grid=(5, 4), cores=20, shard_tiles=(4, 32), sharded=("y", "a", "b")
    )
    # binary_ng takes its sharded path only for like, evenly sharded L1 operands; else its interleaved one
    assert mixed.config is None and "does not apply (operands in L1_HEIGHT_SHARDED and DRAM)" in mixed.note
    assert ragged.config is None and "uneven shards (2000x1024 in shards of 128x1024)" in ragged.note
    # the older binary op runs on the output's shard grid whatever its operands
    assert older.config is not None and older.config.placements() == {
        "y": Placement.l1_height,
        "a": Placement.l1_height,
    }
    measured = report_measurements(report, P150)
    assert [m.candidate for m in measured] == [
        "H@xy|a=local,b=local",
        "H*W@xy|a=dram,b=dram",
        "H*W@xy|a=dram,b=dram",
        "H@xy|a=local,b=dram",
        "H@xy|x=local",
    ]
    assert all(m.predicted_ns for m in measured)
    local, streamed = dict(measured[0].breakdown), dict(measured[3].breakdown)
    assert local["write_back"] == 0  # the output stays in L1
    assert streamed["data_movement"] > local["data_movement"]  # b read from DRAM
    hw = load_hardware(P150)
    per_core = 4 * 32  # 64 tile rows in shards of 4: 16 of the 20 cores hold data
    c_tile = hw.compute.eltwise_tile_cycles + hw.compute.tile_pack_cycles
    assert local["compute"] == per_core * c_tile


def test_a_sharded_config_uses_the_cores_with_data() -> None:
    hw = load_hardware(P150)
    problem = make_problem(
        load_program("unary"),
        "H=480,W=64",
        activation="relu",
        placements={"x": Placement.l1_height, "y": Placement.l1_height},
    )
    config = ShardedElementwise(
        op="ttnn.relu", layout="height", grid=(5, 4), cores=20, shard_tiles=(1, 2), sharded=("y", "x")
    )
    _, evaluated = captured(hw, problem, CapturedCall(config))
    assert evaluated.result.solution is not None
    assert (evaluated.values["grid_x"], evaluated.values["grid_y"]) == (5, 3)  # 15 shards: three rows of five
    assert evaluated.values["per_core_H"] == 1


def test_shard_specs_are_read_or_refused_with_the_reason() -> None:
    assert read_shard_spec(height_sharded(96, 512, x1=10, y1=6)) == ("height", (11, 7), 77, (96, 512))
    col_major = SHARD_SPEC.replace("HEIGHT_SHARDED", "BLOCK_SHARDED").replace("ROW_MAJOR", "COL_MAJOR")
    with pytest.raises(NotSharded, match="COL_MAJOR"):
        read_shard_spec(col_major)
    with pytest.raises(NotSharded, match="not an L1"):
        read_shard_spec(INTERLEAVED)


def test_an_older_report_shard_spec_without_nd_shard_spec_is_read() -> None:
    older = (
        "MemoryConfig(memory_layout=TensorMemoryLayout::BLOCK_SHARDED;buffer_type=BufferType::L1;"
        "shard_spec=ShardSpec(grid={[(x=0;y=0) - (x=4;y=7)]};shape={128; 128};"
        "orientation=ShardOrientation::ROW_MAJOR;mode=ShardMode::PHYSICAL;physical_shard_shape=std::nullopt))"
    )
    assert read_shard_spec(older) == ("block", (5, 8), 40, (128, 128))
    with pytest.raises(NotSharded, match="not an L1"):
        read_shard_spec(older.replace("BufferType::L1", "BufferType::DRAM"))


def test_rotary_embedding_is_four_fpu_ops_per_tile_with_the_matrix_held(tmp_path: Path) -> None:
    x, cs, trans = (1, 32, 3200, 64), (1, 1, 3200, 64), (1, 1, 32, 32)
    attrs = "{'is_decode_mode': 'false'; 'output_mem_config': '" + INTERLEAVED + "'}"
    path = write_capture(
        tmp_path, [("RotaryEmbeddingLlamaDeviceOperation", attrs, [(x, DRAM), (cs, DRAM), (cs, DRAM), (trans, DRAM)])]
    )
    report = read_ops_perf(path)
    (op,) = report.ops
    assert (op.kernel, op.shape) == ("rotary", {"H": 32 * 3200, "W": 64})
    chip, grid, _ = choose_hardware(report)
    assert grid is not None
    (m,) = report_measurements(report, chip, grid=grid)
    hw = load_hardware(chip)
    tiles = 32 * 100 * 2  # 32 heads x 100 tile rows of positions x 2 tiles of the head dimension
    per_core = math.ceil(tiles / (grid[0] * grid[1]))  # ttnn's interleaved default: tiles dealt over the grid
    assert m.candidate == "H*W@xy|x=dram,cos=dram,sin=dram,trans=dram"
    # four FPU ops, the three intermediates packed back to L1 between them (work.py staging_cycles), one output pack
    c = hw.compute
    assert dict(m.breakdown)["compute"] == per_core * (
        4 * c.eltwise_tile_cycles + 3 * c.tile_pack_cycles + c.tile_pack_cycles
    )
    decode = attrs.replace("'false'", "'true'")
    report = read_ops_perf(
        write_capture(
            tmp_path,
            [("RotaryEmbeddingLlamaDeviceOperation", decode, [(x, DRAM), (cs, DRAM), (cs, DRAM), (trans, DRAM)])],
        )
    )
    assert "decode-mode" in report.skipped[0].reason


def test_decode_rotary_embedding_runs_on_its_height_shards() -> None:
    """The decode capture's rotary rows: x [1, 2, 32, 128] (two users' heads), cos and sin of x's padded shape,
    the matrix one tile a core, all L1 height-sharded on 2 cores: one tile row of x a core, every operand local."""
    report = read_ops_perf(capture_path("bh_invalid_trace_decode_window.csv.gz"))
    rotary = [op for op in report.ops if op.op_code == "RotaryEmbeddingLlamaDeviceOperation"]
    assert len(rotary) == 2
    for op in rotary:
        assert (op.kernel, op.shape) == ("rotary", {"H": 64, "W": 128})
        assert isinstance(op.config, ShardedElementwise)
        assert (op.config.cores, op.config.shard_tiles) == (2, (1, 4))
    measurements = report_measurements(report, "blackhole_p100a", None, (11, 10))
    by_row = {op.row: m for op, m in zip(report.ops, measurements, strict=True)}
    for op in rotary:
        m = by_row[op.row]
        assert m.candidate == "H@xy|x=local,cos=local,sin=local,trans=local"
        assert m.predicted_ns is not None and dict(m.breakdown)["write_back"] == 0
