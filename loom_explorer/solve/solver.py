"""Solve every candidate of a problem: one CP-SAT model per candidate, in parallel threads.

CP-SAT releases the GIL while it searches, so a thread pool gives real parallelism without pickling the
models; models are compiled once and cached, so a re-solve after a pin only pays for the search (warm
started from the previous solution of the same candidate).
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from itertools import repeat
from typing import TYPE_CHECKING

from loom_explorer.errors import UnknownCandidateError
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mapping.enumerate import enumerate_candidates
from loom_explorer.model.build import build_schedule, problem_ideal_cycles
from loom_explorer.model.expr import ModelRangeError
from loom_explorer.model.schedule import SymbolicSchedule, latency_floor
from loom_explorer.problem import Problem
from loom_explorer.result import CandidateResult, Conflict, Solution, Status
from loom_explorer.solve.incumbent import Incumbent, IncumbentFinder
from loom_explorer.solve.interrupt import STOP, Interrupted, StopToken
from loom_explorer.solve.options import LATENCY_LIMIT_CYCLES
from loom_explorer.solve.options import SolveOptions as SolveOptions  # re-exported: its home before options.py
from loom_explorer.solve.pins import check_pins, pin_domain_conflict
from loom_explorer.validate import RefereeError, judge

if TYPE_CHECKING:
    from loom_explorer.solve.compiled import CompiledSchedule


class ModelTimeError(ModelRangeError):
    """Building the candidates' models did not finish before the deadline (``Session``'s ``deadline``)."""


class Session:
    """The candidates of one problem on one chip, compiled once, solved under any pins."""

    def __init__(
        self,
        hw: HardwareSpec,
        problem: Problem,
        noc_bound: bool = True,
        start_from_known: bool = True,
        solve_found_at_once: bool = True,
        deadline: float | None = None,
        stop: StopToken = STOP,
    ) -> None:
        """``start_from_known=False`` never bounds a solve by a known schedule (``solve/incumbent.py``), to
        measure what that changes; ``solve_found_at_once=False`` leaves every candidate a screen defers to the
        end of the branch and bound (``_solve_fastest``), likewise.

        ``deadline`` (a ``time.monotonic()`` instant; the CLI passes its start plus ``--time-limit``): building
        stops with :class:`ModelTimeError` when the clock has passed it before a candidate's model is built (an
        already passed deadline builds nothing). Each candidate's model takes bounded work for any shape
        (domains are intervals, ``model/domain.py``), so only the clock can stop it between candidates.

        Raises :class:`ModelRangeError` when every candidate's predicted latency is provably beyond the
        model's range, ``LATENCY_LIMIT_CYCLES`` (:func:`latency_floor`): no schedule could be found.

        ``stop`` (default: the process-wide token, set by Ctrl-C on the command line; ``solve/interrupt.py``):
        once set, building stops with :class:`Interrupted` between candidates, running searches stop, and no
        search starts; every candidate not finished is then reported ``interrupted``."""
        self.hw = hw
        self.problem = problem
        self.start_from_known = start_from_known
        self.solve_found_at_once = solve_found_at_once
        self.stop = stop
        ideal = problem_ideal_cycles(hw, problem)  # every candidate's floor is at least this: checked first
        if ideal > LATENCY_LIMIT_CYCLES:
            raise ModelRangeError(_beyond_range(hw, ideal))
        candidates = enumerate_candidates(problem)
        built: list[SymbolicSchedule] = []
        for c in candidates:
            if stop.stopped:
                raise Interrupted(
                    f"interrupted while building the candidates' models ({len(built)} of "
                    f"{len(candidates)} built); nothing solved"
                )
            if deadline is not None and time.monotonic() > deadline:
                raise ModelTimeError(
                    f"the time limit ran out while building the candidates' models ({len(built)} "
                    f"of {len(candidates)} built); allow more time (--time-limit)"
                )
            built.append(build_schedule(hw, problem, c, noc_bound))
        self.schedules: tuple[SymbolicSchedule, ...] = tuple(built)
        self._floors = {s.candidate.name: latency_floor(s) for s in self.schedules}
        if self.schedules and min(self._floors.values()) > LATENCY_LIMIT_CYCLES:
            raise ModelRangeError(_beyond_range(hw, min(self._floors.values())))
        self._compiled: dict[str, CompiledSchedule] = {}
        self._finders: dict[str, IncumbentFinder] = {}
        self._last: dict[str, dict[str, int]] = {}
        self._lock = threading.Lock()

    def _out_of_range(self, schedule: SymbolicSchedule) -> str | None:
        """Why no schedule of this candidate can be in the model's range, if that is proven (``latency_floor``)."""
        floor = self._floors[schedule.candidate.name]
        if floor <= LATENCY_LIMIT_CYCLES:
            return None
        return (
            f"every schedule of this candidate is predicted at least {floor:,} cycles, beyond the model's "
            f"range of 2**39 = {LATENCY_LIMIT_CYCLES:,} cycles"
        )

    def schedule(self, candidate_name: str) -> SymbolicSchedule:
        for s in self.schedules:
            if s.candidate.name == candidate_name:
                return s
        names = ", ".join(s.candidate.name for s in self.schedules)
        raise UnknownCandidateError(f"no candidate named {candidate_name!r}; candidates: {names}")

    def compiled(self, schedule: SymbolicSchedule) -> CompiledSchedule:
        name = schedule.candidate.name
        from loom_explorer.solve.compiled import CompiledSchedule  # OR-Tools: loaded by the first solve

        with self._lock:
            if name not in self._compiled:
                self._compiled[name] = CompiledSchedule(schedule)
            return self._compiled[name]

    def incumbent(self, schedule: SymbolicSchedule, pins: dict[str, int]) -> Incumbent | None:
        """The best legal schedule under ``pins`` among the last solutions of this candidate and of the others
        (``solve/incumbent.py``)."""
        name = schedule.candidate.name
        if not self.start_from_known:
            return None
        with self._lock:
            finder = self._finders.get(name)
            if finder is None:
                finder = self._finders[name] = IncumbentFinder(schedule)
            own = [self._last[name]] if name in self._last else []
            others = [v for n, v in self._last.items() if n != name]
        return finder.best(own + others, pins)

    def solve(
        self,
        pins: dict[str, int] | None = None,
        options: SolveOptions = SolveOptions(),
        candidates: Sequence[str] | None = None,
        on_result: Callable[[CandidateResult], None] | None = None,
        first: Sequence[str] = (),
    ) -> list[CandidateResult]:
        """Solve the chosen (default: all) candidates under ``pins``; ranked best first. ``on_result`` is
        called with each candidate's result as it finishes (from a solver thread; with ``fastest``, once the
        branch and bound is over). ``first``: with ``fastest``, candidates the caller expects to be fastest
        (the winner of a similar problem), tried before the others when nothing is known of any: an order
        only, the answer is the same (``_solve_fastest``)."""
        pins = dict(pins or {})
        chosen = [self.schedule(n) for n in candidates] if candidates else list(self.schedules)
        check_pins(pins, chosen)
        threads = options.parallel_models or os.cpu_count() or 1
        if options.fastest is not None:
            results = self._solve_fastest(chosen, pins, options, first)
            if on_result:
                for r in results:
                    on_result(r)
            return rank(results)

        def one(s: SymbolicSchedule) -> CandidateResult:
            r = self.solve_one(s, pins, options)
            if on_result:
                on_result(r)
            return r

        with ThreadPoolExecutor(max_workers=threads) as pool:
            results = list(pool.map(one, chosen))
        return rank(results)

    def _solve_fastest(
        self, chosen: list[SymbolicSchedule], pins: dict[str, int], options: SolveOptions, first: Sequence[str] = ()
    ) -> list[CandidateResult]:
        """Branch and bound over candidates, ``n = options.fastest`` (docs/model.md, "The fastest
        candidates only"). ``c`` is the n-th smallest latency of a schedule found so far, one per
        candidate. Until ``c`` exists, the next candidate is solved to its optimum. Then every other
        candidate is screened, one per CPU core at a time: no schedule faster than ``c`` makes it
        ``dominated``; a schedule found lowers ``c`` to its latency and defers the candidate. After each
        round of screens, the deferred candidate with the fastest schedule found is solved to its optimum at
        once (``solve_one``'s ``cutoff``: under the ``c`` of that moment), so its optimum tightens ``c`` for
        the next screens (``python benchmarks/solve_order.py``: 0.81x the time, docs/performance.md). Last,
        the other deferred candidates, fastest found first, are solved to their optimum under the final ``c``
        (a deferred candidate that others have since matched is dominated).
        A dominated candidate's optimum is at least ``c``, which is at least the n-th fastest candidate's
        optimum, so it is not faster than the n-th fastest (a tie is left out: its latency is already
        found); ``c`` only falls, so it stays dominated.
        Order: candidates whose adapted known schedule is fastest first (``solve/incumbent.py``), then
        those named in ``first``, then by ``_traffic_rank``, re-sorted after every round. The order changes
        how soon ``c`` is tight (so how fast the screens prove), never which candidates are proven."""
        n = options.fastest
        if n is None or n < 1:
            raise ValueError(f"SolveOptions.fastest must be at least 1, not {n}")
        pending = list(chosen)
        found: dict[str, Incumbent | None] = {}  # the schedule each deferred candidate's screen found
        latencies: dict[str, int] = {}  # the best latency known per candidate (found or proven)
        results: list[CandidateResult] = []

        def cutoff() -> int | None:
            return sorted(latencies.values())[n - 1] if len(latencies) >= n else None

        def record(r: CandidateResult) -> None:
            results.append(r)
            if r.solution is not None:
                latencies[r.candidate_name] = r.solution.latency_cycles

        def settle(name: str) -> None:
            """Solve the deferred ``name`` to its optimum under the current ``c``, from the schedule found."""
            latencies.pop(name, None)  # its optimum replaces the screened latency
            record(self.solve_one(self.schedule(name), pins, options, cutoff=cutoff(), start=found.pop(name)))

        cores = os.cpu_count() or 1
        with ThreadPoolExecutor(max_workers=cores) as pool:
            while pending:
                if self.stop.stopped:  # no search starts any more
                    results += [self.solve_one(s, pins, options) for s in pending]
                    break
                known = {s.candidate.name: self.incumbent(s, pins) for s in pending}
                pending.sort(
                    key=lambda s: (_known_key(known[s.candidate.name]), s.candidate.name not in first, _traffic_rank(s))
                )
                cut = cutoff()
                if cut is None:
                    record(self.solve_one(pending.pop(0), pins, options))
                    continue
                batch, pending = pending[:cores], pending[cores:]
                screened = pool.map(
                    self.screen,
                    batch,
                    repeat(pins),
                    repeat(options),
                    repeat(cut),
                    [known[s.candidate.name] for s in batch],
                )
                for s, out in zip(batch, screened, strict=True):
                    if isinstance(out, CandidateResult):
                        results.append(out)
                    else:  # a schedule faster than c (or None: the screen ran out of time)
                        found[s.candidate.name] = out
                        if out is not None:
                            latencies[s.candidate.name] = out.latency_cycles
                if found and self.solve_found_at_once:  # the fastest found, solved now: its optimum tightens c
                    settle(min(found, key=lambda name: _known_key(found[name])))
            for name in sorted(found, key=lambda name: _known_key(found[name])):
                settle(name)
        return results

    def screen(
        self,
        schedule: SymbolicSchedule,
        pins: dict[str, int],
        options: SolveOptions,
        cutoff: int,
        known: Incumbent | None,
    ) -> CandidateResult | Incumbent | None:
        """Any schedule faster than ``cutoff``? ``dominated`` (bound ``cutoff``) when CP-SAT proves there is
        none, else the first one found (``None`` if the time limit came first, ``interrupted`` if a stop
        request did); ``known``: the best legal schedule the caller knows (``self.incumbent``). One worker:
        these proofs take 5-40 ms and a portfolio only adds overhead (docs/performance.md)."""
        start = time.perf_counter()
        if pin_domain_conflict(pins, schedule) is not None or self._out_of_range(schedule) is not None:
            return self.solve_one(schedule, pins, options)  # explained as a conflict
        if known is not None and known.latency_cycles < cutoff:
            return known
        raw = self.compiled(schedule).solve(
            pins,
            options.time_limit_seconds,
            1,
            options.seed,
            hint=known.values if known else self._last.get(schedule.candidate.name),
            upper_bound=cutoff - 1,
            first_solution=True,
            stop=self.stop,
        )
        if raw.status == "INFEASIBLE":
            return _result(schedule, pins, start, "dominated", bound=cutoff)
        if raw.values is None or raw.objective is None:
            return _result(schedule, pins, start, "interrupted") if self.stop.stopped else None
        return Incumbent(raw.values, raw.objective)

    def solve_one(
        self,
        schedule: SymbolicSchedule,
        pins: dict[str, int],
        options: SolveOptions,
        cutoff: int | None = None,
        start: Incumbent | None = None,
    ) -> CandidateResult:
        """Solve one candidate to its optimum; with ``cutoff``, only when it has a schedule faster than
        that (``screen``), else ``dominated``. ``start``: a legal schedule under ``pins`` to start from.
        After a stop request (``self.stop``) no search starts: the result is ``interrupted``, with the best
        schedule this candidate's search (or ``start``) found, not proven optimal, if any.

        Every schedule it returns (CP-SAT's, the starting schedule after a search that found nothing better
        in time or was interrupted, each alternative) is judged by the referee (``validate.judge``): a schedule
        the referee finds illegal, or costs differently from the solver, raises :class:`RefereeError`.

        Everything it does (compiling the model, the screen, the search, the alternatives, explaining a
        conflict) shares one budget of ``options.time_limit_seconds`` from its start: each step gets what the
        earlier ones left (``_left``)."""
        start_s = time.perf_counter()
        ends = time.monotonic() + options.time_limit_seconds
        name = schedule.candidate.name
        result = partial(_result, schedule, pins, start_s)

        why = pin_domain_conflict(pins, schedule)
        if why is not None:
            return result(
                "conflict",
                conflict=Conflict(pins=tuple(sorted(pins.items())), constraints=(), families=("domain",), message=why),
            )
        too_slow = self._out_of_range(schedule)
        if too_slow is not None:
            return result(
                "infeasible", conflict=Conflict(pins=(), constraints=(), families=("range",), message=too_slow)
            )
        if self.stop.stopped:
            return result(
                "interrupted",
                judge(
                    schedule,
                    start.values,
                    start.latency_cycles,
                    "the starting schedule (interrupted before its search)",
                )
                if start
                else None,
            )
        compiled = self.compiled(schedule)
        # a known schedule beyond the model's range cannot bound the search (its latency is capped lower)
        known = min(
            (
                k
                for k in (self.incumbent(schedule, pins), start)
                if k is not None and k.latency_cycles <= LATENCY_LIMIT_CYCLES
            ),
            key=lambda k: k.latency_cycles,
            default=None,
        )
        if cutoff is not None and (known is None or known.latency_cycles >= cutoff):
            screened = self.screen(schedule, pins, _left(options, ends), cutoff, known)
            if isinstance(screened, CandidateResult):
                return dataclasses.replace(screened, solve_seconds=time.perf_counter() - start_s)
            known = screened or known
        hint = known.values if known else self._last.get(name)
        raw = compiled.solve(
            pins,
            _left(options, ends).time_limit_seconds,
            options.workers_per_model,
            options.seed,
            hint=hint,
            upper_bound=known.latency_cycles if known else None,
            stop=self.stop,
        )
        source = f"CP-SAT's {'optimum' if raw.status == 'OPTIMAL' else 'best schedule found'}"
        if raw.values is None and known is not None:
            if raw.status == "INFEASIBLE":  # CP-SAT and a schedule the referee accepts contradict each other
                solution = judge(schedule, known.values, known.latency_cycles, "the starting schedule")
                raise RefereeError(name, "the starting schedule", known.values, None, solution.latency_cycles)
            source = "the starting schedule (the search found nothing better in time)"
            raw = dataclasses.replace(raw, values=known.values, objective=known.latency_cycles)  # timed out
        if raw.values is not None and raw.objective is not None:
            solution = judge(schedule, raw.values, raw.objective, source)  # every schedule returned is refereed
            with self._lock:  # other threads read it for their starting points
                self._last[name] = raw.values
            alternatives = (
                top_k(schedule, pins, raw.values, _left(options, ends), self.stop) if options.top_k > 1 else ()
            )
            status: Status = (
                "optimal" if raw.status == "OPTIMAL" else "interrupted" if self.stop.stopped else "feasible"
            )
            return result(status, solution, alternatives, bound=raw.bound)
        if raw.status != "INFEASIBLE":
            return result("interrupted" if self.stop.stopped else "timeout")
        from loom_explorer.solve.explain import explain_infeasibility

        try:
            conflict = (
                explain_infeasibility(schedule, pins, _left(options, ends).time_limit_seconds, self.stop, capped=True)
                if options.explain
                else None
            )
        except Interrupted:  # proven infeasible, but not explained
            conflict = (
                Conflict(
                    pins=tuple(sorted(pins.items())),
                    constraints=(),
                    families=(),
                    message="no schedule (the explanation was interrupted)",
                )
                if pins
                else None
            )
        return result(
            "conflict" if (conflict.pins if conflict is not None else pins) else "infeasible", conflict=conflict
        )


