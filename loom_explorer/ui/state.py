"""The explorer's state: which problem, which candidate, which pins, and what the solver said.

No widgets here (the views in this package draw it), so the logic is tested with plain pytest and a
notebook can drive it. Every change that needs the solver is split in two:

* ``plan_*`` builds a :class:`SolveJob` from the current state without changing it;
* :meth:`SolveJob.run` does the solving (on any thread; the session serialises nothing, so the views run
  one job at a time, see ``ui/runner.py``);
* :meth:`ExplorerState.apply` records the job's results (on the thread that owns the state).

The synchronous methods (:meth:`solve_all`, :meth:`pin`, :meth:`free`, :meth:`select`) do all three at
once, for notebooks and tests.

Pins belong to a candidate: switching candidates keeps each one's pins, and switching back restores them.
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import param

from loom_explorer.export.exporter import SolvedSchedule
from loom_explorer.export.formats import export_blocker, export_text
from loom_explorer.export.schedule_json import ScheduleDocument, solved_document
from loom_explorer.hardware import list_hardware, load_hardware
from loom_explorer.hardware.schema import (
    DataFormat,
    Fidelity,
    HardwareSpec,
    parse_data_format,
    parse_fidelity,
)
from loom_explorer.model.expr import evaluate
from loom_explorer.model.schedule import SymbolicSchedule
from loom_explorer.problem import KernelTarget, Problem, example_shape, make_problem
from loom_explorer.program import list_kernels, program_family
from loom_explorer.program.dsl import TileProgram
from loom_explorer.report import solution_metrics, solve_json
from loom_explorer.result import CandidateResult, Solution
from loom_explorer.solve.interrupt import STOP, StopToken
from loom_explorer.solve.memory import recall, remember
from loom_explorer.solve.pins import PinError
from loom_explorer.solve.solver import Session, SolveOptions, rank
from loom_explorer.targets.ttnn.config_text import config_call, op_name
from loom_explorer.targets.ttnn.defaults import evaluate_ttnn_default
from loom_explorer.targets.ttnn.op import ttnn_op_of
from loom_explorer.traffic import schedule_transfers, traffic_report
from loom_explorer.traffic.loads import TrafficReport
from loom_explorer.traffic.transfers import Transfer
from loom_explorer.ui.catalog import Catalog, InputError

DEFAULT_HW = "wormhole_n150"
DEFAULT_KERNEL = "gemm"
NO_ACTIVATION = "none"
DEFAULT_ACTIVATION = "relu"  # what the explorer picks for a kernel that needs one
T = TypeVar("T")


MAX_SHAPE_CHARS = 400  # a shape names a handful of extents; longer text is refused before it is parsed


@dataclass(frozen=True, slots=True)
class ProblemInputs:
    """What the user chose, as text (validated by :func:`open_session`). ``options``: the program options
    switched on; those the kernel does not declare are left out of its problem (a choice kept for a kernel
    that has them)."""

    hw: str
    kernel: str
    shape: str
    dtype: str
    fidelity: str
    options: frozenset[str] = frozenset()
    target: str = "ttnn"
    activation: str = NO_ACTIVATION  # the SFPU op of the program's ``activation`` ops (none: they are off)


def with_option(options: list[str], name: str, on: bool) -> list[str]:
    """``options`` (sorted names) with ``name`` switched on or off."""
    return sorted(set(options) | {name}) if on else sorted(set(options) - {name})


def needs_activation(program: TileProgram) -> bool:
    """A program with an activation op whose family computes nothing without one (an element-wise
    ``y = f(x)``: ``ProgramFamily.activation_required``)."""
    return program.uses_activation and program_family(program).activation_required


def activation_names() -> list[str]:
    """The activations to offer: every SFPU op some shipped hardware file costs, and none."""
    names = {name for hw in list_hardware() for name in load_hardware(hw).compute.sfpu_tile_cycles}
    return [NO_ACTIVATION, *sorted(names)]


def open_session(inputs: ProblemInputs, catalog: Catalog | None = None, stop: StopToken = STOP) -> Session:
    """Load hardware and kernel (names of ``catalog``; paths too with :meth:`Catalog.local`, the default),
    build the problem and every candidate's model. Every error is an :class:`InputError` naming the field;
    a shape whose model is too large to build (a ``ValueError`` giving the reason, or memory running out)
    is refused as a ``shape`` error. ``stop`` stops the session's searches (``solve/interrupt.py``)."""
    catalog = catalog if catalog is not None else Catalog.local()

    def checked(field_name: str, make: Callable[[], T]) -> T:
        try:
            return make()
        except InputError:
            raise
        except (ValueError, OSError) as exc:  # HardwareError, KernelError, ProblemError are ValueErrors
            raise InputError(field_name, str(exc)) from None
        except (MemoryError, RecursionError):
            raise InputError(field_name, "too large: building the model ran out of memory") from None

    if len(inputs.shape) > MAX_SHAPE_CHARS:
        raise InputError("shape", f"too long ({len(inputs.shape)} characters; at most {MAX_SHAPE_CHARS})")
    hw: HardwareSpec = checked("hw", lambda: load_hardware(catalog.hw_source(inputs.hw)))
    program = checked("kernel", lambda: catalog.program(inputs.kernel))
    dtype: DataFormat = checked("dtype", lambda: parse_data_format(inputs.dtype))
    fidelity: Fidelity = checked("fidelity", lambda: parse_fidelity(inputs.fidelity))
    options = frozenset(inputs.options) & frozenset(program.options)
    target: KernelTarget = checked("target", lambda: KernelTarget(inputs.target))
    activation = inputs.activation if program.uses_activation and inputs.activation != NO_ACTIVATION else None
    if activation is not None and activation not in hw.compute.sfpu_tile_cycles:
        raise InputError("activation", f"{hw.name} has no SFPU cost for {activation!r}")
    if activation is None and needs_activation(program):
        raise InputError("activation", f"{program.name} applies the activation: choose one")
    problem: Problem = checked(
        "shape",
        lambda: make_problem(
            program, inputs.shape, dtype, fidelity, options=options, target=target, activation=activation
        ),
    )
    return checked("shape", lambda: Session(hw, problem, stop=stop))


