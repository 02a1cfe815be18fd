"""An element-wise op whose operands are L1-interleaved, read from a real captured row: its tensors placed
in the worker cores' L1 banks (``Placement.l1_interleaved``) and its interleaved default costed with them.

The row is row 1594 of ``bh20_oft.csv.gz`` (a shipped OFT capture on Blackhole; ``ingest``'s numbering,
the header is row 1): a ``BinaryNgDeviceOperation`` of two ``[159, 159]`` tensors, both inputs and the output
``DEV_1_L1_INTERLEAVED``; the same row with those cells made ``DEV_1_DRAM_INTERLEAVED`` is the DRAM twin.
"""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

from loom_explorer.accuracy.ingest import read_ops_perf, report_measurements
from loom_explorer.problem import Placement

CAPTURE = Path(__file__).parents[2] / "loom_explorer" / "data" / "published" / "captures" / "bh20_oft.csv.gz"
ROW = 1594
MEMORY = ("INPUT_0_MEMORY", "INPUT_1_MEMORY", "OUTPUT_0_MEMORY")


def _capture(tmp_path: Path, name: str, in_dram: bool) -> Path:
    with gzip.open(CAPTURE, "rt", newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        cells = next(c for i, c in enumerate(reader, start=2) if i == ROW)
    row = dict(zip(header, cells, strict=True))
    assert all(row[c] == "DEV_1_L1_INTERLEAVED" for c in MEMORY)
    if in_dram:
        row.update(dict.fromkeys(MEMORY, "DEV_1_DRAM_INTERLEAVED"))
    path = tmp_path / name
    with path.open("w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([header, [row[h] for h in header]])
    return path


def test_l1_interleaved_operands_of_an_interleaved_op_are_read_from_the_banks(tmp_path: Path) -> None:
    banks = read_ops_perf(_capture(tmp_path, "l1.csv", in_dram=False))
    dram = read_ops_perf(_capture(tmp_path, "dram.csv", in_dram=True))
    [op], [twin] = banks.ops, dram.ops
    assert op.kernel == "binary" and op.shape == twin.shape
    assert op.placements == dict.fromkeys(("a", "b", "y"), Placement.l1_interleaved)
    assert twin.placements == {} and "L1-interleaved" in op.note
    [in_banks], [in_dram] = report_measurements(banks, "blackhole_p150a"), report_measurements(dram, "blackhole_p150a")
    assert in_banks.candidate == in_dram.candidate == "H*W@xy|a=dram,b=dram"
    assert in_banks.predicted_ns is not None and in_dram.predicted_ns is not None
    assert in_banks.predicted_ns < in_dram.predicted_ns