def _beyond_range(hw: HardwareSpec, least_cycles: int) -> str:
    return (
        f"every candidate's predicted latency is at least {least_cycles:,} cycles "
        f"({least_cycles / (hw.clock_ghz * 1e9):,.1f} s at {hw.clock_ghz:g} GHz), beyond the model's range of "
        f"2**39 = {LATENCY_LIMIT_CYCLES:,} cycles; try a smaller shape"
    )


# the least time a step of a candidate's solve is given, so that a spent budget still returns a status at once
MIN_STEP_SECONDS = 0.01


def _left(options: SolveOptions, ends: float) -> SolveOptions:
    """``options`` with the time limit cut to what is left before ``ends`` (``time.monotonic()``)."""
    return dataclasses.replace(options, time_limit_seconds=max(MIN_STEP_SECONDS, ends - time.monotonic()))


def _result(
    schedule: SymbolicSchedule,
    pins: dict[str, int],
    started: float,
    status: Status,
    solution: Solution | None = None,
    alternatives: tuple[Solution, ...] = (),
    conflict: Conflict | None = None,
    bound: int | None = None,
) -> CandidateResult:
    """A candidate's result, timed from ``started`` (``time.perf_counter``)."""
    return CandidateResult(
        candidate_name=schedule.candidate.name,
        description=schedule.candidate.description,
        status=status,
        solution=solution,
        alternatives=alternatives,
        conflict=conflict,
        best_bound_cycles=bound,
        solve_seconds=time.perf_counter() - started,
        pins=tuple(sorted(pins.items())),
    )


