"""``loom-explorer improve``: for every matmul and attention op of a device-profiler capture, the config it
ran, the best schedule ttnn can run instead, and the predicted gain.

The capture is read and predicted as ``ingest`` does (``accuracy/ingest.py``: each op with the config it ran,
or the one ttnn picks where the row has none, on the chip and grid told from the capture). Ops alike (same
kernel, shape, formats, fidelity, options and config) form one *op*, keyed ``"<op code> <kernel>
<shape> <dtype> <fidelity>[ <option>...][ #<n>]"`` (the program options it ran with, e.g. ``causal``;
``#2``, ... when configs differ). For each op:

* ``measured_ns``: the mean measured kernel duration of its rows, ``calls`` rows;
* ``ran_ns``: the model's prediction of the config it ran (the figure ``ingest`` records);
* the best: the optimum of one CP-SAT solve of the op's logical problem (``MinimalMatmulOp``'s padding
  is not forced on ``ttnn.matmul``; a batched matmul's one batch, its time repeated as ``ingest`` does)
  over the candidates a TTNN op with a program config runs (``targets/ttnn/op.py::ttnn_runs``), on the
  capture's worker grid, with the op's operand placements; answered from the results store when proven
  before (``solve/memory.py``);
* ``best_config``: that schedule as the TTNN program config (``ttnn_equivalent``), the form
  ``predict --ttnn-config`` reads; ``best_ns`` is that config as ttnn runs it (ttnn fixes a few things the
  schedule leaves free, e.g. two-block input buffers), costed as ``predict --ttnn-config`` costs it;
* the gain ``calls * (ran_ns - best_ns)``, predicted time saved over the whole run; when the best config is
  not predicted faster than the one it ran, the op keeps its own (no config, gain 0, the note says so);
* the gain's floor (``Improvement.gain_floor_ns``): the least time saved if both predictions are within the
  family's cross-validated median error (``family_error.error_for_op``); 0 when the gain is within that
  error. Ops are ranked by it, then by the gain.

Both predictions are calibrated as ``ingest``'s are (``term_calibration``).

Element-wise and norm/softmax ops run without a program config on interleaved tensors: they are counted in
the capture's time but not improved. Batched matmuls the model does not predict are listed with the reason.

A multi-device capture's collective rows get their ``num_links`` and ``topology`` alternatives priced by the
collective model and the best proposed (``improve_collectives.py``, ``ImproveReport.collectives``);
ring-joint SDPA rows are kept as ``ingest`` predicts them (not improved).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from loom_explorer.accuracy.coverage import Coverage, coverage_of
from loom_explorer.accuracy.family_error import error_for_op, speedup_floor
from loom_explorer.accuracy.improve_collectives import CollectiveImproveReport, improve_collectives
from loom_explorer.accuracy.ingest import (
    IngestedOp,
    IngestReport,
    Predictor,
    calibrated_ns,
    kernel_ttnn_op,
    op_problem,
    repeated_terms,
    report_measurements,
)
from loom_explorer.accuracy.progress import Progress
from loom_explorer.accuracy.term_calibration import TermScales, shipped_scales
from loom_explorer.export.exporter import ExportError
from loom_explorer.hardware import load_hardware
from loom_explorer.problem import Problem
from loom_explorer.result import CandidateResult
from loom_explorer.solve.interrupt import STOP, Interrupted, StopToken
from loom_explorer.solve.memory import solve_with_memory
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.store import Measurement
from loom_explorer.targets.ttnn.config import TtnnConfig
from loom_explorer.targets.ttnn.evaluate import ConfigError
from loom_explorer.targets.ttnn.op import problem_ttnn_op, ttnn_equivalent, ttnn_op_of, ttnn_runs


@dataclass(frozen=True, slots=True)
class Improvement:
    """One op of the capture (module docstring), its rows, the config it ran and the best one."""

    key: str
    op_code: str
    kernel: str
    shape: dict[str, int]  # as the capture states it (logical)
    rows: tuple[int, ...]
    measured_ns: float  # mean per call
    ran_ns: float | None
    ran_config: TtnnConfig | None
    ran_candidate: str
    best_ns: float | None = None
    best_candidate: str = ""
    best_values: tuple[tuple[str, int], ...] = ()
    best_config: TtnnConfig | None = None
    problem: Problem | None = None  # the logical problem solved for the best (None: not predicted)
    batch_repeats: int = 1  # a batched matmul: the problem runs this many times (ingest.repeated_cycles)
    note: str = ""
    error_pct: float | None = None  # the family's cross-validated median |error| (``family_error.error_for_op``)

    @property
    def calls(self) -> int:
        return len(self.rows)

    @property
    def gain_floor_ns(self) -> float | None:
        """The least gain if both predictions are within the family's error ``e``: the speed-up's floor
        ``s (1 - e) / (1 + e)`` (``family_error.speedup_floor``) as time saved, ``calls * ran_ns * (1 - 1 /
        floor)``, 0 when the floor is not above 1 (the gain is within the error); the gain itself when the
        family has no measured error."""
        if self.gain_ns is None or self.speedup is None or self.ran_ns is None:
            return None
        if self.error_pct is None:
            return self.gain_ns
        floor = speedup_floor(self.speedup, self.error_pct)
        return self.calls * self.ran_ns * (1 - 1 / floor) if floor > 1 else 0.0

    @property
    def within_error(self) -> bool:
        """A predicted gain that the family's error could erase."""
        return bool(self.gain_ns) and self.gain_floor_ns == 0.0

    @property
    def gain_ns(self) -> float | None:
        """Predicted time saved over the run: ``calls * (ran_ns - best_ns)``, never below 0."""
        if self.ran_ns is None or self.best_ns is None:
            return None
        return self.calls * max(0.0, self.ran_ns - self.best_ns)

    @property
    def speedup(self) -> float | None:
        return self.ran_ns / self.best_ns if self.ran_ns and self.best_ns else None


