"""One sweep task: solve one op on one chip, and price ttnn's default config for it (runs on a worker).

``solve_op`` never raises: anything that goes wrong (an op the model refuses, a solver error) becomes a
``failed`` record carrying the error, so one bad op does not stop a sweep. The record keeps the best
schedule and the runner-up (the best schedule of another candidate), each with its utilisation (ideal
compute cycles over the predicted latency), and the predicted latency of the config ttnn picks without
one (``predict --ttnn-default``: ``ttnn_default_config`` for matmuls, 32-element chunks for SDPA, the
interleaved work split of ``targets/ttnn/defaults.py`` for element-wise ops and row reductions).
Ops of one key under several labels are solved once; ``as_op`` makes each label's record of the result.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, replace

from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.hashing import hardware_sha256
from loom_explorer.problem import Problem, make_problem
from loom_explorer.program import load_program
from loom_explorer.result import CandidateResult
from loom_explorer.solve.memory import PROVEN, solve_with_memory
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.store import SweepChoice, SweepRecord, SweepStatus, package_version
from loom_explorer.sweep.ops import SweepOp
from loom_explorer.targets.ttnn.defaults import evaluate_ttnn_default


@dataclass(frozen=True, slots=True)
class SweepSettings:
    """Solver settings of every task: one CP-SAT worker per task (a Dask worker process is one core)."""

    time_limit_seconds: float = 30.0
    workers_per_model: int = 1
    use_memory: bool = True  # answer an op proven before from the default results store (solve/memory.py)

    def solve_options(self) -> SolveOptions:
        # a sweep records the best schedule and the runner-up: the others need only be proven no faster
        return SolveOptions(
            time_limit_seconds=self.time_limit_seconds,
            workers_per_model=self.workers_per_model,
            explain=False,
            fastest=2,
        )


def op_key(hw: HardwareSpec, op: SweepOp) -> str:
    """The skip key: the hardware file's hash, this tool's version, the op and its label (ops of one key
    under several labels, a layer's two norms, are solved once and recorded once per label)."""
    return _key(hardware_sha256(hw), package_version("loom-explorer"), op)


def _key(sha256: str, version: str, op: SweepOp) -> str:
    return f"{sha256}|{version}|{op.key}|{op.label}"


def as_op(record: SweepRecord, op: SweepOp) -> SweepRecord:
    """``record``, solved for an op of the same key as ``op``, as ``op``'s record: its label and skip key."""
    if (record.kernel, record.shape, record.dtype, record.fidelity, record.options) != (
        op.kernel,
        op.shape,
        op.dtype.value,
        op.fidelity.value,
        tuple(sorted(op.options)),
    ):
        raise ValueError(f"{op.label or op.key}: not the op of record {record.op_key}")
    key = (
        _key(record.hardware_sha256, record.tool_version, op)
        if record.hardware_sha256
        else f"{record.hardware}|{op.key}|{op.label}"
    )
    return replace(record, op_key=key, label=op.label)


def _choice(hw: HardwareSpec, session: Session, r: CandidateResult) -> SweepChoice:
    assert r.solution is not None
    ideal = session.schedule(r.candidate_name).ideal_cycles
    return SweepChoice(
        r.candidate_name,
        r.solution.params,
        r.solution.latency_cycles,
        hw.cycles_to_us(r.solution.latency_cycles) * 1e3,
        ideal / r.solution.latency_cycles,
    )


def _ttnn_default(hw: HardwareSpec, problem: Problem) -> tuple[float | None, str]:
    """(predicted ns of ttnn's default config, a note: its candidate, or why there is none)."""
    try:
        _, evaluated = evaluate_ttnn_default(hw, problem)
    except ValueError as exc:
        return None, f"no ttnn default: {exc}"
    sol = evaluated.result.solution
    if sol is None:
        reason = evaluated.result.conflict.message if evaluated.result.conflict else evaluated.result.status
        return None, f"ttnn default {evaluated.result.candidate_name}: {reason}"
    return hw.cycles_to_us(sol.latency_cycles) * 1e3, evaluated.result.candidate_name


@dataclass(frozen=True, slots=True)
class RecordPlace:
    """What names the chip (or mesh) of a record: the op's key on it, its name and the hash of its description."""

    op_key: str
    hardware: str
    hardware_sha256: str


def sweep_record(
    op: SweepOp,
    where: RecordPlace,
    status: SweepStatus,
    error: str,
    solve_seconds: float,
    *,
    best: SweepChoice | None = None,
    runner_up: SweepChoice | None = None,
    ideal_ns: float | None = None,
    ttnn_default_ns: float | None = None,
    ttnn_default_note: str = "",
) -> SweepRecord:
    return SweepRecord(
        op_key=where.op_key,
        hardware=where.hardware,
        hardware_sha256=where.hardware_sha256,
        tool_version=package_version("loom-explorer"),
        label=op.label,
        kernel=op.kernel,
        shape=op.shape,
        dtype=op.dtype.value,
        fidelity=op.fidelity.value,
        options=tuple(sorted(op.options)),
        status=status,
        error=error,
        best=best,
        runner_up=runner_up,
        ideal_ns=ideal_ns,
        ttnn_default_ns=ttnn_default_ns,
        ttnn_default_note=ttnn_default_note,
        solve_seconds=solve_seconds,
    )


def failed_record(hw_name: str, op: SweepOp, error: str, seconds: float = 0.0) -> SweepRecord:
    """The record of an op that could not be solved on ``hw_name`` (the error says why)."""
    try:
        hw = load_hardware(hw_name)
        where = RecordPlace(op_key(hw, op), hw.name, hardware_sha256(hw))
    except Exception:  # the hardware itself is what failed
        where = RecordPlace(f"{hw_name}|{op.key}|{op.label}", hw_name, "")
    return sweep_record(op, where, "failed", error, seconds)


def solve_op(hw_name: str, op: SweepOp, settings: SweepSettings = SweepSettings()) -> SweepRecord:
    """Solve ``op`` on ``hw_name`` (module docstring); never raises."""
    start = time.perf_counter()
    try:
        hw = load_hardware(hw_name)
    except Exception as exc:  # recorded, the sweep goes on
        return failed_record(hw_name, op, f"{type(exc).__name__}: {exc}", time.perf_counter() - start)
    where = RecordPlace(op_key(hw, op), hw.name, hardware_sha256(hw))
    try:
        problem = make_problem(load_program(op.kernel), op.shape, op.dtype, op.fidelity, options=op.options)
        session = Session(hw, problem)
        # an op proven before (by any sweep of this machine's default store) comes back at once
        results = solve_with_memory(session, {}, settings.solve_options(), use_memory=settings.use_memory).results
        if session.stop.stopped:  # the sweep is stopping: unfinished, and never recorded as a result
            return failed_record(hw_name, op, "interrupted before the solve finished", time.perf_counter() - start)
        solved = [r for r in results if r.solution is not None]
        default_ns, note = _ttnn_default(hw, problem)
        ideal_ns = hw.cycles_to_us(max(s.ideal_cycles for s in session.schedules)) * 1e3
        if not solved:
            reasons = "; ".join(
                f"{r.candidate_name}: {r.conflict.message if r.conflict else r.status}" for r in results
            )
            return sweep_record(
                op,
                where,
                "no_schedule",
                reasons,
                time.perf_counter() - start,
                ideal_ns=ideal_ns,
                ttnn_default_ns=default_ns,
                ttnn_default_note=note,
            )
        unproven = [r.candidate_name for r in results if r.status not in PROVEN]
        return sweep_record(
            op,
            where,
            "ok",
            f"not proven optimal within the time limit: {', '.join(unproven)}" if unproven else "",
            time.perf_counter() - start,
            best=_choice(hw, session, solved[0]),
            runner_up=_choice(hw, session, solved[1]) if len(solved) > 1 else None,
            ideal_ns=hw.cycles_to_us(session.schedule(solved[0].candidate_name).ideal_cycles) * 1e3,
            ttnn_default_ns=default_ns,
            ttnn_default_note=note,
        )
    except Exception as exc:  # recorded, the sweep goes on
        detail = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return failed_record(hw_name, op, detail, time.perf_counter() - start)
