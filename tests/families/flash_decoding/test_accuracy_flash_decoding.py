"""The ``sdpa_decode`` rows of a profiler report: read as a one-query-row attention over the cache, predicted by
the flash-decoding op with the ``SDPAProgramConfig`` the row ran."""

from __future__ import annotations

from functools import cache

from loom_explorer.accuracy.ingest import IngestReport, read_ops_perf, report_measurements
from loom_explorer.data import capture_path
from loom_explorer.families.attention.ttnn_config import TtnnSdpaConfig
from loom_explorer.families.flash_decoding.ttnn_config import captured_decode, evaluate_decode_config
from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.grid import restrict_grid
from loom_explorer.problem import KernelTarget, make_problem
from loom_explorer.program import load_program
from loom_explorer.targets.ttnn.op import CapturedCall

DECODE = "bh_invalid_trace_decode_window.csv.gz"


@cache
def _report(name: str) -> IngestReport:
    return read_ops_perf(capture_path(name))


def test_the_decode_captures_paged_sdpa_decode_row_reads_as_its_problem_and_config() -> None:
    """q [1, 2, 32, 128]; paged cache [128 blocks, 8 heads, 64 positions, 128]; page table [2, 64]: each of the 2
    users has 64 * 64 = 4096 positions; the row ran SDPAProgramConfig(grid 4x8, k chunk 32, 16 cores a head)."""
    (op,) = [op for op in _report(DECODE).ops if op.op_code == "SdpaDecodeDeviceOperation"]
    assert (op.kernel, op.shape) == ("flash_attention", {"B": 2, "H": 32, "Hkv": 8, "Sq": 1, "Skv": 4096, "D": 128})
    assert op.config == TtnnSdpaConfig(
        compute_with_storage_grid_size=(4, 8), q_chunk_size=32, k_chunk_size=32, max_cores_per_head_batch=16
    )
    assert op.grid == (4, 8)
    assert "an upper bound" in op.note and "64 blocks of 64 positions" in op.note


def test_the_sdpa_decode_row_is_predicted_by_the_flash_decoding_op_as_an_upper_bound() -> None:
    """Costed over the whole cache (the row does not give how far each user has decoded): the prediction is
    the flash-decoding candidate, and it is no less than the measured time."""
    report = _report(DECODE)
    measurements = report_measurements(report, "blackhole_p100a", None, (11, 10))
    (m,) = [m for op, m in zip(report.ops, measurements, strict=True) if op.op_code == "SdpaDecodeDeviceOperation"]
    assert m.predicted_ns is not None and m.measured_ns is not None and m.predicted_ns >= m.measured_ns
    assert m.candidate is not None and m.candidate.endswith("|kv_split")


def test_the_captured_config_decides_the_work_split() -> None:
    """``captured_decode`` costs the row's own config: the same problem with one core a head runs slower."""
    hw = restrict_grid(load_hardware("blackhole_p100a"), 4, 8)
    problem = make_problem(
        load_program("flash_attention"), "B=2,H=32,Hkv=8,Sq=1,Skv=4096,D=128", target=KernelTarget.ttnn
    )
    ran = TtnnSdpaConfig(
        compute_with_storage_grid_size=(4, 8), q_chunk_size=32, k_chunk_size=32, max_cores_per_head_batch=16
    )
    config, evaluated = captured_decode(hw, problem, CapturedCall(ran, 32, 32))
    assert config == ran
    assert evaluated.values["kv_cores"] == 2  # min(32, 16 * 2 * 8) // 2 = 16 a user, 16 // 8 = 2 a head
    one = evaluate_decode_config(hw, problem, ran.model_copy(update={"max_cores_per_head_batch": 1}))
    assert one.values["kv_cores"] == 1
    assert evaluated.result.solution is not None and one.result.solution is not None
    assert evaluated.result.solution.latency_cycles < one.result.solution.latency_cycles


def _row_file(tmp_path, cells: dict[str, str]):
    """A one-row report: an sdpa_decode of no program config with ``cells``' tensors."""
    path = tmp_path / "ops.csv"
    row = {"OP CODE": "SdpaDecodeDeviceOperation", "OP TYPE": "tt_dnn_device", "DEVICE KERNEL DURATION [ns]": "20000"}
    row |= {"CORE COUNT": "32", "MATH FIDELITY": "HiFi2", "ATTRIBUTES": "{}"} | cells
    path.write_text(",".join(row) + "\n" + ",".join(row.values()) + "\n")
    return path


def _tensor(name: str, w: int, z: int, y: int, x: int) -> dict[str, str]:
    cells = {f"{name}_{a}_PAD[LOGICAL]": f"{v}[{v}]" for a, v in zip("WZYX", (w, z, y, x), strict=True)}
    memory = {f"{name}_MEMORY": "DEV_0_DRAM_INTERLEAVED"}
    return cells | {f"{name}_LAYOUT": "TILE", f"{name}_DATATYPE": "BFLOAT16"} | memory


def test_a_non_paged_row_without_a_config_reads_its_cache_length_and_says_it_runs_the_default(tmp_path) -> None:
    cells = _tensor("INPUT_0", 1, 4, 8, 64) | _tensor("INPUT_1", 4, 2, 1024, 64) | _tensor("INPUT_2", 4, 2, 1024, 64)
    report = read_ops_perf(_row_file(tmp_path, cells))
    (op,) = report.ops
    assert op.shape == {"B": 4, "H": 8, "Hkv": 2, "Sq": 1, "Skv": 1024, "D": 64}
    assert op.config is None and "ttnn's sdpa_decode default" in op.note


def test_a_row_whose_heads_do_not_divide_is_skipped_with_its_reason(tmp_path) -> None:
    cells = _tensor("INPUT_0", 1, 4, 8, 64) | _tensor("INPUT_1", 4, 3, 1024, 64) | _tensor("INPUT_2", 4, 3, 1024, 64)
    report = read_ops_perf(_row_file(tmp_path, cells))
    (skip,) = report.skipped
    assert not report.ops and "do not form an attention" in skip.reason
