"""The joint CP-SAT model: one split per op, the state of every tensor, the collectives between them.

Variables (all boolean): ``view[v]`` (exactly one: the mesh shape ttnn opens), ``x[op, s]`` (exactly one split
per op, of the chosen view), ``cfg[T, c]`` (exactly one collective configuration, ``transitions.py``, per
tensor ``T``, of the chosen view). A tensor's source state is its producer's split's output state:
``src[T, a] = sum_{s: out(s) = a} x[producer, s]``. For each reader of ``T`` (an op's input), ``dst[b]``
sums the reader's splits reading ``T`` in state ``b``, and ``q[a, b]`` (one per state pair a collective
connects) has the pair's marginals: ``sum_b q[a, b] = src[a]``, ``sum_a q[a, b] = dst[b]`` (exact for
integral splits, and a far tighter relaxation than products of literals). A change ``a -> b`` is
``made[T, a, b] >= q[a, b]`` once for every reader of ``b`` (two matmuls reading one norm's output gather it
once).

Costs (cycles), the objective's terms, summed over the chain of ops every device runs:

* ``onchip[op, s] * x[op, s]``: the split's per-chip latency (its proven optimum, or a lower bound while it is
  unsolved: ``plan.py``) plus its own fixed collectives (the distributed norm's stats gather);
* a fused all-gather + matmul split (``splits.py``) costs ``fused[op, s, c]`` under its input tensor's config
  ``c``;
* the table of each tensor's transitions, disaggregated over its configs: ``sum_c made[T, a, b, c] =
  made[T, a, b]``, ``made[T, a, b, c] => cfg[T, c]``, costing ``transition(T, a -> b, c)`` (the fused splits'
  ``z`` likewise: ``sum_c z[c] = x``, ``z[c] => cfg[T, c]``). A pair no collective connects has no ``q``.

The boundary ops pin the input's and output's states (``graph.py``).

Of equally fast assignments the one with the fewest collectives is returned: the model minimises
``(K + 1) * latency + sum(made) + sum(z)`` over its ``K`` state-change and fused-gather literals, so the
latency comes first and the count of collectives (at most ``K``) only breaks its ties (a matmul whose input
is already replicated takes its plain split, not a fused gather of nothing).

**Dominated configs.** A tensor's config enters the model only through its own transitions' and fused
splits' costs, so a config ``c`` that another config ``c'`` matches or beats on every one of them (every
state change ``a -> b`` its readers may ask, every fused split reading it) is left out: any assignment
choosing ``c`` costs at least as much with ``c'``, so the optimum is unchanged. Of configs equal on every
term the first listed is kept. More links, and a ring where the axis closes, usually dominate: a Galaxy
view's 64 configs per tensor come down to one or two. A tensor a ``num_links`` or ``topology`` pin names
keeps every config (the pin chooses among them), as does the feasibility-only copy that explains pins.

DRAM capacity (``capacity.py``): a split whose own resident and activation bytes exceed a chip's DRAM is
forbidden; the family ``dram`` adds, per op ``o``, ``sum_{o', s} W(s) x[o', s] + sum_s A(s) x[o, s] <= C``
(left out when even the largest choice of every op fits).

Pins are literals passed as assumptions. When the model is infeasible under them, a feasibility-only copy
(no objective, as ``solve/explain.py`` does for one chip: assumptions with an objective give unreliable
cores) gives ``sufficient_assumptions_for_infeasibility``, shrunk by deletion to a minimal set of pins.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from loom_explorer.hardware.mesh_schema import MeshSpec
from loom_explorer.hardware.schema import HardwareSpec
from loom_explorer.mesh.capacity import SplitBytes, chip_dram_bytes, fits_alone, held_bytes, split_bytes
from loom_explorer.mesh.graph import Boundary, OpGraph
from loom_explorer.mesh.pins import MeshPin
from loom_explorer.mesh.splits import Split
from loom_explorer.mesh.states import AxisState, MeshError, MeshView, TensorState
from loom_explorer.mesh.transitions import (
    AxisConfig,
    CollectiveConfig,
    TransitionCost,
    collective_configs,
    transition_cost,
)
from loom_explorer.model.collective import CollectiveKind


@dataclass(frozen=True, slots=True)
class Edge:
    """One state change of a tensor in a solution: from its producer's state to one its consumers need."""

    tensor: str
    consumers: tuple[str, ...]
    src: TensorState
    dst: TensorState
    config: CollectiveConfig
    cost: TransitionCost


