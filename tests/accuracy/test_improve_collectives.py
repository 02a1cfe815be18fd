"""``improve`` on the DeepSeek-V3 capture's collective rows: every one appears with a proposal, each price is
the collective model's (compared with a direct ``collective_model()`` call and with ``ingest``'s prediction of
the row), the alternatives are the links and topologies the p150x8's ring axis offers."""

from __future__ import annotations

from dataclasses import replace

import pytest

from loom_explorer.accuracy.collective_calibration import shipped_constants
from loom_explorer.accuracy.collective_ingest import predict_collectives
from loom_explorer.accuracy.collective_reading import collective_op
from loom_explorer.accuracy.improve_collectives import improve_collectives
from loom_explorer.accuracy.ingest import IngestReport, read_ops_perf
from loom_explorer.cli.improve import _collectives, _collectives_json
from loom_explorer.data import capture_path
from loom_explorer.hardware.mesh_load import load_mesh, mesh_chip
from loom_explorer.model.collective import FabricTopology, collective_model

DEEPSEEK = "bh_8xp150_deepseek_v3_d_p.csv.gz"


@pytest.fixture(scope="module")
def report() -> IngestReport:
    return read_ops_perf(capture_path(DEEPSEEK))


def test_every_collective_row_gets_a_priced_proposal(report: IngestReport) -> None:
    result = improve_collectives(report)
    assert result.mesh.startswith("p150x8")
    assert not result.skipped
    assert sorted(r for o in result.ops for r in o.rows) == sorted(c.row for c in report.collectives)
    assert result.ring_rows_kept == sum(op.ring is not None for op in report.ops) > 0
    mesh = load_mesh("p150x8")
    chip, constants = mesh_chip(mesh), shipped_constants()
    ingested = {c.row: m.predicted_ns for c, m in predict_collectives(report).predicted}
    for o in result.ops:
        # the alternatives: 1..2 links (the columns axis' links), Linear and Ring (the axis wraps)
        assert {(c.num_links, c.topology) for c in o.choices} == {
            (n, t) for n in (1, 2) for t in (FabricTopology.linear, FabricTopology.ring)
        }
        for c in o.choices:  # each price is the model's, called directly
            op = collective_op(replace(o.reading, num_links=c.num_links, topology=c.topology), mesh, chip)
            direct = constants.cycles(collective_model().latency(op, mesh, chip)) / chip.clock_ghz
            assert c.predicted_ns == pytest.approx(direct)
        assert all(ingested[r] == pytest.approx(o.ran.predicted_ns) for r in o.rows)  # as ingest predicts it
        assert o.best.predicted_ns == min(c.predicted_ns for c in o.choices)
        assert o.gain_ns == pytest.approx(o.calls * max(0.0, o.ran.predicted_ns - o.best.predicted_ns))
    # the capture ran Linear with 2 links on a ring axis: the model prefers the ring
    assert all(o.ran.topology is FabricTopology.linear and o.best.topology is FabricTopology.ring for o in result.ops)
    assert all(o.gain_ns > 0 for o in result.ops)
    table = _collectives(result)
    assert all(o.key in table for o in result.ops) and "ring-joint SDPA rows kept as predicted" in table
    assert _collectives_json(result)["ops"][0]["best"]["topology"] == "ring"  # type: ignore[index]


def test_an_axis_that_does_not_wrap_offers_no_ring(report: IngestReport) -> None:
    result = improve_collectives(report, mesh="t3000")  # its 4-chip axis (cluster_axis 1) is a line
    assert result.ops and not result.skipped
    for o in result.ops:
        assert {(c.num_links, c.topology) for c in o.choices} == {
            (1, FabricTopology.linear),
            (2, FabricTopology.linear),
        }
        assert o.best.num_links == 2 and o.saving_ns == 0 and "keeps its own" in o.note
