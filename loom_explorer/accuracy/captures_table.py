"""The table of docs/accuracy.md "Real models' profiler captures": every shipped capture read and predicted as
``ingest`` does, with the chip told from it, the share of its device time the model predicts and the error
on that time, overall and (in brackets) of the default published kernel's ops (``op_mapping.published_kernels``:
the matmuls). ``python -m loom_explorer.accuracy.captures_table`` prints it (about 10 s); a test checks the docs
state every row.
"""

from __future__ import annotations

from dataclasses import dataclass

from loom_explorer.accuracy.coverage import Coverage, coverage_of
from loom_explorer.accuracy.ingest import choose_hardware, read_ops_perf, report_measurements
from loom_explorer.accuracy.op_mapping import published_kernels
from loom_explorer.data import CAPTURES, capture_path


def header() -> str:
    """The table's heading row; the bracketed figures are the default published kernel's ops'."""
    ops = published_kernels()[0].ops
    return (
        "| capture | chip and grid told | device time | matmul + attention | predicted: of the device time "
        f"| of the matmul + attention time | error on the predicted time: total ({ops}) | per row: median / worst "
        f"({ops}) |"
    )


@dataclass(frozen=True, slots=True)
class CaptureRow:
    name: str
    what: str
    hardware: str
    grid: tuple[int, int] | None
    coverage: Coverage

    def markdown(self) -> str:
        c = self.coverage
        primary = dict(c.by_kernel).get(published_kernels()[0].kernel)
        grid = f" {self.grid[0]}x{self.grid[1]}" if self.grid else ""
        total = _pct(c.total_error, signed=True) + (f" ({_pct(primary.total_error, signed=True)})" if primary else "")
        rows = f"{_pct(c.median_error)} / {_pct(c.worst_error)}" + (
            f" ({_pct(primary.median_error)} / {_pct(primary.worst_error)})" if primary else ""
        )
        return (
            f"| `{self.name}` ({self.what}) | {self.hardware}{grid} | {c.device_ns / 1e6:.2f} ms | "
            f"{_pct(c.matmul_attention_share)} | {_pct(c.share)} | {_pct(c.share_of_matmul_attention)} | "
            f"{total} | {rows} |"
        )


def _pct(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "-"
    return f"{100 * x:+.1f}%" if signed else f"{100 * x:.1f}%"


def capture_row(name: str) -> CaptureRow:
    report = read_ops_perf(capture_path(name))
    hw, grid, _ = choose_hardware(report)
    return CaptureRow(name, CAPTURES[name], hw, grid, coverage_of(report, report_measurements(report, hw, None, grid)))


def table() -> list[str]:
    heading = header()
    return [heading, "|" + "---|" * heading.count(" | ") + "---|", *(capture_row(n).markdown() for n in CAPTURES)]


if __name__ == "__main__":
    print("\n".join(table()))