@dataclass(frozen=True, slots=True)
class JointSolution:
    latency_cycles: int
    view: str
    splits: tuple[tuple[str, Split], ...]  # op -> its split, in graph order
    configs: tuple[tuple[str, CollectiveConfig], ...]
    edges: tuple[Edge, ...]
    split_cycles: tuple[tuple[str, int], ...]  # op -> the cost its split was charged (on-chip + own collectives)
    dram_bytes: int = 0  # per chip at its fullest: every op's resident bytes plus one op's activations (capacity.py)


@dataclass(frozen=True, slots=True)
class JointConflict:
    pins: tuple[str, ...]
    message: str


@dataclass
class JointTables:
    """What does not change between solves: splits, tensors' transition tables and configs."""

    mesh: MeshSpec
    chip: HardwareSpec
    graph: OpGraph
    views: tuple[MeshView, ...]
    splits: dict[str, list[Split]]
    configs: dict[str, tuple[CollectiveConfig, ...]] = field(default_factory=dict)
    memory: dict[tuple[str, str], SplitBytes] = field(default_factory=dict)  # (op, split) -> its DRAM bytes
    capacity_bytes: int = 0
    _table: dict[tuple[str, TensorState, TensorState, CollectiveConfig], TransitionCost | None] = field(
        default_factory=dict
    )
    _collectives: dict[tuple[CollectiveKind, int, AxisConfig, int, int], int] = field(default_factory=dict)
    _changes: dict[tuple[str, str], dict[CollectiveConfig, tuple[int, ...]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.configs = {v.name: collective_configs(v) for v in self.views}
        self.capacity_bytes = chip_dram_bytes(self.chip) - -(-self.graph.reserved_bytes // self.mesh.chips)
        self.memory = {
            (op, s.name): split_bytes(self.graph, self.view(s.view), s, self.chip)
            for op, ss in self.splits.items()
            for s in ss
        }

    def op_bytes(self, keys: Iterable[tuple[str, str]] | None = None) -> dict[str, list[SplitBytes]]:
        """The DRAM bytes (``capacity.py``) of each op's splits, by op: every split's, or only those of the
        ``(op, split)`` pairs in ``keys``. The ``dram`` family, a solution's bytes and a DRAM conflict read
        ``memory`` through it."""
        out: dict[str, list[SplitBytes]] = {}
        for key in self.memory if keys is None else keys:
            out.setdefault(key[0], []).append(self.memory[key])
        return out

    def fits(self, op: str, split: str) -> bool:
        """Whether the split's own bytes fit a chip's DRAM (``capacity.py``)."""
        return fits_alone(self.memory[(op, split)], self.capacity_bytes)

    def view(self, name: str) -> MeshView:
        return next(v for v in self.views if v.name == name)

    def transition(self, tensor: str, src: TensorState, dst: TensorState, c: CollectiveConfig) -> TransitionCost | None:
        key = (tensor, src, dst, c)
        if key not in self._table:
            size = self.graph.op(tensor).output
            view = self.view(src.view)
            self._table[key] = transition_cost(self.mesh, self.chip, view, size, src, dst, c, self._collectives)
        return self._table[key]

    def change_cycles(self, tensor: str, view: str) -> dict[CollectiveConfig, tuple[int, ...]]:
        """Per config of ``view``, the cycles of every state change of ``tensor`` its readers on ``view`` may
        ask (each pair of its producer's output state and a reader's input state that a collective connects),
        in one fixed order: what the dominated configs are judged on (``JointModel._configs``)."""
        key = (tensor, view)
        if key not in self._changes:
            sources = {s.output for s in self.splits[tensor] if s.view == view}
            wanted = {
                b
                for op in self.graph.consumers(tensor)
                for s in self.splits[op.name]
                if s.view == view
                for i, b in enumerate(s.inputs)
                if op.inputs[i] == tensor
            }
            configs = self.configs[view]
            pairs = [
                (a, b)
                for a in sorted(sources, key=lambda x: x.label)
                for b in sorted(wanted - {a}, key=lambda x: x.label)
                if self.transition(tensor, a, b, configs[0]) is not None
            ]
            self._changes[key] = {c: tuple(self._cycles(tensor, a, b, c) for a, b in pairs) for c in configs}
        return self._changes[key]

    def _cycles(self, tensor: str, src: TensorState, dst: TensorState, c: CollectiveConfig) -> int:
        tc = self.transition(tensor, src, dst, c)
        assert tc is not None  # a pair a collective connects under one config is connected under each
        return tc.latency_cycles


def _boundary_ok(graph: OpGraph, s: Split) -> bool:
    if graph.boundary is Boundary.cyclic or s.problem is not None:
        return True
    return all(a is AxisState.replicated for a in s.output.axes)


class JointModel:
    """The model of one solve (module docstring). ``onchip[(op, split)]``: the split's cost, or None when it
    has no schedule; ``fused[(op, split, config label)]`` for the fused splits. ``only``: build one view's
    variables (its splits, states and configs) and none of the others' (views exclude each other)."""

    def __init__(
        self,
        tables: JointTables,
        onchip: dict[tuple[str, str], int | None],
        fused: dict[tuple[str, str, str], int],
        feasibility_only: bool = False,
        only: str | None = None,
        pinned: frozenset[str] = frozenset(),
    ) -> None:
        self.t = tables
        self._onchip, self._fused = onchip, fused
        # every config of a tensor a pin constrains, or of any tensor when only feasibility is asked (pins)
        self._all_configs = pinned if not feasibility_only else frozenset(op.name for op in tables.graph.ops)
        self.kept: dict[tuple[str, str], tuple[CollectiveConfig, ...]] = {}
        self.collectives: list[cp_model.IntVar] = []  # each state change made, each fused gather chosen
        m = self.model = cp_model.CpModel()
        g = tables.graph
        self.views = tuple(v for v in tables.views if only is None or v.name == only)
        self.view = {v.name: m.new_bool_var(f"view[{v.name}]") for v in self.views}
        m.add_exactly_one(self.view.values())
        self.x: dict[tuple[str, str], cp_model.IntVar] = {}
        self.split_of: dict[tuple[str, str], Split] = {}
        cost: list[cp_model.LinearExprT] = []
        for op in g.ops:
            cost += self._split_vars(op.name, onchip, feasibility_only)
        if g.boundary is Boundary.cyclic:
            for s in tables.splits["x"]:
                if s.view in self.view:
                    m.add(self.x[("x", s.name)] == self.x[("out", s.name)])
        self.cfg: dict[tuple[str, CollectiveConfig], cp_model.IntVar] = {}
        for op in g.ops:
            if op.name == "out":
                continue
            for v in self.views:
                lits = [self._cfg(op.name, c) for c in self._configs(op.name, v.name)]
                m.add(sum(lits) == self.view[v.name])
        for op in g.ops:
            if op.name != "out":
                cost += self._tensor(op.name, feasibility_only)
        for (op_name, s_name), lit in self.x.items():
            s = self.split_of[(op_name, s_name)]
            if s.fused_axis is None or onchip.get((op_name, s_name)) is None or feasibility_only:
                continue
            tensor = tables.graph.op(op_name).inputs[0]
            zs = []
            for c in self._configs(tensor, s.view):  # z[c] = x and cfg[c], disaggregated: sum_c z[c] = x
                z = m.new_bool_var(f"z[{op_name},{s_name},{c.label}]")
                m.add_implication(z, self.cfg[(tensor, c)])
                zs.append(z)
                self.collectives.append(z)
                cost.append(fused[(op_name, s_name, c.label)] * z)
            m.add(sum(zs) == lit)
        self._dram()
        self.objective = sum(cost)
        if not feasibility_only:  # the latency first, then the fewest collectives (module docstring)
            m.minimize((len(self.collectives) + 1) * self.objective + sum(self.collectives))

    def _split_vars(
        self, op: str, onchip: dict[tuple[str, str], int | None], feasibility_only: bool
    ) -> list[cp_model.LinearExprT]:
        """``x[op, s]``, exactly one, each implying its view; a split without a schedule (or breaking a
        replicated boundary) is forbidden; the unfused splits' costs."""
        m, g = self.model, self.t.graph
        cost: list[cp_model.LinearExprT] = []
        lits = []
        for s in self.t.splits[op]:
            if s.view not in self.view:
                continue
            lit = m.new_bool_var(f"x[{op},{s.name}]")
            self.x[(op, s.name)], self.split_of[(op, s.name)] = lit, s
            lits.append(lit)
            m.add_implication(lit, self.view[s.view])
            c = onchip.get((op, s.name), 0) if s.problem is not None else 0
            if c is None or not _boundary_ok(g, s) or not self.t.fits(op, s.name):
                m.add(lit == 0)
            elif s.fused_axis is None and not feasibility_only:
                cost.append(c * lit)
        m.add_exactly_one(lits)
        return cost

    def _dram(self) -> None:
        """The ``dram`` family (module docstring): every op's resident bytes plus one op's activations fit."""
        t = self.t
        if held_bytes(t.op_bytes(self.x).values()) <= t.capacity_bytes:  # the splits of this model's view(s)
            return  # no choice can exceed it
        resident = sum(t.memory[k].resident_bytes * lit for k, lit in self.x.items() if t.memory[k].resident_bytes)
        for op in t.splits:
            act = sum(t.memory[k].activation_bytes * lit for k, lit in self.x.items() if k[0] == op)
            self.model.add(resident + act <= t.capacity_bytes)

    def _configs(self, tensor: str, view: str) -> tuple[CollectiveConfig, ...]:
        """The configs of ``tensor`` on ``view`` the model offers: all of them for a tensor in
        ``_all_configs``, else those no other config dominates (module docstring, "Dominated configs")."""
        key = (tensor, view)
        if key not in self.kept:
            configs = self.t.configs[view]
            if tensor in self._all_configs or len(configs) == 1:
                self.kept[key] = configs
            else:
                costs = [self._config_costs(tensor, view, c) for c in configs]
                self.kept[key] = tuple(c for i, c in enumerate(configs) if not _dominated(i, costs))
        return self.kept[key]

    def _config_costs(self, tensor: str, view: str, c: CollectiveConfig) -> tuple[int, ...]:
        """What choosing ``c`` for ``tensor`` costs, term by term: every state change a reader on ``view``
        may ask of it (``JointTables.change_cycles``), and every fused split reading it whose matmul has a
        cost."""
        fused = [
            self._fused[(op.name, s.name, c.label)]
            for op in self.t.graph.consumers(tensor)
            if op.inputs[0] == tensor
            for s in self.t.splits[op.name]
            if s.view == view and s.fused_axis is not None and self._onchip.get((op.name, s.name)) is not None
        ]
        return (*self.t.change_cycles(tensor, view)[c], *fused)

    def _cfg(self, tensor: str, c: CollectiveConfig) -> cp_model.IntVar:
        key = (tensor, c)
        if key not in self.cfg:
            self.cfg[key] = self.model.new_bool_var(f"cfg[{tensor},{c.view}:{c.label}]")
        return self.cfg[key]

    def _tensor(self, tensor: str, feasibility_only: bool) -> list[cp_model.LinearExprT]:
        t = self.t
        cost: list[cp_model.LinearExprT] = []
        for v in self.views:
            src = self._states(tensor, v.name, None)
            made: dict[tuple[TensorState, TensorState], cp_model.IntVar] = {}
            for op in t.graph.consumers(tensor):
                for i, name in enumerate(op.inputs):
                    if name == tensor:
                        self._edge(tensor, v.name, src, self._states(op.name, v.name, i), f"{op.name}.{i}", made)
            for (a, b), r in made.items():
                cost += self._made_cost(tensor, v.name, a, b, r, feasibility_only)
        return cost

    def _states(self, op: str, view: str, input_index: int | None) -> dict[TensorState, list[cp_model.IntVar]]:
        """The split literals of ``op`` on ``view`` by the state they write (or read at ``input_index``)."""
        out: dict[TensorState, list[cp_model.IntVar]] = {}
        for s in self.t.splits[op]:
            if s.view == view:
                state = s.output if input_index is None else s.inputs[input_index]
                out.setdefault(state, []).append(self.x[(op, s.name)])
        return out

    def _edge(
        self,
        tensor: str,
        view: str,
        src: dict[TensorState, list[cp_model.IntVar]],
        dst: dict[TensorState, list[cp_model.IntVar]],
        where: str,
        made: dict[tuple[TensorState, TensorState], cp_model.IntVar],
    ) -> None:
        """q[a, b] = src[a] and dst[b]: the pair's marginals (rows sum to src, columns to dst); a state
        change is ``made`` once, shared by every reader of the state."""
        m, first = self.model, self.t.configs[view][0]
        q = {
            (a, b): m.new_bool_var(f"q[{tensor}>{where},{a.label}->{b.label}]")
            for a in src
            for b in dst
            if a == b or self.t.transition(tensor, a, b, first) is not None  # else no collective makes b from a
        }
        for a, lits in src.items():
            m.add(sum(q[(a, b)] for b in dst if (a, b) in q) == sum(lits))
        for b, lits in dst.items():
            m.add(sum(q[(a, b)] for a in src if (a, b) in q) == sum(lits))
        for (a, b), lit in q.items():
            if a != b:
                if (a, b) not in made:
                    made[(a, b)] = m.new_bool_var(f"made[{tensor},{a.label}->{b.label}]")
                    self.collectives.append(made[(a, b)])
                m.add_implication(lit, made[(a, b)])

    def _made_cost(
        self, tensor: str, view: str, a: TensorState, b: TensorState, r: cp_model.IntVar, feasibility_only: bool
    ) -> list[cp_model.LinearExprT]:
        """The change ``a -> b`` under the tensor's config, disaggregated: ``sum_c made[c] = made``."""
        cost: list[cp_model.LinearExprT] = []
        per_config = []
        for c in self._configs(tensor, view):
            rc = self.model.new_bool_var(f"made[{tensor},{a.label}->{b.label},{c.label}]")
            self.model.add_implication(rc, self.cfg[(tensor, c)])
            per_config.append(rc)
            tc = self.t.transition(tensor, a, b, c)
            assert tc is not None
            if tc.latency_cycles and not feasibility_only:
                cost.append(tc.latency_cycles * rc)
        self.model.add(sum(per_config) == r)
        return cost

    def pin_literal(self, pin: MeshPin) -> cp_model.IntVar:
        """A literal that, assumed true, enforces ``pin`` (false for a split or view the model has not built)."""
        m = self.model
        if pin.field in ("split", "view"):
            lit = self.x.get((pin.target, pin.value)) if pin.field == "split" else self.view.get(pin.value)
            if lit is None:  # another view's: this model cannot hold it
                lit = m.new_bool_var(f"pin[{pin.text}]")
                m.add(lit == 0)
            return lit
        lit = m.new_bool_var(f"pin[{pin.text}]")
        for (tensor, c), var in self.cfg.items():
            if tensor != pin.target:
                continue
            keeps = all(
                (a.links == int(pin.value)) if pin.field == "num_links" else (a.topology.value == pin.value)
                for a in c.axes
            )
            if not keeps:
                m.add_implication(lit, var.Not())
        return lit


def _dominated(i: int, costs: Sequence[tuple[int, ...]]) -> bool:
    """Whether another config costs no more than config ``i`` in every term (and less in one, or equal in
    all and listed earlier: of equal configs the first is kept)."""
    mine = costs[i]
    return any(
        j != i and all(x <= y for x, y in zip(other, mine, strict=True)) and (other != mine or j < i)
        for j, other in enumerate(costs)
    )


@dataclass(frozen=True, slots=True)
class NoneFaster:
    """No assignment on the view is cheaper than ``upper_bound_cycles`` (proven: CP-SAT found none)."""

    view: str
    upper_bound_cycles: int


# CP-SAT's settings for a view's joint model, once dominated configs are left out (``python
# benchmarks/joint_settings.py``, docs/performance.md): one worker without probing solves the 30 rounds of
# five layer plans on four meshes in 7.8 s, where one worker with probing takes 11.8 s and 8 workers 21.2 s
# (every config kept, 8 workers: 363.9 s), every round's answer the same. One worker is also deterministic.
JOINT_WORKERS = 1
JOINT_PROBING_LEVEL = 0


def round_model(
    tables: JointTables,
    onchip: dict[tuple[str, str], int | None],
    fused: dict[tuple[str, str, str], int],
    pins: Sequence[MeshPin],
    view: str,
    below_cycles: int | None = None,
    every_config: bool = False,
) -> JointModel:
    """The joint model of one round on ``view`` under ``pins`` (assumptions), asked for an assignment faster
    than ``below_cycles`` when given. A tensor a ``num_links`` or ``topology`` pin names keeps every config;
    ``every_config``: every tensor does (``benchmarks/joint_settings.py`` measures what leaving them out saves)."""
    named = frozenset(p.target for p in pins if p.field in ("num_links", "topology"))
    every = frozenset(op.name for op in tables.graph.ops) if every_config else frozenset()
    jm = JointModel(tables, onchip, fused, only=view, pinned=named | every)
    jm.model.add(jm.view[view] == 1)
    if below_cycles is not None:
        jm.model.add(jm.objective <= below_cycles - 1)
    jm.model.add_assumptions([jm.pin_literal(p) for p in pins])
    return jm


def solve_joint(
    tables: JointTables,
    onchip: dict[tuple[str, str], int | None],
    fused: dict[tuple[str, str, str], int],
    pins: Iterable[MeshPin],
    view: str,
    below_cycles: int | None = None,
    time_limit_seconds: float = 30.0,
) -> JointSolution | NoneFaster | None:
    """The optimum of the joint model on ``view`` under ``pins``: a solution, :class:`NoneFaster` when
    ``below_cycles`` is given and no assignment beats it, None when the pins rule the view out.

    One model per view: views exclude each other, and apart each model (its dominated configs left out) is
    small enough for one CP-SAT worker (``JOINT_WORKERS``) with its stronger linear relaxation
    (``linearization_level=2``) to prove in well under a second, a 2 x 4 or 8 x 4 view's 16 states per tensor
    included."""
    jm = round_model(tables, onchip, fused, list(pins), view, below_cycles)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit_seconds
    solver.parameters.num_workers = JOINT_WORKERS
    solver.parameters.random_seed = 0
    solver.parameters.linearization_level = 2
    solver.parameters.cp_model_probing_level = JOINT_PROBING_LEVEL
    status = solver.solve(jm.model)
    if status == cp_model.OPTIMAL:
        return _solution(jm, solver, onchip, fused)
    if status == cp_model.INFEASIBLE:
        return None if below_cycles is None else NoneFaster(view, below_cycles)
    raise MeshError(
        f"the joint model of view {view} was not solved to optimality within {time_limit_seconds:g} s (CP-SAT "
        f"ended {solver.status_name(status)}); allow more time (--time-limit)"
    )


def explain(
    tables: JointTables, onchip: dict[tuple[str, str], int | None], pins: list[MeshPin], time_limit_seconds: float
) -> JointConflict:
    """A minimal set of pins that cannot hold together (module docstring)."""

    def infeasible(subset: list[MeshPin]) -> tuple[bool, list[MeshPin]]:
        jm = JointModel(tables, onchip, {}, feasibility_only=True)
        made = [jm.pin_literal(p) for p in subset]
        lits = {lit.index: p for lit, p in zip(made, subset, strict=True)}
        jm.model.add_assumptions(made)
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = time_limit_seconds
        solver.parameters.num_workers = 1
        status = solver.solve(jm.model)
        if status != cp_model.INFEASIBLE:
            return False, []
        core = solver.sufficient_assumptions_for_infeasibility()
        found = [lits[i] for i in core if i in lits]
        return True, found or list(subset)

    bad, core = infeasible(pins)
    if not bad:
        return JointConflict((), "no split of every op has a schedule on a chip (every per-chip problem refused)")
    for p in list(core):  # shrink by deletion: keep only the pins the conflict needs
        rest = [q for q in core if q is not p]
        if infeasible(rest)[0]:
            core = rest
    if not core:
        return JointConflict((), f"no choice of splits is possible even without pins{_dram_reason(tables)}")
    words = "; ".join(_describe(tables, p) for p in core)
    head = (
        f"pin {core[0].text} cannot hold"
        if len(core) == 1
        else f"pins {', '.join(p.text for p in core)} cannot hold together"
    )
    return JointConflict(tuple(p.text for p in core), f"{head}: {words}")


def _dram_reason(tables: JointTables) -> str:
    """Why, when it is DRAM: the least any assignment holds per chip (each op's lightest split) against ``C``."""
    least = sum(min(b.resident_bytes for b in bs) for bs in tables.op_bytes().values())
    if least <= tables.capacity_bytes:
        return ""
    g = tables.graph
    return (
        f": the weights (and caches) of {g.layers} layer(s) at {g.precision} precision, each op split the most, need "
        f"{least / 1e9:.2f} GB per chip; a chip holds {tables.capacity_bytes / 1e9:.2f} GB (its DRAM less its share "
        "of the embedding and LM head): a lighter --precision or fewer --layers"
    )


def _describe(tables: JointTables, pin: MeshPin) -> str:
    if pin.field == "split":
        s = next(x for x in tables.splits[pin.target] if x.name == pin.value)
        ins = ", ".join(i.label for i in s.inputs) or "-"
        b, cap = tables.memory[(pin.target, s.name)], tables.capacity_bytes
        dram = (
            f"; infeasible: DRAM (it holds {b.total_bytes:,} B per chip, the chip has {cap:,} B)"
            if b.total_bytes > cap
            else f"; it holds {b.resident_bytes:,} B of weights per chip"
            if b.resident_bytes
            else ""
        )
        return f"{pin.text} runs on view {s.view}, reads {ins}, writes {s.output.label}{dram}"
    if pin.field == "view":
        return f"{pin.text}: every op splits over view {pin.value}"
    have = {
        v.name: sorted({(a.links if pin.field == "num_links" else a.topology.value) for c in cs for a in c.axes})
        for v, cs in ((tables.view(n), cs) for n, cs in tables.configs.items())
    }
    offered = "; ".join(f"view {n}: {', '.join(map(str, vals))}" for n, vals in have.items())
    return f"{pin.text}: every axis of the view must offer {pin.field} {pin.value} ({offered})"


def _solution(
    jm: JointModel,
    solver: cp_model.CpSolver,
    onchip: dict[tuple[str, str], int | None],
    fused: dict[tuple[str, str, str], int],
) -> JointSolution:
    t = jm.t
    view = next(n for n, v in jm.view.items() if solver.boolean_value(v))
    chosen = {op: jm.split_of[(op, s)] for (op, s), v in jm.x.items() if solver.boolean_value(v)}
    configs = {tensor: c for (tensor, c), v in jm.cfg.items() if solver.boolean_value(v)}
    edges: list[Edge] = []
    for op in t.graph.ops:
        if op.name == "out":
            continue
        src = chosen[op.name].output
        wanted: dict[TensorState, list[str]] = {}
        for reader in t.graph.consumers(op.name):
            for i, name in enumerate(reader.inputs):
                if name == op.name:
                    wanted.setdefault(chosen[reader.name].inputs[i], []).append(reader.name)
        for dst, readers in wanted.items():
            if dst == src:
                continue
            tc = t.transition(op.name, src, dst, configs[op.name])
            assert tc is not None
            edges.append(Edge(op.name, tuple(readers), src, dst, configs[op.name], tc))
    split_cycles = []
    for op in t.graph.ops:
        s = chosen[op.name]
        if s.problem is None:
            continue
        if s.fused_axis is not None:
            c = configs[op.inputs[0]]
            split_cycles.append((op.name, fused[(op.name, s.name, c.label)]))
        else:
            split_cycles.append((op.name, onchip[(op.name, s.name)] or 0))
    return JointSolution(
        int(solver.value(jm.objective)),
        view,
        tuple((op.name, chosen[op.name]) for op in t.graph.ops),
        tuple(sorted(configs.items(), key=lambda kv: kv[0])),
        tuple(edges),
        tuple(split_cycles),
        held_bytes(t.op_bytes((op, s.name) for op, s in chosen.items()).values()),
    )
