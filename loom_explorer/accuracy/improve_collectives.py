"""``improve`` on a multi-device capture's collective rows: the ``num_links`` and ``topology`` ttnn lets the
caller choose, each priced by the collective model, and the best proposed with its predicted saving.

Each collective row (``IngestReport.collectives``, one per device) is read as ``ingest`` reads it
(``capture_collective.read_collective``) on the capture's mesh (told from the capture or given:
``collective_accuracy.capture_choice``). Rows of one op code and one reading (kind, ring, links, topology,
axis, tensor, format, layout, placements) form one op. Its alternatives are every ``num_links`` from 1 to the
ring's links on the mesh (``collective_reading.ring_links``: the axis' links, or a flat ring's) and the
topologies the ring admits there: ``Linear`` always, ``Ring`` where the axis wraps (``ring_links`` refuses it
otherwise) and the ring has 3 chips or more. Everything else of the op stays as it ran (the tensor, the
placements, the axis).

Each alternative is the ``CollectiveOp`` ``collective_reading.collective_op`` makes of the reading with that
choice, priced as ``ingest`` prices the row it ran (``collective_ingest``): ``collective_model().latency`` on
the mesh's chip, through the shipped calibration (``collective_calibration.shipped_constants().cycles``), over
the chip's clock. ``ran_ns`` is the row's own choice priced the same way, so it is ``ingest``'s prediction of
the row. The best is the fastest alternative (ties: fewer links, then the choice it ran); the saving per call
is ``ran_ns - best_ns`` and over the capture ``calls * saving``, ``calls`` the op's rows: a device's time,
summed over every device's row (the devices run the collective together, so the run's wall time saves one
device's share per call, not the sum).

Ring-joint SDPA rows (``families/attention/ring*.py``) are kept as ``ingest`` predicts them: not improved
(their chunk sizes are the SDPA's program config, which the ring model reads from the row, not a choice this
module prices).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from loom_explorer.accuracy.capture_collective import IngestedCollective
from loom_explorer.accuracy.collective_accuracy import capture_choice
from loom_explorer.accuracy.collective_calibration import CollectiveConstants, shipped_constants
from loom_explorer.accuracy.collective_reading import CollectiveReading, collective_op, ring_links
from loom_explorer.accuracy.ingest import IngestReport
from loom_explorer.hardware.mesh_load import mesh_chip
from loom_explorer.hardware.mesh_schema import MeshSpec
from loom_explorer.model.collective import CollectiveError, FabricTopology, collective_model


@dataclass(frozen=True, slots=True)
class CollectiveChoice:
    """One choice of ``num_links`` and ``topology`` for a collective, and its predicted time per call."""

    num_links: int
    topology: FabricTopology
    predicted_ns: float

    @property
    def label(self) -> str:
        return f"num_links={self.num_links}, {self.topology.value}"


@dataclass(frozen=True, slots=True)
class CollectiveImprovement:
    """One collective op of the capture (module docstring)."""

    key: str
    op_code: str
    reading: CollectiveReading
    rows: tuple[int, ...]
    measured_ns: float  # mean device kernel duration per row
    ran: CollectiveChoice
    choices: tuple[CollectiveChoice, ...]  # every alternative, fastest first
    note: str = ""

    @property
    def calls(self) -> int:
        return len(self.rows)

    @property
    def best(self) -> CollectiveChoice:
        return self.choices[0]

    @property
    def saving_ns(self) -> float:
        """Predicted time saved per call (one device), never below 0."""
        return max(0.0, self.ran.predicted_ns - self.best.predicted_ns)

    @property
    def gain_ns(self) -> float:
        """``calls * saving_ns``: summed over every device's row (module docstring)."""
        return self.calls * self.saving_ns


@dataclass(frozen=True, slots=True)
class CollectiveImproveReport:
    mesh: str  # the mesh's name, or why none was told
    ops: tuple[CollectiveImprovement, ...]  # biggest gain first
    skipped: tuple[tuple[int, str], ...]  # (row, reason)
    ring_rows_kept: int  # ring-joint SDPA rows, kept as predicted


def predicted_ns(op_reading: CollectiveReading, mesh: MeshSpec, constants: CollectiveConstants) -> float:
    """A reading's predicted time per call on ``mesh`` (module docstring)."""
    chip = mesh_chip(mesh)
    op = collective_op(op_reading, mesh, chip)
    return constants.cycles(collective_model().latency(op, mesh, chip)) / chip.clock_ghz


def collective_choices(
    reading: CollectiveReading, mesh: MeshSpec, constants: CollectiveConstants
) -> tuple[CollectiveChoice, ...]:
    """Every ``num_links`` and topology ``reading``'s ring admits on ``mesh``, priced, fastest first (ties:
    fewer links, then the choice it ran)."""
    out = []
    for topology in (FabricTopology.linear, FabricTopology.ring):
        try:
            links = ring_links(mesh, reading.ring_size, reading.cluster_axis, topology)
            alternative = replace(reading, topology=topology, num_links=1)
            collective_op(alternative, mesh, mesh_chip(mesh))  # a ring of 2, or a ring the axis cannot close
        except CollectiveError:
            continue
        for n in range(1, links + 1):
            choice = replace(reading, topology=topology, num_links=n)
            out.append(CollectiveChoice(n, topology, predicted_ns(choice, mesh, constants)))
    ran = (reading.num_links, reading.topology)
    out.sort(key=lambda c: (c.predicted_ns, c.num_links, (c.num_links, c.topology) != ran))
    return tuple(out)


def _key(c: IngestedCollective) -> str:
    r = c.reading
    shape = "x".join(map(str, r.shape))
    return f"{c.op_code} {r.describe()} {shape}/{r.parts} {r.dtype.value}"


def improve_collectives(
    report: IngestReport, mesh: str | None = None, constants: CollectiveConstants | None = None
) -> CollectiveImproveReport:
    """Every collective op of ``report`` with its alternatives priced (module docstring)."""
    ring_rows = sum(op.ring is not None for op in report.ops)
    if not report.collectives:
        return CollectiveImproveReport("", (), (), ring_rows)
    constants = shipped_constants() if constants is None else constants
    choice = capture_choice(report, mesh)
    if choice.mesh is None:
        return CollectiveImproveReport(
            choice.reason, (), tuple((c.row, choice.reason) for c in report.collectives), ring_rows
        )
    m = choice.mesh
    groups: dict[tuple[str, CollectiveReading], list[IngestedCollective]] = {}
    for c in report.collectives:
        groups.setdefault((c.op_code, c.reading), []).append(c)
    out: list[CollectiveImprovement] = []
    skipped: list[tuple[int, str]] = []
    for (op_code, reading), rows in groups.items():
        try:
            ran_links = reading.num_links or ring_links(m, reading.ring_size, reading.cluster_axis, reading.topology)
            ran = CollectiveChoice(ran_links, reading.topology, predicted_ns(reading, m, constants))
            choices = collective_choices(reading, m, constants)
        except CollectiveError as exc:
            skipped += [(c.row, str(exc)) for c in rows]
            continue
        note = "" if choices[0].predicted_ns < ran.predicted_ns else "keeps its own: no choice is predicted faster"
        out.append(
            CollectiveImprovement(
                _key(rows[0]),
                op_code,
                reading,
                tuple(c.row for c in rows),
                sum(c.device_kernel_ns for c in rows) / len(rows),
                ran,
                choices,
                note,
            )
        )
    out.sort(key=lambda o: (-o.gain_ns, o.key))
    return CollectiveImproveReport(choice.reason, tuple(out), tuple(skipped), ring_rows)
