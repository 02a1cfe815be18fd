"""ingest: a tt-metal device-profiler report (``ops_perf_results_*.csv``) read row by row, and its matmuls
predicted into the results store.

Where the fixture format comes from (``tests/accuracy/data``; the durations and shapes are made up, the
header and the cell syntax are not):

* ``ops_perf_results_v2.csv``: the header of a real report, tenstorrent/tt-perf-report
  ``tests/data/wh_clip_encoder_2.csv`` (``INPUT_<i>_<W|Z|Y|X>_PAD[LOGICAL]`` cells as ``padded[logical]``,
  ``DEVICE ARCH``), plus one made-up column. Non-matmul ATTRIBUTES, signpost and host rows follow the real
  rows of that file and of ``tests/data/ops_perf_results_2025_09_18_11_39_20.csv`` (``Untilize``,
  ``MinimalMatmulOp``, ``TilizeWithValPadding...``). Matmul program configs print as in
  tenstorrent/tt-perf-report ``tests/test_validate_csv_output.py``
  (``MatmulMultiCoreReuseMultiCast1DProgramConfig(compute_with_storage_grid_size=3-1;in0_block_w=8;...;
  mcast_in0=1)``) and in the printed configs quoted by tt-metal's matmul tests
  (``MatmulMultiCoreReuseMultiCastProgramConfig(compute_with_storage_grid_size=(x=7;y=10);in0_block_w=8;
  ...;transpose_mcast=0;fused_activation=std::nullopt;fuse_batch=0)``). The SDPA row is built from
  tenstorrent/tt-metal ``ttnn/cpp/ttnn/operations/transformer/sdpa_config.hpp`` (``SDPAProgramConfig``
  fields) and ``.../sdpa/device/sdpa_device_operation_types.hpp`` (``SDPAParams``: ``is_causal``,
  ``program_config``, ...), op code ``SDPAOperation`` (``ScaledDotProductAttention`` in older tt-metal).
* ``ops_perf_results_v1_reordered.csv``: the older header of tenstorrent/tt-metal
  ``tt_metal/tools/profiler/process_ops_logs.py`` (``OPS_CSV_HEADER`` with ``INPUT_<i>_{W,Z,Y,X,LAYOUT,
  DATATYPE,MEMORY}``, plain extents, ``-`` where there is no device data, ``,`` in cells written as ``;``)
  in a shuffled column order with an unknown column, and the older ``(x=8;y=8)`` grid syntax.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest

from loom_explorer.accuracy.capture import parse_attributes, parse_struct
from loom_explorer.accuracy.ingest import (
    IngestError,
    read_ops_perf,
    record_report,
    report_measurements,
    suggest_hardware,
    summary_json,
)
from loom_explorer.hardware.schema import DataFormat, Fidelity
from loom_explorer.problem import Placement
from loom_explorer.store import ResultsStore

DATA = Path(__file__).parent / "data"
V2, V1 = DATA / "ops_perf_results_v2.csv", DATA / "ops_perf_results_v1_reordered.csv"
DURATION = "DEVICE KERNEL DURATION [ns]"


def _rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def _write(path: Path, header: list[str], rows: list[dict[str, str]]) -> Path:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=header, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return path


def _variant(tmp_path: Path, *, drop: str | None = None, replace: tuple[str, str] | None = None, rename=None) -> Path:
    """The v2 fixture without column ``drop``, with a text replacement in every cell, or renamed headers."""
    header, rows = _rows(V2)
    if drop:
        header = [h for h in header if h != drop]
    if replace:
        rows = [{k: v.replace(*replace) for k, v in r.items()} for r in rows]
    if rename:
        rows = [{rename(k): v for k, v in r.items()} for r in rows]
        header = [rename(h) for h in header]
    return _write(tmp_path / "ops_perf_results_variant.csv", header, rows)


def _by_row(path: Path):
    report = read_ops_perf(path)
    return report, {op.row: op for op in report.ops}, {s.row: s for s in report.skipped}


def test_2d_mcast_matmul_row() -> None:
    _, ops, _ = _by_row(V2)
    op = ops[4]
    assert (op.op_code, op.kernel, op.shape) == ("MatmulDeviceOperation", "gemm", {"M": 1024, "K": 1024, "N": 1024})
    assert (op.dtype, op.fidelity, op.device_kernel_ns, op.core_count) == (
        DataFormat.bfloat16,
        Fidelity.hifi2,
        31245.0,
        64,
    )
    cfg = op.config
    assert cfg is not None and cfg.program_config == "MatmulMultiCoreReuseMultiCastProgramConfig"
    assert cfg.compute_with_storage_grid_size == (8, 8) and cfg.transpose_mcast is False
    assert (cfg.in0_block_w, cfg.per_core_M, cfg.per_core_N, cfg.out_block_h, cfg.out_block_w) == (2, 4, 4, 4, 4)
    assert (cfg.out_subblock_h, cfg.out_subblock_w) == (4, 2)
    assert cfg.memory == {"in0": "DRAM", "in1": "DRAM", "out": "DRAM"}
    assert cfg.compute["fp32_dest_acc_en"] is False and op.fp32_acc is False
    assert op.device_arch == "wormhole_b0" and op.options == frozenset() and op.q_chunk_size is None


def test_1d_mcast_matmul_uses_logical_shape_and_per_operand_formats() -> None:
    _, ops, _ = _by_row(V2)
    op = ops[5]
    assert op.shape == {"M": 19, "K": 2048, "N": 4096}  # in0 Y is "32[19]": tile-padded to 32, logically 19
    assert op.config is not None and op.config.program_config == "MatmulMultiCoreReuseMultiCast1DProgramConfig"
    assert op.config.mcast_in0 is True and op.config.compute_with_storage_grid_size == (8, 4)
    assert op.dtype is DataFormat.bfloat16 and op.formats["in1"] is DataFormat.bfloat8_b
    assert op.fidelity is Fidelity.lofi


def test_sdpa_row() -> None:
    _, ops, _ = _by_row(V2)
    op = ops[6]
    assert op.kernel == "flash_attention" and op.config is None
    assert op.shape == {"B": 1, "H": 8, "Hkv": 1, "Sq": 2048, "Skv": 2048, "D": 128}
    assert op.options == frozenset({"causal"})
    assert (op.q_chunk_size, op.k_chunk_size) == (256, 256) and op.grid == (8, 8)
    assert op.device_kernel_ns == 412907.0 and op.note == ""


def test_sharded_placements_and_batch_folding() -> None:
    _, ops, _ = _by_row(V2)
    assert ops[13].config is not None
    assert ops[13].config.memory == {"in0": "L1_BLOCK_SHARDED", "in1": "DRAM", "out": "L1_BLOCK_SHARDED"}
    batched = ops[15]
    assert batched.shape == {"M": 128, "K": 1024, "N": 1024, "batch": 8}
    assert batched.model_shape == {"M": 1024, "K": 1024, "N": 1024} and "fuse_batch" in batched.note


def test_every_row_is_ingested_or_skipped_with_its_reason() -> None:
    report, ops, skipped = _by_row(V2)
    assert sorted([*ops, *skipped]) == list(range(2, 17))  # file lines 2..16: every data row, once
    reasons = {row: str(s) for row, s in skipped.items()}
    assert reasons[2] == "row 2 (start): signpost (a marker, not an op)"
    assert (
        reasons[3]
        == "row 3 (TilizeWithValPaddingDeviceOperation): TilizeWithValPaddingDeviceOperation from TILE into TILE: "
        "no layout to change"
    )
    assert reasons[7] == "row 7 (Untilize): Untilize from TILE into TILE: no layout to change"
    assert reasons[8] == f"row 8 (TorchPermute): {DURATION} is empty (host-only op or no device data)"
    assert "MatmulMultiCoreReuseProgramConfig is not one the model maps" in reasons[10]
    assert sorted(skipped) == [2, 3, 7, 8, 10, 16]
    assert report.file == V2


def test_a_matmul_without_program_config_is_predicted_as_ttnn_picks_it(tmp_path: Path) -> None:
    _, ops, _ = _by_row(V2)
    op = ops[9]
    assert op.config is None and "the config ttnn picks" in op.note
    [m] = [m for m in report_measurements(read_ops_perf(V2), "wormhole_n150") if "row 9 " in m.note]
    doc = json.loads(m.schedule_json)
    # the config ttnn picks for a 1024^3 bf16 matmul on 8x8: the 2-D multicast, 4x4 tiles per core
    assert doc["ttnn_config"]["program_config"] == "MatmulMultiCoreReuseMultiCastProgramConfig"
    assert (doc["ttnn_config"]["per_core_M"], doc["ttnn_config"]["per_core_N"]) == (4, 4)
    assert m.predicted_ns is not None and m.candidate == "M@y,N@x|in0=mcast_x,in1=mcast_y"


def test_minimal_matmul_is_costed_as_its_work_split_over_every_core() -> None:
    _, ops, _ = _by_row(V2)
    op = ops[11]
    assert op.op_code == "MinimalMatmulOp" and op.shape == {"M": 19, "K": 1280, "N": 1280}
    # minimal_matmul's split on 8x8 (M <= N: M over the rows, N over the columns): Mt = 1 padded to the 8 rows
    # (one tile per core), Nt = 40 over 8 columns (5 per core: one N block of 5, under N_block 8); every core
    # works its tiles, so the model's M is 8 tiles (256 rows), N 40 (1280), K 40 (5 K blocks of 8)
    assert op.model_shape == {"M": 256, "K": 1280, "N": 1280} and "padded as minimal_matmul splits it" in op.note
    cfg = op.config
    assert cfg is not None and cfg.forwarded and not cfg.transpose_mcast
    assert cfg.program_config == "MatmulMultiCoreReuseMultiCastProgramConfig"
    assert op.grid == (8, 8) and cfg.compute_with_storage_grid_size == (8, 8)
    assert (cfg.in0_block_w, cfg.per_core_M, cfg.per_core_N, cfg.out_block_h, cfg.out_block_w) == (8, 1, 5, 1, 5)
    # the 2x2 sub-block within a 1x5 block: the largest divisors of 1 and 5 not above 2
    assert (cfg.out_subblock_h, cfg.out_subblock_w) == (1, 1)


def test_l1_interleaved_operands_are_placed_in_the_l1_banks_and_said() -> None:
    _, ops, _ = _by_row(V2)
    op = ops[12]
    assert op.config is not None and op.config.memory["out"] == "L1_INTERLEAVED"
    assert op.config.placements()["out"] is Placement.l1_interleaved
    assert "OUTPUT_0 L1-interleaved: its pages moved over the NoC" in op.note


def test_older_format_in_another_column_order_reads_the_same() -> None:
    new, old = read_ops_perf(V2), read_ops_perf(V1)
    assert [op.row for op in old.ops] == [2, 3, 4, 7]  # row 7: no program config, predicted as ttnn picks one

    def essence(op):
        return (
            op.kernel,
            op.shape,
            op.dtype,
            op.formats,
            op.fidelity,
            op.config,
            op.options,
            op.q_chunk_size,
            op.k_chunk_size,
            op.device_kernel_ns,
            op.core_count,
        )

    assert [essence(op) for op in old.ops[:3]] == [essence(op) for op in new.ops[:3] if op.kernel == "gemm"] + [
        essence(op) for op in new.ops if op.kernel == "flash_attention"
    ]
    reasons = {s.row: s.reason for s in old.skipped}
    assert reasons[5] == "tt::tt_metal::Untilize from TILE into TILE: no layout to change"
    assert reasons[6].startswith(f"{DURATION} is empty")


def test_header_case_and_spacing_do_not_matter(tmp_path: Path) -> None:
    variant = _variant(tmp_path, rename=lambda h: f"  {h.lower().replace('_', ' ')} ")
    assert summary_json(read_ops_perf(variant))["ingested"] == summary_json(read_ops_perf(V2))["ingested"]


@pytest.mark.parametrize(
    "column,named",
    [
        ("OP CODE", "OP CODE"),
        (DURATION, DURATION),
        ("INPUT_0_Y_PAD[LOGICAL]", "INPUT_0_Y"),
    ],
)
def test_missing_required_column(tmp_path: Path, column: str, named: str) -> None:
    path = _variant(tmp_path, drop=column)
    with pytest.raises(IngestError, match="required column") as err:
        read_ops_perf(path)
    assert str(path) in str(err.value) and named in str(err.value)
    assert isinstance(err.value, ValueError)


def test_missing_optional_columns(tmp_path: Path) -> None:
    _, ops, _ = _by_row(_variant(tmp_path, drop="MATH FIDELITY"))
    assert ops[4].fidelity is Fidelity.hifi2  # from ATTRIBUTES' compute_kernel_config
    _, ops, _ = _by_row(_variant(tmp_path, drop="INPUT_1_MEMORY"))
    assert ops[4].config is not None and ops[4].config.memory["in1"] == "DRAM"
    assert "INPUT_1_MEMORY absent: assumed DRAM" in ops[4].note
    _, ops, skipped = _by_row(_variant(tmp_path, drop="ATTRIBUTES"))
    assert ops[4].config is None and "the config ttnn picks" in ops[4].note
    assert ops[6].kernel == "flash_attention" and ops[6].q_chunk_size is None  # SDPA without its config


@pytest.mark.parametrize(
    "replace,reason",
    [
        (("gather_in0=0", "gather_in0=1"), "gather_in0=1"),
        (("per_core_M=4;", ""), "field per_core_M"),
        (
            ("compute_with_storage_grid_size=8-8", "compute_with_storage_grid_size=eight"),
            "compute_with_storage_grid_size",
        ),
    ],
)
def test_unusable_configs_are_skipped_with_the_field(tmp_path: Path, replace: tuple[str, str], reason: str) -> None:
    _, _, skipped = _by_row(_variant(tmp_path, replace=replace))
    row = 5 if "gather" in replace[0] else 4
    assert reason in skipped[row].reason


def test_fused_activation_is_read(tmp_path: Path) -> None:
    gelu = "fused_activation=UnaryWithParam(op_type=UnaryOpType::GELU;params=[1]);fuse_batch=0"
    variant = _variant(tmp_path, replace=("fused_activation=std::nullopt;fuse_batch=0", gelu))
    _, ops, _ = _by_row(variant)
    assert ops[4].activation == "gelu" and ops[4].config is not None and ops[4].config.per_core_N == 4


def test_attribute_syntax() -> None:
    attrs = parse_attributes(
        "{'activation': ''; 'program_config': 'MatmulMultiCoreReuseMultiCastProgramConfig("
        "compute_with_storage_grid_size=11-8;in0_block_w=16;fused_activation=UnaryWithParam("
        "op_type=UnaryOpType::GELU; params=[1]);allowed_worker_cores={[0-0 - 10-7]})'; "
        "'transpose_b': 'false'}"
    )
    assert attrs["activation"] == "" and attrs["transpose_b"] == "false"
    name, fields = parse_struct(attrs["program_config"]) or ("", {})
    assert name == "MatmulMultiCoreReuseMultiCastProgramConfig"
    assert fields["compute_with_storage_grid_size"] == "11-8" and fields["in0_block_w"] == "16"
    assert fields["allowed_worker_cores"] == "{[0-0 - 10-7]}" and "GELU" in fields["fused_activation"]
    assert parse_struct("tt::operations::primary::MatmulMultiCoreReuseProgramConfig(in0_block_w=1)") == (
        "MatmulMultiCoreReuseProgramConfig",
        {"in0_block_w": "1"},
    )


@pytest.mark.parametrize(
    "content",
    [
        None,
        b"",
        b"  \n\n",
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        b"\xff\xfe\xfa not utf-8",
        b"This is a note about a profiler run,\nnot a report.\n",
        b'{"OP CODE": "MatmulDeviceOperation"}\n',
    ],
)
def test_bad_files(tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "ops_perf_results_bad.csv"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(IngestError) as err:
        read_ops_perf(path)
    assert str(path) in str(err.value)


def test_directory_and_fifo_are_refused_without_blocking(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="not a regular file"):
        read_ops_perf(tmp_path)
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    with pytest.raises(IngestError, match="not a regular file"):
        read_ops_perf(fifo)


def test_record_report_into_the_store(tmp_path: Path) -> None:
    report = read_ops_perf(V2)
    store = ResultsStore(tmp_path / "results.sqlite")
    try:
        ids = record_report(report, "wormhole_n150", store)
        stored = store.measurements()
    finally:
        store.close()
    assert len(ids) == len(report.ops) == len(stored) and len(set(ids)) == len(ids)
    _, rows = _rows(V2)
    measured = {line: float(r[DURATION]) for line, r in enumerate(rows, 2) if r[DURATION]}
    by_row = {json.loads(m.schedule_json)["row"]: m for m in stored}
    for row, m in by_row.items():
        assert m.source == "report" and m.measured_what == "device kernel duration"
        assert m.measured_ns == measured[row] and f"row {row}" in m.note
    for legal in (4, 5, 13, 15):
        predicted = by_row[legal].predicted_ns
        assert predicted is not None and predicted > 0 and by_row[legal].kernel == "gemm"
    assert by_row[5].hardware == "wormhole_n150@8x4" and by_row[5].candidate == "N@xy|in0=mcast_xy,in1=dram"
    assert by_row[14].predicted_ns is None and "illegal" in by_row[14].note  # 4x4 sub-block > 8 Dst tiles
    # SDPA: its SDPAProgramConfig (256/256 chunks, causal) on the flattened, balanced candidate
    assert by_row[6].kernel == "flash_attention" and by_row[6].predicted_ns and by_row[6].predicted_ns > 0
    assert by_row[6].candidate == "H*Sq@xy|q=dram,k=dram,v=dram|balanced"
    assert json.loads(by_row[6].schedule_json)["params"]["q_chunk_size"] == 256


def test_a_report_from_another_chip_is_recorded_unpredicted_with_why(tmp_path: Path) -> None:
    report = read_ops_perf(
        _variant(tmp_path, replace=("compute_with_storage_grid_size=8-8", "compute_with_storage_grid_size=11-10"))
    )
    store = ResultsStore(tmp_path / "results.sqlite")
    try:
        record_report(report, "wormhole_n150", store)
        by_row = {json.loads(m.schedule_json)["row"]: m for m in store.measurements()}
        assert by_row[4].predicted_ns is None and "grid 11x10 does not fit" in by_row[4].note
        assert by_row[4].hardware == "wormhole_n150" and by_row[4].measured_ns == 31245.0
        record_report(read_ops_perf(V2), "blackhole_p150a", store)
        on_blackhole = store.measurements("blackhole_p150a@8x4")
        assert on_blackhole and "the report ran on wormhole_b0; predicted on blackhole_p150a" in on_blackhole[0].note
    finally:
        store.close()


def test_summary_json_and_suggested_hardware() -> None:
    report = read_ops_perf(V2)
    doc = json.loads(json.dumps(summary_json(report)))
    assert doc["counts"] == {"ingested": 9, "skipped": 6}
    assert doc["ingested"][0]["config"]["compute_with_storage_grid_size"] == [8, 8]
    assert {
        "row": 8,
        "op_code": "TorchPermute",
        "reason": f"{DURATION} is empty (host-only op or no device data)",
    } in doc["skipped"]
    assert suggest_hardware(report) == "wormhole_n150" and suggest_hardware(read_ops_perf(V1)) is None
