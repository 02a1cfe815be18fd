"""Tenstorrent's CCL bandwidth benchmark on a Wormhole LoudBox (``data/published/ccl_bandwidth_wormhole.csv``)
as collective rows: measured device-kernel times of ``ttnn.all_gather``, ``ttnn.reduce_scatter`` and
``ttnn.all_reduce`` on eight Wormhole chips, lines of 2, 4 and 8 and the ring of 8, from 4 KiB to 8 GiB.

What each row ran, from the benchmark's own code and report (tt-metal ``tests/ttnn/unit_tests/benchmarks/
test_ccl_bandwidth.py`` and ``tech_reports/CCLs/CCL_bandwidth.md`` at ``BENCHMARK_COMMIT``):

* **the tensor**: bfloat16 tiles (2,048 B pages); ``plan`` (below, the test's rule) turns the row's byte
  target into the per-device shape: the gathered or scattered last dimension is 64 tiles once the tensor
  has 64 tiles (else the largest multiple of ``n`` tiles), the height takes the rest. The printed
  ``size (B)`` is the whole logical tensor ``T`` (the all-gather's output, the reduce-scatter's input, the
  all-reduce's input and output); every row's plan is checked to give exactly it;
* **the mesh**: the box opened as a 1 x 8 mesh (the T3000's eight chips in their ring order,
  ``hw/meshes/t3000.yaml``'s flat ring), the collective along it; a line of ``n`` is the submesh of the
  first ``n`` chips on a line fabric (``FABRIC_1D``), the ring the whole box on a ring fabric
  (``FABRIC_1D_RING``); one link per direction, as every section prints;
* **the packets**: a fabric payload of 6,144 B, three bfloat16 pages (the file's header "packet 6144 B";
  the test's ``PACKET_PAYLOAD``, "the most whole pages that fit one hardware packet, capped at the four
  segments a scatter write carries"), so each op's ``packet_payload_bytes`` is 6,144;
* **the time**: device kernel duration, the slowest device's, mean of 20 traced replays (5 above 1 GiB);
  an all-reduce's is its reduce-scatter and all-gather stages' sum.

Rows left out, each with its reason: the "8 calls back to back" sections (one time for eight calls, not
one op), and the ring reduce-scatters (and the all-reduces, whose first stage is one) of at most
``DIRECT_MAX_BYTES`` per device, which ttnn runs as ``reduce_scatter_minimal_direct``, a one-shot algorithm
sending about 2.3 times the bytes that the model does not price (the report: "Up to 512 KiB per device it
uses a one-shot direct algorithm").

The file holds two runs of the same benchmark (``commit``): ``BENCHMARK_COMMIT``'s rows are the
measurements; the earlier run's say how much a time moves between runs (``run_spread``).
"""

from __future__ import annotations

import csv
import statistics
from dataclasses import dataclass, replace
from pathlib import Path

from loom_explorer.accuracy.collective_reading import CollectiveReading, collective_op
from loom_explorer.accuracy.collective_rows import CollectiveDataError, CollectiveRow, SkippedCollective
from loom_explorer.data import published_path
from loom_explorer.hardware.mesh_load import load_mesh, mesh_chip
from loom_explorer.hardware.schema import DataFormat
from loom_explorer.model.collective import CollectiveKind, FabricTopology

CCL_BENCHMARK = "ccl_bandwidth_wormhole.csv"
BENCHMARK_COMMIT = "608f1592b0f6cf218dded13762b7f1d68a669a1a"  # FULL_wormhole_b0_bfloat16_6144.md: the measurements
SOURCE = "tech_reports/CCLs/results/FULL_wormhole_b0_bfloat16_6144.md"
MESH = "t3000"
TILE = 32
TILE_BYTES = 2048  # bfloat16
PACKET_PAYLOAD_BYTES = 6144  # the file's header "packet 6144 B"
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


def _reading(kind: CollectiveKind, n: int, ring: bool, links: int, p: Plan, in_dram: bool) -> CollectiveReading:
    """The op as the benchmark ran it: the slice is ``T / n`` (the all-gather's input, the reduce-scatter's
    output, an all-reduce's share)."""
    return CollectiveReading(
        kind=kind,
        ring_size=n,
        topology=FabricTopology.ring if ring else FabricTopology.linear,
        num_links=links,
        cluster_axis=None,
        shape=(1, 1, p.height, p.width),
        parts=n,
        dtype=DataFormat.bfloat16,
        input_in_dram=in_dram,
        output_in_dram=in_dram,
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


def benchmark_rows(path: Path | None = None) -> tuple[tuple[CollectiveRow, ...], tuple[SkippedCollective, ...]]:
    """The measured rows (``BENCHMARK_COMMIT``'s) on the T3000, and the rows left out with their reasons."""
    path = path or published_path(CCL_BENCHMARK)
    mesh = load_mesh(MESH)
    chip = mesh_chip(mesh)
    rows: list[CollectiveRow] = []
    skipped: list[SkippedCollective] = []
    with path.open(encoding="utf-8", newline="") as f:
        for line, cells in enumerate(csv.DictReader(f), start=2):
            if cells["commit"] != BENCHMARK_COMMIT:
                continue
            try:
                kind, n = CollectiveKind(cells["op"]), int(cells["n"])
                ring, size = cells["topology"] == "ring", int(cells["size_bytes"])
                p = plan(int(cells["target_bytes"]), n)
                if p is None or p.bytes != size:
                    raise ValueError(f"the benchmark's plan gives {p and p.bytes} B, the row says {size}")
                time_us = float(cells["time_us"])
                case = f"ccl_bw {cells['op']} {cells['topology']} {cells['memory']} n{n} {size} B"
                why = _skip_reason(cells, kind, ring, p)
                if why:
                    skipped.append(SkippedCollective(case, why))
                    continue
                reading = _reading(kind, n, ring, int(cells["links_per_direction"]), p, cells["memory"] == "dram")
            except (KeyError, ValueError) as exc:
                raise CollectiveDataError(f"{path} line {line}: {exc}") from None
            op = replace(collective_op(reading, mesh, chip), packet_payload_bytes=PACKET_PAYLOAD_BYTES)
            rows.append(CollectiveRow(case, mesh.name, mesh, op, time_us, False, f"{SOURCE}@{BENCHMARK_COMMIT[:8]}"))
    return tuple(rows), tuple(skipped)


def run_spread(path: Path | None = None) -> tuple[int, float, float]:
    """(cells timed in both runs, median and largest |later / earlier - 1|) over the cells both runs timed."""
    path = path or published_path(CCL_BENCHMARK)
    runs: dict[str, dict[tuple[str, ...], float]] = {}
    with path.open(encoding="utf-8", newline="") as f:
        for cells in csv.DictReader(f):
            key = (cells["section"], cells["op"], cells["n"], cells["size_bytes"])
            runs.setdefault(cells["commit"], {})[key] = float(cells["time_us"])
    later = runs.get(BENCHMARK_COMMIT, {})
    earlier = next((v for k, v in runs.items() if k != BENCHMARK_COMMIT), {})
    moved = [abs(later[k] / earlier[k] - 1) for k in later.keys() & earlier.keys()]
    if not moved:
        return 0, 0.0, 0.0
    return len(moved), statistics.median(moved), max(moved)