@dataclass(frozen=True, slots=True)
class ExplorerSchedule:
    """The selected candidate's schedule under its pins, as a notebook reads it."""

    candidate: str
    description: str
    status: str
    pins: dict[str, int]
    params: dict[str, int]
    latency_cycles: int | None
    latency_us: float | None
    tflops: float | None
    roofline_pct: float | None
    breakdown: dict[str, int]
    l1_bytes: int | None
    conflict: str | None


@dataclass(frozen=True, slots=True)
class TtnnDefault:
    """What ttnn runs for the problem with no program config, costed by the same model (``predict
    --ttnn-default``): the ttnn call and config in words, and its candidate with the config's values
    (``result``), or why there is none (``note``)."""

    call: str  # e.g. "ttnn.matmul: ttnn.MatmulMultiCoreReuseMultiCastProgramConfig(...)"
    result: CandidateResult | None
    note: str = ""
    schedule: SymbolicSchedule | None = None  # its candidate's (not always one the enumerator offers)

    @property
    def latency_cycles(self) -> int | None:
        return self.result.solution.latency_cycles if self.result and self.result.solution else None


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A schedule kept for comparison: candidate, pins and the result the solver gave for them."""

    candidate: str
    pins: tuple[tuple[str, int], ...]
    result: CandidateResult

    @property
    def label(self) -> str:
        pins = ", ".join(f"{k}={v}" for k, v in self.pins)
        return self.candidate + (f" [{pins}]" if pins else "")


@dataclass(slots=True)
class SolveJob:
    """Solver work planned from a state: (candidate, pins) pairs, solved in order by :meth:`run`."""

    session: Session
    tasks: tuple[tuple[str, tuple[tuple[str, int], ...]], ...]
    options: SolveOptions
    select: str | None = None  # candidate to select once applied (None: the best)
    results: list[CandidateResult] = field(default_factory=list)
    note: str = ""  # why the results store could not be used, if it could not

    def run_one(self, index: int) -> CandidateResult:
        name, pins = self.tasks[index]
        out = self.session.solve_one(self.session.schedule(name), dict(pins), self.options)
        self.results.append(out)
        return out

    def run(self) -> SolveJob:
        for i in range(len(self.tasks)):
            self.run_one(i)
        return self

    def recall(self) -> str:
        """Fill ``results`` from the results store when this problem's every candidate was proven before without
        pins (by ``solve`` or an earlier page, ``solve/memory.py``): the provenance ("from the store, proven
        ..."), or "" (then ``note`` says why the store could not be read, if it could not)."""
        if any(pins for _, pins in self.tasks) or len(self.tasks) != len(self.session.schedules):
            return ""
        found = recall(self.session, {}, self.options)
        self.note = found.note
        self.results.extend(found.results)
        return found.provenance()

    def remember(self) -> None:
        """Record this job's latest result of every candidate when each is proven (``solve/memory.py``)."""
        latest = {r.candidate_name: r for r in self.results}
        if len(latest) == len(self.session.schedules) and not any(pins for _, pins in self.tasks):
            self.note = remember(self.session, {}, self.options, rank(list(latest.values()))) or self.note

    def run_fastest(self) -> list[CandidateResult]:
        """The fastest candidate of the tasks (all without pins), proven, and every other one proven no faster
        (``SolveOptions.fastest``): the page shows the winner long before every candidate's own optimum."""
        if any(pins for _, pins in self.tasks):
            raise ValueError("run_fastest solves candidates without pins")
        out = self.session.solve({}, replace(self.options, fastest=1), candidates=[name for name, _ in self.tasks])
        self.results.extend(out)
        return out


class ExplorerState(param.Parameterized):
    """Problem inputs, the selected candidate with its pins, and every candidate's latest result.

    Each state has its own choices: the hardware and kernel lists are its catalog's names, set on this
    instance (the class's lists never change), and every choice is checked when it is set, so nothing one
    state (one browser session) is given appears in another's lists."""

    hw: param.Selector[str] = param.Selector(
        default=DEFAULT_HW, objects=list_hardware(), doc="hardware name (of the catalog)"
    )
    kernel: param.Selector[str] = param.Selector(
        default=DEFAULT_KERNEL, objects=list_kernels(), doc="tile program (of the catalog)"
    )
    shape = param.String(default="M=4096,K=4096,N=4096", doc="extents, e.g. M=4096,K=4096,N=4096")
    dtype: param.Selector[str] = param.Selector(
        default="bfloat16", objects=[f.value for f in DataFormat], doc="data format"
    )
    fidelity: param.Selector[str] = param.Selector(
        default="hifi2", objects=[f.value for f in Fidelity], doc="math fidelity"
    )
    program_options = param.List(
        default=[],
        item_type=str,
        doc="the program options switched on, sorted (e.g. causal); those the kernel "
        "does not declare are kept for a kernel that does, and left out of its problem",
    )
    activation: param.Selector[str] = param.Selector(
        default=NO_ACTIVATION,
        objects=activation_names(),
        doc="the function of the kernel's activation ops (kernels that have them)",
    )
    target: param.Selector[str] = param.Selector(
        default="ttnn",
        objects=[t.value for t in KernelTarget],
        doc="whose kernels run the schedule (and so whose circular buffers L1 holds)",
    )
    time_limit_seconds = param.Number(default=20.0, bounds=(0.1, None), doc="per-candidate solve limit")

    candidate = param.String(default="", doc="the selected candidate")
    pins = param.Dict(default={}, doc="pins of the selected candidate (parameter -> value)")
    results = param.List(default=[], doc="every candidate's latest result, best first")
    error = param.String(default="", doc="why the last request failed, naming the field or pin")
    compare = param.Parameter(default=None, doc="a Snapshot kept for side-by-side comparison")

    def __init__(self, catalog: Catalog | None = None, **params: Any) -> None:
        """``catalog`` says which hardware and kernel names exist (default :meth:`Catalog.local`: the
        shipped ones, and a path given here is offered beside them). An unknown name or an unreadable
        data format or fidelity raises :class:`InputError` naming the field."""
        catalog = catalog if catalog is not None else Catalog.local()
        hw, kernel = str(params.pop("hw", DEFAULT_HW)), str(params.pop("kernel", DEFAULT_KERNEL))
        chosen = sorted(set(params.pop("program_options", [])))
        if "causal" in params:  # causal=True: short for the option causal
            chosen = with_option(chosen, "causal", bool(params.pop("causal")))
        params["program_options"] = chosen
        catalog.hw_source(hw)
        if "activation" in params and params["activation"] not in activation_names():
            raise InputError(
                "activation",
                f"unknown activation {params['activation']!r}; choose one of {', '.join(activation_names())}",
            )
        if "activation" not in params and needs_activation(catalog.program(kernel)):
            params["activation"] = DEFAULT_ACTIVATION
        if "shape" not in params:
            params["shape"] = example_shape(catalog.program(kernel))
        else:
            catalog.kernel_source(kernel)
        for key, parse in (("dtype", parse_data_format), ("fidelity", parse_fidelity)):
            if key in params:  # the widgets list canonical names: show an alias (bf16) as its name (bfloat16)
                try:
                    params[key] = parse(params[key]).value
                except ValueError as exc:
                    raise InputError(key, str(exc)) from None
        super().__init__(**params)  # type: ignore[no-untyped-call]  # param's Parameterized.__init__ is untyped
        self.catalog = catalog
        self.param.hw.objects = [*catalog.hardware, *([] if hw in catalog.hardware else [hw])]
        self.param.kernel.objects = [*catalog.kernels, *([] if kernel in catalog.kernels else [kernel])]
        self.hw, self.kernel = hw, kernel
        self.session: Session | None = None
        self.stop_token = StopToken()  # this state's searches only (one browser session's)
        self._pins_by_candidate: dict[str, dict[str, int]] = {}
        self._latest: dict[str, CandidateResult] = {}
        self._traffic: dict[tuple[str, tuple[tuple[str, int], ...]], list[Transfer]] = {}
        self._ttnn_default: tuple[Session, TtnnDefault] | None = None

    def release(self) -> None:
        """Stop this state's running search, drop the session, every result and cache, without notifying
        watchers (a closed browser session). The state solves nothing afterwards."""
        self.stop_token.stop()
        self.session = None
        self._ttnn_default = None
        self._pins_by_candidate, self._latest, self._traffic = {}, {}, {}
        with param.parameterized.discard_events(self):
            self.results, self.compare, self.pins = [], None, {}

    # ------------------------------------------------------------------ inputs
    @property
    def inputs(self) -> ProblemInputs:
        return ProblemInputs(
            self.hw,
            self.kernel,
            self.shape,
            self.dtype,
            self.fidelity,
            frozenset(self.program_options),
            self.target,
            self.activation,
        )

    @property
    def causal(self) -> bool:
        """Whether the program option ``causal`` is on (``program_options``; the name the explorer's query
        string and notebooks have always used)."""
        return "causal" in self.program_options

    @causal.setter
    def causal(self, on: bool) -> None:
        self.program_options = with_option(self.program_options, "causal", on)

    def use_example_shape(self) -> None:
        """Set ``shape`` to the kernel's example (the explorer does this when the kernel changes)."""
        self.shape = example_shape(self.catalog.program(self.kernel))

    @property
    def options(self) -> SolveOptions:
        return SolveOptions(time_limit_seconds=self.time_limit_seconds)

    # ------------------------------------------------------------------ plans
    def plan_problem(self) -> SolveJob:
        """Open a session for the current inputs (raises :class:`InputError`) and plan every candidate."""
        session = open_session(self.inputs, self.catalog, self.stop_token)
        return SolveJob(session, tuple((s.candidate.name, ()) for s in session.schedules), self.options)

    def plan_pins(self, pins: dict[str, int]) -> SolveJob:
        """Plan a re-solve of the selected candidate under ``pins`` (raises :class:`PinError`)."""
        session, schedule = self._selected()
        for name, value in pins.items():
            if name not in schedule.param_names:
                raise PinError(
                    f"pin {name!r}: candidate {schedule.candidate.name} has no such parameter; "
                    f"parameters: {', '.join(schedule.param_names)}"
                )
            if not isinstance(value, numbers.Integral) or isinstance(value, bool):
                raise PinError(f"pin {name}={value!r}: the value must be an integer")
        clean = tuple(sorted((name, int(value)) for name, value in pins.items()))  # numpy ints too
        return SolveJob(session, ((schedule.candidate.name, clean),), self.options, select=schedule.candidate.name)

    def ttnn_default(self) -> TtnnDefault:
        """What ttnn runs for this problem without a program config, costed (computed once per problem)."""
        session = self._session()
        if self._ttnn_default is None or self._ttnn_default[0] is not session:
            try:
                config, evaluated = evaluate_ttnn_default(session.hw, session.problem)
            except ValueError as exc:  # ConfigError: ttnn has no default this model can express
                found = TtnnDefault("", None, f"no ttnn default: {exc}")
            else:
                op = ttnn_op_of(evaluated.schedule.problem, evaluated.schedule.candidate)
                call = f"{op_name(config, op)}: " + "; ".join(config_call(config))
                found = TtnnDefault(call, evaluated.result, schedule=evaluated.schedule)
            self._ttnn_default = (session, found)
        return self._ttnn_default[1]

    def plan_ttnn_default(self) -> SolveJob:
        """Show ttnn's default: its candidate with every parameter pinned to the config's value (raises
        RuntimeError when there is none)."""
        default = self.ttnn_default()
        if default.result is None or default.result.solution is None:
            why = default.result.conflict.message if default.result and default.result.conflict else "no schedule"
            raise RuntimeError(default.note or f"ttnn's default is illegal in the model: {why}")
        name = default.result.candidate_name
        session = self._session()
        if name not in {s.candidate.name for s in session.schedules}:
            raise RuntimeError(
                f"ttnn's default runs as {name}, which is not one of this problem's candidates "
                "(a dimension of one tile, which the candidates never split); its figures are "
                "in its row"
            )
        return SolveJob(session, ((name, default.result.solution.params),), self.options, select=name)

    def plan_select(self, candidate: str) -> SolveJob | None:
        """``None`` when ``candidate`` already has a result (select it with :meth:`select`), else its solve."""
        session = self._session()
        session.schedule(candidate)  # KeyError naming the candidates
        if candidate in self._latest:
            return None
        return SolveJob(session, ((candidate, ()),), self.options, select=candidate)

    # ------------------------------------------------------------------ apply
    def apply(self, job: SolveJob) -> None:
        """Record a finished (or partly finished) job's results."""
        if job.session is not self.session:  # a new problem: forget the old one's results and pins
            self.session = job.session
            self._pins_by_candidate, self._latest, self._traffic = {}, {}, {}
            self.candidate, self.pins = "", {}
            self.compare = None  # a kept schedule of another problem (chip, shape) compares with nothing here
        for r in job.results:
            self._latest[r.candidate_name] = r
            self._pins_by_candidate[r.candidate_name] = dict(r.pins)
        self.error = ""
        chosen = job.select or (self.candidate if self.candidate in self._latest else None)
        ranked = rank(list(self._latest.values()))
        with param.parameterized.batch_call_watchers(self):
            self.results = ranked
            if chosen is None and ranked:
                chosen = ranked[0].candidate_name
            if chosen is not None:
                self.candidate = chosen
                self.pins = self._pins_by_candidate.get(chosen, {})

    # ------------------------------------------------------------------ synchronous API
    def solve_all(self) -> None:
        """Open the problem and solve every candidate without pins (from the results store when it was
        proven before); select the best."""
        job = self.plan_problem()
        if not job.recall():
            job.run().remember()
        self.apply(job)

    def select(self, candidate: str) -> None:
        """Show ``candidate`` with the pins it had (its latest result)."""
        job = self.plan_select(candidate)
        if job is not None:
            self.apply(job.run())
            return
        with param.parameterized.batch_call_watchers(self):
            self.candidate = candidate
            self.pins = self._pins_by_candidate.get(candidate, {})

    def pin(self, name: str, value: int) -> CandidateResult:
        """Pin ``name`` to ``value`` on the selected candidate and re-solve it."""
        self.apply(self.plan_pins({**self.pins, name: value}).run())
        return self.result

    def free(self, name: str | None = None) -> CandidateResult:
        """Free one pin (or all with ``None``) and re-solve."""
        self.apply(self.plan_pins(self.pins_without(name)).run())
        return self.result

    def pins_without(self, name: str | None) -> dict[str, int]:
        """The pins once ``name`` (every pin, for ``None``) is freed; PinError if it is not pinned."""
        if name is None:
            return {}
        if name not in self.pins:
            raise PinError(f"{name} is not pinned; pinned: {', '.join(self.pins) or 'nothing'}")
        return {k: v for k, v in self.pins.items() if k != name}

    def keep_for_compare(self) -> Snapshot:
        snap = Snapshot(self.candidate, tuple(sorted(self.pins.items())), self.result)
        self.compare = snap
        return snap

    # ------------------------------------------------------------------ reading
    def _session(self) -> Session:
        if self.session is None:
            raise RuntimeError("nothing solved yet: call solve_all() first")
        return self.session

    def _selected(self) -> tuple[Session, SymbolicSchedule]:
        session = self._session()
        if not self.candidate:
            raise RuntimeError("no candidate selected")
        return session, session.schedule(self.candidate)

    @property
    def hardware(self) -> HardwareSpec:
        return self._session().hw

    @property
    def problem(self) -> Problem:
        return self._session().problem

    @property
    def symbolic(self) -> SymbolicSchedule:
        """The selected candidate's symbolic schedule (parameters, constraints, latency expression)."""
        return self._selected()[1]

    @property
    def result(self) -> CandidateResult:
        self._selected()
        return self._latest[self.candidate]

    def result_of(self, candidate: str) -> CandidateResult | None:
        return self._latest.get(candidate)

    @property
    def solution(self) -> Solution | None:
        return self.result.solution

    @property
    def schedule(self) -> ExplorerSchedule:
        r = self.result
        s = r.solution
        metrics = solution_metrics(self.hardware, self.symbolic, s) if s else {}
        return ExplorerSchedule(
            candidate=r.candidate_name,
            description=r.description,
            status=r.status,
            pins=dict(r.pins),
            params=s.values() if s else {},
            latency_cycles=s.latency_cycles if s else None,
            latency_us=metrics.get("latency_us"),
            tflops=metrics.get("tflops"),
            roofline_pct=metrics.get("roofline_pct"),
            breakdown=dict(s.breakdown) if s else {},
            l1_bytes=s.l1_bytes if s else None,
            conflict=r.conflict.message if r.conflict else None,
        )

    def transfers(self, tensor: str | None = None) -> list[Transfer]:
        """Every NoC transfer of the selected schedule, or one tensor's (empty when it has no schedule)."""
        s = self.solution
        if s is None:
            return []
        key = (self.candidate, s.params)
        if key not in self._traffic:
            self._traffic[key] = schedule_transfers(self.hardware, self.symbolic, s.values())
        return [t for t in self._traffic[key] if tensor is None or t.tensor == tensor]

    def traffic(self, tensor: str | None = None) -> TrafficReport | None:
        """Link and DRAM loads of the selected schedule: all traffic, or one tensor's."""
        s = self.solution
        if s is None:
            return None
        return traffic_report(self.hardware, self.transfers(tensor), s.latency_cycles)

    def tensors_moved(self) -> list[str]:
        return list(dict.fromkeys(t.tensor for t in self.transfers()))

    def l1_usage(self) -> list[tuple[str, int]]:
        """(circular buffer, bytes per core) of the selected schedule."""
        s = self.solution
        if s is None:
            return []
        values = s.values()
        return [(b.name, evaluate(b.bytes_expr, values)) for b in self.symbolic.l1_buffers]

    def document(self) -> ScheduleDocument:
        """The selected schedule as a schedule document (what the runners and the store take)."""
        return solved_document(self.solved())

    def solved(self) -> SolvedSchedule:
        """The selected schedule as the exporters take it (``export/exporter.py``)."""
        _, schedule = self._selected()
        return SolvedSchedule(
            schedule,
            self.result,
            self.catalog.hw_source(self.hw),
            self.catalog.kernel_source(self.kernel),
            self.options,
        )

    def export(self, fmt: str) -> str:
        """The selected schedule in export format ``fmt`` (``export/formats.py``); ExportError if it cannot be."""
        return export_text(fmt, self.solved())

    def export_blocker(self, fmt: str) -> str | None:
        """Why the selected schedule cannot be exported as ``fmt`` (None: it can)."""
        return export_blocker(fmt, self.solved())

    def schedule_json(self) -> str:
        """The selected schedule in the ``solve --json`` contract (one candidate), for download."""
        session, schedule = self._selected()
        doc = solve_json(
            session.hw, session.problem, {schedule.candidate.name: schedule}, [self.result], dict(self.pins)
        )
        return json.dumps(doc, indent=2) + "\n"
