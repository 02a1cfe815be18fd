"""Tenstorrent's CCL bandwidth benchmark (``data/published/ccl_bandwidth_*.csv``) as collective rows: measured
device-kernel times of ``ttnn.all_gather``, ``ttnn.reduce_scatter`` and ``ttnn.all_reduce`` on a Wormhole LoudBox
(the T3000) and a Blackhole Galaxy, lines of 2, 4 and 8 chips and a ring of 8, from 4 KiB to 8-16 GiB.

What each row ran, from the benchmark's own code and report (tt-metal ``tests/ttnn/unit_tests/benchmarks/
test_ccl_bandwidth.py``, ``tech_reports/CCLs/run_bench.sh`` and ``tech_reports/CCLs/CCL_bandwidth.md``):

* **the tensor**: bfloat16 tiles (2,048 B pages); ``plan`` (below, the test's rule) turns the row's byte
  target into the per-device shape: the gathered or scattered last dimension is 64 tiles once the tensor
  has 64 tiles (else the largest multiple of ``n`` tiles), the height takes the rest. The printed
  ``size (B)`` is the whole logical tensor ``T`` (the all-gather's output, the reduce-scatter's input, the
  all-reduce's input and output); every row's plan is checked to give exactly it;
* **the chips**: one mesh axis of 8 chips (the LoudBox opened as 1 x 8, the T3000's chips in their ring
  order; the Galaxy's 8-chip axis 0); a line of ``n`` is the submesh of its first ``n`` chips on a line
  fabric (``FABRIC_1D``), the ring the whole axis on a ring fabric (``FABRIC_1D_RING``); the links per
  direction each section prints (1 on the LoudBox, 2 on the Galaxy);
* **the packets**: the run's fabric payload (``BenchmarkRun.packet_payload_bytes``, the file's header: 6,144 B
  on Wormhole, 8,192 B on Blackhole), whole bfloat16 pages (the test's ``PACKET_PAYLOAD``, "the most whole
  pages that fit one hardware packet, capped at the four segments a scatter write carries");
* **the time**: device kernel duration, the slowest device's, mean of 20 traced replays (5 above 1 GiB);
  an all-reduce's is its reduce-scatter and all-gather stages' sum.

Rows left out, each with its reason: the "8 calls back to back" sections (one time for eight calls, not
one op), and the ring reduce-scatters (and the all-reduces, whose first stage is one) of at most
``DIRECT_MAX_BYTES`` per device, which ttnn runs as ``reduce_scatter_minimal_direct``, a one-shot algorithm
sending about 2.3 times the bytes that the model does not price (the report: "Up to 512 KiB per device it
uses a one-shot direct algorithm").

The Wormhole file holds two runs of the benchmark (``commit``): ``WORMHOLE.commit``'s rows are the
measurements; the earlier run's say how much a time moves between runs (``run_spread``).
"""

from __future__ import annotations

import csv
import statistics
from dataclasses import dataclass
from pathlib import Path

from loom_explorer.accuracy.collective_rows import CollectiveDataError, CollectiveRow, SkippedCollective
from loom_explorer.data import published_path
from loom_explorer.hardware.mesh_load import load_mesh
from loom_explorer.model.collective import CollectiveKind, CollectiveOp, FabricTopology

TILE = 32
TILE_BYTES = 2048  # bfloat16


@dataclass(frozen=True, slots=True)
class BenchmarkRun:
    """One system's results of the benchmark: the transcription ``file`` (``data/published``) of tt-metal's
    ``source`` file, the ``commit`` whose rows are the measurements, the ``mesh`` it ran on and the fabric
    packet payload its header prints."""

    file: str
    source: str
    commit: str
    mesh: str
    packet_payload_bytes: int


WORMHOLE = BenchmarkRun(
    "ccl_bandwidth_wormhole.csv",
    "tech_reports/CCLs/results/FULL_wormhole_b0_bfloat16_6144.md",
    "608f1592b0f6cf218dded13762b7f1d68a669a1a",
    "t3000",
    6144,  # the file's header "packet 6144 B"
)
BLACKHOLE = BenchmarkRun(
    "ccl_bandwidth_blackhole.csv",
    "tech_reports/CCLs/results/FULL_blackhole_bfloat16_8192.md",
    "1080d1c4a0d96fc1c26ff3d9e81e67baf78fe9df",
    "bh_galaxy",
    8192,  # the file's header "packet 8192 B": four bfloat16 pages
)
RUNS = (WORMHOLE, BLACKHOLE)
SPLIT_TILES = 64  # the test's plan(): the split dimension once the tensor has as many tiles
DIRECT_MAX_BYTES = 512 * 1024  # per device: a ring reduce-scatter this small runs the direct algorithm


@dataclass(frozen=True, slots=True)
class Plan:
    """The test's ``plan(op, target_bytes, n)``: the tensor ``T`` is ``height x width`` elements, split ``n``
    ways on the width (tiles of 32 x 32)."""

    height: int
    width: int

    @property
    def bytes(self) -> int:
        return self.height * self.width // (TILE * TILE) * TILE_BYTES