@dataclass(frozen=True, slots=True)
class ImproveReport:
    file: Path
    hardware: str
    grid: tuple[int, int] | None
    chip: str  # how the chip was told
    ops: tuple[Improvement, ...]  # biggest predicted gain first
    coverage: Coverage
    measurements: tuple[Measurement, ...] = ()  # every ingested op predicted as it ran (what ``ingest`` records)
    collectives: CollectiveImproveReport | None = None  # a multi-device capture's collectives (module docstring)

    @property
    def improved(self) -> tuple[Improvement, ...]:
        """The ops with a predicted gain (0 for those that keep their config)."""
        return tuple(o for o in self.ops if o.gain_ns is not None)

    @property
    def measured_ns(self) -> float:
        """Measured time of the improved ops (all calls)."""
        return sum(o.measured_ns * o.calls for o in self.improved)

    @property
    def ran_ns(self) -> float:
        return sum((o.ran_ns or 0.0) * o.calls for o in self.improved)

    @property
    def best_ns(self) -> float:
        return sum((o.best_ns or 0.0) * o.calls for o in self.improved)

    @property
    def gain_ns(self) -> float:
        return sum(o.gain_ns or 0.0 for o in self.improved)

    @property
    def gain_floor_ns(self) -> float:
        return sum(o.gain_floor_ns or 0.0 for o in self.improved)

    def totals_line(self) -> str:
        """The run's totals over the improved ops, as ``improve`` and the explorer print them."""
        line = (
            f"totals over the {len(self.improved)} improvable ops ({sum(o.calls for o in self.improved)} "
            f"calls): measured {self.measured_ns / 1e6:.3f} ms, predicted as run {self.ran_ns / 1e6:.3f} ms, "
            f"with the best configs {self.best_ns / 1e6:.3f} ms: predicted gain {self.gain_ns / 1e6:.3f} ms"
        )
        line += f" ({100 * self.gain_ns / self.ran_ns:.1f}% of their predicted time)" if self.ran_ns else ""
        return line + f"; at least {self.gain_floor_ns / 1e6:.3f} ms at each family's cross-validated error"