def _known_key(known: Incumbent | None) -> tuple[bool, int]:
    """Candidates with a known schedule first, fastest first."""
    return (known is None, known.latency_cycles if known else 0)


def _traffic_rank(schedule: SymbolicSchedule) -> tuple[int, int]:
    """Among candidates with nothing known: fewest inputs read by every core from DRAM first (multicast
    and local inputs cut DRAM traffic), then those without a gather of partial sums."""
    comms = dict(schedule.candidate.comms).values()
    return (sum(c.value == "dram" for c in comms), schedule.candidate.gather_axis is not None)


def top_k(
    schedule: SymbolicSchedule,
    pins: dict[str, int],
    best: dict[str, int],
    options: SolveOptions,
    stop: StopToken = STOP,
) -> tuple[Solution, ...]:
    """The next ``top_k - 1`` best distinct schedules: re-solve a copy that forbids those found so far
    (fewer when ``stop`` is set); all of them within ``options.time_limit_seconds`` (each re-solve gets what
    the earlier ones left)."""
    from loom_explorer.solve.compiled import CompiledSchedule

    ends = time.monotonic() + options.time_limit_seconds
    copy = CompiledSchedule(schedule)
    found = [best]
    out: list[Solution] = []
    for _ in range(options.top_k - 1):
        prev = found[-1]
        differs = []
        for name, value in prev.items():
            if len(schedule.param(name).values) == 1:
                continue
            lit = copy.model.new_bool_var(f"ne[{name}]")
            copy.model.add(copy.param_vars[name] != value).only_enforce_if(lit)
            differs.append(lit)
        if not differs:
            break
        copy.model.add_bool_or(differs)
        if time.monotonic() >= ends:
            break
        raw = copy.solve(
            pins, _left(options, ends).time_limit_seconds, options.workers_per_model, options.seed, stop=stop
        )
        if raw.values is None or stop.stopped:
            break
        found.append(raw.values)
        if raw.objective is None:
            break
        out.append(judge(schedule, raw.values, raw.objective, f"alternative {len(found) - 1}"))
    return tuple(out)


_STATUS_ORDER = {
    "optimal": 0,
    "feasible": 1,
    "dominated": 2,
    "timeout": 3,
    "interrupted": 4,
    "conflict": 5,
    "infeasible": 6,
}


def rank(results: list[CandidateResult]) -> list[CandidateResult]:
    """Candidates with a schedule best first (by predicted latency, whatever their status), then dominated
    (by bound), timeouts, interrupted, conflicts, infeasible."""

    def key(r: CandidateResult) -> tuple[int, int, str]:
        lat = r.solution.latency_cycles if r.solution else r.best_bound_cycles or 0
        return (0 if r.solution else _STATUS_ORDER[r.status], lat, r.candidate_name)

    return sorted(results, key=key)


def solve_problem(
    hw: HardwareSpec, problem: Problem, pins: dict[str, int] | None = None, options: SolveOptions = SolveOptions()
) -> list[CandidateResult]:
    return Session(hw, problem).solve(pins, options)