def plan(target_bytes: int, n: int) -> Plan | None:
    """The benchmark's shape rule (module docstring); None where it has no tiled shape."""
    tiles = max(1, round(target_bytes / TILE_BYTES))
    split = SPLIT_TILES if tiles >= SPLIT_TILES else (tiles // n) * n
    if split == 0 or split % n:
        return None
    other = max(1, round(tiles / split))
    if other * split < n:
        return None
    return Plan(other * TILE, split * TILE)


def _op(
    kind: CollectiveKind, n: int, ring: bool, links: int, p: Plan, in_dram: bool, run: BenchmarkRun
) -> CollectiveOp:
    """The op as the benchmark ran it: ``n`` chips in a line (or the ring), the slice ``T / n`` (the
    all-gather's input, the reduce-scatter's output, an all-reduce's share), bfloat16 tiles, the run's packets.
    A line of ``n`` is the first ``n`` chips of the mesh axis the run used, so it is built here rather than
    placed on an axis of ``n`` chips (``collective_reading.ring_links``), which a submesh need not be."""
    return CollectiveOp(
        kind=kind,
        ring_size=n,
        topology=FabricTopology.ring if ring else FabricTopology.linear,
        num_links=links,
        slice_bytes=p.bytes // n,
        page_bytes=TILE_BYTES,
        input_in_dram=in_dram,
        output_in_dram=in_dram,
        packet_payload_bytes=run.packet_payload_bytes,
    )


def _skip_reason(cells: dict[str, str], kind: CollectiveKind, ring: bool, p: Plan) -> str:
    if cells["back_to_back"] == "1":
        return "8 calls back to back: one time for eight calls"
    if ring and kind is not CollectiveKind.all_gather and p.bytes <= DIRECT_MAX_BYTES:
        return (
            f"a ring reduce-scatter of {p.bytes:,} B per device runs reduce_scatter_minimal_direct (up to "
            f"{DIRECT_MAX_BYTES:,} B), a one-shot algorithm the model does not price"
        )
    return ""


def run_rows(run: BenchmarkRun, path: Path | None = None) -> tuple[list[CollectiveRow], list[SkippedCollective]]:
    """``run``'s measured rows (its ``commit``'s) on its mesh, and the rows left out with their reasons;
    ``path``: a transcription to read instead of the shipped one."""
    path = path or published_path(run.file)
    mesh = load_mesh(run.mesh)
    rows: list[CollectiveRow] = []
    skipped: list[SkippedCollective] = []
    with path.open(encoding="utf-8", newline="") as f:
        for line, cells in enumerate(csv.DictReader(f), start=2):
            if cells["commit"] != run.commit:
                continue
            try:
                kind, n = CollectiveKind(cells["op"]), int(cells["n"])
                ring, size = cells["topology"] == "ring", int(cells["size_bytes"])
                p = plan(int(cells["target_bytes"]), n)
                if p is None or p.bytes != size:
                    raise ValueError(f"the benchmark's plan gives {p and p.bytes} B, the row says {size}")
                time_us = float(cells["time_us"])
                case = f"ccl_bw {mesh.name} {cells['op']} {cells['topology']} {cells['memory']} n{n} {size} B"
                why = _skip_reason(cells, kind, ring, p)
                if why:
                    skipped.append(SkippedCollective(case, why))
                    continue
                op = _op(kind, n, ring, int(cells["links_per_direction"]), p, cells["memory"] == "dram", run)
            except (KeyError, ValueError) as exc:
                raise CollectiveDataError(f"{path} line {line}: {exc}") from None
            rows.append(CollectiveRow(case, mesh.name, mesh, op, time_us, False, f"{run.source}@{run.commit[:8]}"))
    return rows, skipped


def benchmark_rows() -> tuple[tuple[CollectiveRow, ...], tuple[SkippedCollective, ...]]:
    """Every run's measured rows (``RUNS``), and the rows left out."""
    rows: list[CollectiveRow] = []
    skipped: list[SkippedCollective] = []
    for run in RUNS:
        more, left = run_rows(run)
        rows += more
        skipped += left
    return tuple(rows), tuple(skipped)


def run_spread(run: BenchmarkRun) -> tuple[int, float, float]:
    """(cells timed in both, median and largest |measured / earlier - 1|) over the cells that ``run``'s
    measurements and the file's other run both timed."""
    runs: dict[str, dict[tuple[str, ...], float]] = {}
    with published_path(run.file).open(encoding="utf-8", newline="") as f:
        for cells in csv.DictReader(f):
            key = (cells["section"], cells["op"], cells["n"], cells["size_bytes"])
            runs.setdefault(cells["commit"], {})[key] = float(cells["time_us"])
    later = runs.get(run.commit, {})
    earlier = next((v for k, v in runs.items() if k != run.commit), {})
    moved = [abs(later[k] / earlier[k] - 1) for k in later.keys() & earlier.keys()]
    if not moved:
        return 0, 0.0, 0.0
    return len(moved), statistics.median(moved), max(moved)