def improve_report(
    report: IngestReport,
    hw_name: str,
    grid: tuple[int, int] | None = None,
    chip: str = "",
    options: SolveOptions | None = None,
    use_memory: bool = True,
    store: str | Path | None = None,
    progress: Progress | None = None,
    stop: StopToken = STOP,
    calibration: TermScales | None = None,
    mesh: str | None = None,
) -> ImproveReport:
    """Every matmul and attention op of ``report`` improved on ``hw_name`` (module docstring). ``stop`` (default:
    the process-wide token, set by Ctrl-C): once set, ``Interrupted`` saying how many ops were solved before
    it; an op whose solve it cut short does not count. ``mesh``: the mesh of a multi-device capture's
    collectives (default: told from the capture)."""
    predictor = Predictor(load_hardware(hw_name), str(report.file), grid)
    scales = shipped_scales() if calibration is None else calibration
    measurements = report_measurements(report, hw_name, progress, grid, predictor, scales)
    groups: dict[str, list[tuple[IngestedOp, Measurement]]] = {}
    keys: dict[tuple[object, ...], str] = {}
    for op, m in zip(report.ops, measurements, strict=True):
        if not kernel_ttnn_op(op.kernel).takes_program_config:  # the ops TTNN takes a program config for
            continue
        if op.ring is not None:  # an op across a ring of devices: not solved as one chip's op
            continue
        identity = (op.op_code, tuple(op.shape.items()), *predictor.key(op))
        key = keys.get(identity)
        if key is None:
            key = keys[identity] = _unique(_key(op), set(keys.values()))
        groups.setdefault(key, []).append((op, m))
    options = options or SolveOptions(time_limit_seconds=30.0, explain=False, fastest=1)
    if progress:
        progress.phase("solving ops", len(groups))
    out = []
    for done, (key, members) in enumerate(groups.items()):
        try:
            if stop.stopped:
                raise Interrupted("stopped")
            if progress:
                progress.update(done)
            improvement = _improve(key, members, predictor, options, use_memory, store, scales, stop)
            if stop.stopped:  # its solve was cut short: not an answer
                raise Interrupted("stopped")
        except Interrupted:
            raise Interrupted(f"interrupted while solving ops: {done} of {len(groups)} solved") from None
        out.append(improvement)
    # biggest gain that survives the family's error first, then the biggest predicted gain
    out.sort(key=lambda o: (-(o.gain_floor_ns or -1.0), -(o.gain_ns or -1.0), -o.measured_ns * o.calls))
    return ImproveReport(
        report.file,
        hw_name,
        grid,
        chip,
        tuple(out),
        coverage_of(report, measurements),
        tuple(measurements),
        improve_collectives(report, mesh) if report.collectives or any(o.ring for o in report.ops) else None,
    )


def _error_pct(op: IngestedOp, hardware: str) -> float | None:
    error = error_for_op(op.kernel, op.shape, hardware)
    return error.median_abs_err_pct if error else None


def _key(op: IngestedOp) -> str:
    shape = ",".join(f"{d}={e}" for d, e in op.shape.items())
    options = "".join(f" {o}" for o in sorted(op.options))  # e.g. " causal"
    return f"{op.op_code} {op.kernel} {shape} {op.dtype.value} {op.fidelity.value}{options}"


def _unique(key: str, taken: set[str]) -> str:
    """``key``, or ``key #2``, ``#3``... when it is taken (ops alike but for their configs)."""
    n, out = 1, key
    while out in taken:
        n += 1
        out = f"{key} #{n}"
    return out


