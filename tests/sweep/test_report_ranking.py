"""The sweep report's ranking of speed-ups by their floor at the family's median error."""

from __future__ import annotations

from loom_explorer.accuracy.family_error import error_for_op, speedup_floor
from loom_explorer.store.records import SweepChoice, SweepRecord
from loom_explorer.sweep.report import ranked_rows


def record(label: str, kernel: str, shape: str, ours_ns: float, default_ns: float | None) -> SweepRecord:
    best = SweepChoice("c", (), 1, ours_ns, 0.5)
    return SweepRecord(
        op_key=label,
        hardware="wormhole_n150",
        hardware_sha256="x",
        tool_version="t",
        label=label,
        kernel=kernel,
        shape=shape,
        dtype="bfloat16",
        fidelity="hifi2",
        options=(),
        status="ok",
        error="",
        best=best,
        runner_up=None,
        ideal_ns=None,
        ttnn_default_ns=default_ns,
        ttnn_default_note="",
        solve_seconds=0.0,
    )


def test_ranked_by_the_floor_then_the_speedup() -> None:
    gemm = "M=4096,K=4096,N=4096"
    error = error_for_op("gemm", {"M": 4096, "K": 4096, "N": 4096}, "wormhole_n150")
    assert error is not None  # the shipped figures speak for a matmul
    e = error.median_abs_err_pct
    slight = 1 + e / 200  # a speed-up the error erases
    records = [
        record("slight", "gemm", gemm, 100.0, 100.0 * slight),
        record("slower", "gemm", gemm, 100.0, 90.0),  # ttnn's default is faster: not listed
        record("big", "gemm", gemm, 100.0, 400.0),
        record("mid", "gemm", gemm, 100.0, 200.0),
        record("unpriced", "gemm", gemm, 100.0, None),
    ]
    rows = ranked_rows(records)
    assert [r[1] for r in rows] == ["big", "mid", "slight"]
    assert rows[0][5] == f"{speedup_floor(4.0, e):.2f}x"
    assert rows[2][5].endswith("(within the error)")