def _improve(
    key: str,
    members: list[tuple[IngestedOp, Measurement]],
    predictor: Predictor,
    options: SolveOptions,
    use_memory: bool,
    store: str | Path | None,
    calibration: TermScales,
    stop: StopToken = STOP,
) -> Improvement:
    op, m = members[0]
    predicted = predictor(op)
    ran = predicted.config
    base = Improvement(
        key=key,
        op_code=op.op_code,
        kernel=op.kernel,
        shape=dict(op.shape),
        rows=tuple(o.row for o, _ in members),
        measured_ns=sum(o.device_kernel_ns for o, _ in members) / len(members),
        ran_ns=m.predicted_ns,
        ran_config=ran,
        ran_candidate=m.candidate,
        batch_repeats=op.batch_repeats,
        note=op.note,
        error_pct=_error_pct(op, predictor.base.name),
    )
    if m.predicted_ns is None:
        return replace(base, note=_join(op.note, predicted.failure) or "the config it ran is not predicted")
    try:
        problem = op_problem(op, kernel_ttnn_op(op.kernel).logical_shape(op.shape, op.batch_repeats))
        assert problem is not None, "a predicted op has a problem"
        session = Session(predictor.base, problem, stop=stop)
        names = [s.candidate.name for s in session.schedules if ttnn_runs(problem, s.candidate)]
        if not names:
            return replace(base, problem=problem, note=_join(op.note, "no candidate TTNN runs with a program config"))
        results = solve_with_memory(session, {}, options, names, store=store, use_memory=use_memory).results
    except ValueError as exc:  # ProblemError, a model out of range: said, the others go on
        return replace(base, note=_join(op.note, f"not solved: {exc}"))
    hw = predictor.base
    for r in sorted((r for r in results if r.solution), key=_latency):
        config = _config(session, problem, r)
        if isinstance(config, str):
            continue
        # the config as ttnn runs it (its own buffer depths...), costed as predict --ttnn-config costs it
        ran_as = problem_ttnn_op(problem).program_configs().evaluate(hw, problem, config)
        sol = ran_as.result.solution
        if sol is None:
            continue
        best_ns = calibrated_ns(calibration, problem.program, hw, repeated_terms(sol, op.batch_repeats))
        if base.ran_ns is not None and best_ns >= base.ran_ns:  # nothing to gain: keep the config it ran
            return replace(
                base,
                best_ns=base.ran_ns,
                problem=problem,
                note=_join(
                    op.note,
                    f"keep the config it ran: the best TTNN config found ({r.candidate_name}) is predicted "
                    f"at {best_ns / 1e3:.1f} us",
                ),
            )
        return replace(
            base,
            best_ns=best_ns,
            best_candidate=r.candidate_name,
            best_values=tuple(sorted(ran_as.values.items())),
            best_config=config,
            problem=problem,
        )
    reasons = "; ".join(f"{r.candidate_name}: {r.conflict.message if r.conflict else r.status}" for r in results)
    return replace(base, problem=problem, note=_join(op.note, f"no schedule TTNN can run: {reasons}"))


def _latency(r: CandidateResult) -> int:
    return r.solution.latency_cycles if r.solution else 1 << 62


def _config(session: Session, problem: Problem, r: CandidateResult) -> TtnnConfig | str:
    """The TTNN program config of result ``r``, or why it has none."""
    assert r.solution is not None
    schedule = session.schedule(r.candidate_name)
    values = dict(r.solution.params)
    try:  # ExportError when TTNN has no op for the candidate or cannot hold an operand where it is placed
        name, args, _ = ttnn_equivalent(schedule, values)
        configs = ttnn_op_of(problem, schedule.candidate).program_configs()
    except (ExportError, ConfigError) as exc:
        return str(exc)
    if name is None:
        return f"candidate {r.candidate_name} runs without a program config"
    try:
        return configs.exported(problem, name, args)
    except ConfigError as exc:
        return str(exc)


def _join(*notes: str) -> str:
    return "; ".join(n for n in notes if n)
