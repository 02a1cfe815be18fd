"""Enumerate the mapping candidates of a program on a grid, from its structure and access maps only.

Nothing here knows a kernel by name. The program's structure (``program/structure.py``) says which
dimensions may go on a grid axis (``spread_dims``; ``split_dims`` for reductions whose partials can be
gathered), which inputs stream (``streamed``) and whether tasks may be flattened over the cores; the
family's candidate hooks (``mapping/variants.py``) say what is its own. Then:

* layouts: every ordered pair of distinct dimensions (rows, columns) with at most one split reduction,
  every parallel dimension alone on a 1-D layout (and a split reduction, where the structure gathers
  over a 1-D layout), and, when the structure allows it and two or more
  dimensions are spread, all of them flattened on a 1-D layout; dimensions of extent 1 are not spread;
* for each layout and streamed input (inputs with the same access map and placement travel together):
  ``dram`` always (or ``local`` for an L1-resident tensor no other core needs), and a multicast along every
  grid axis whose dimension does not index the tensor (it is shared there) or indexes it through a grouped
  index with groups of two or more, plus the 2-D multicast when it is shared along both; the family may
  forbid a multicast along a dimension (``CandidateVariants.multicast_along``);
* each layout's candidates are the family's variants of it (``CandidateVariants.layout_tags``: the tag sets,
  one candidate per set; one untagged candidate without);
* then the candidates of each family that is a variant of the program's family (``CandidateVariants.candidates``).

Tensors sharded in L1 keep only the layouts and options their sharding fits (``mapping/sharding.py``).
"""

from __future__ import annotations

from itertools import permutations, product

from loom_explorer.mapping.candidate import Axis, Candidate, Comm
from loom_explorer.mapping.sharding import shard_fits
from loom_explorer.mapping.variants import CandidateVariants, Layout, MulticastAlong, candidate_variants
from loom_explorer.problem import Problem
from loom_explorer.program.structure import Structure, analyse_program, program_family, variant_families


def enumerate_candidates(problem: Problem) -> list[Candidate]:
    program = problem.program
    st = analyse_program(program)
    spread = [d for d in st.spread_dims if problem.tiles(d) > 1]
    split = [d for d in st.split_dims if problem.tiles(d) > 1]
    layouts: list[Layout] = []
    for dy, dx in permutations(spread + split, 2):
        if dy in split and dx in split:
            continue
        layouts.append((("y", dy), ("x", dx)))
    layouts += [(("xy", d),) for d in spread]
    layouts += [(("xy", d),) for d in split if st.gather_1d]
    if st.flatten and len(spread) > 1:
        layouts.append((("xy", "*".join(spread)),))
    if not layouts:  # nothing worth spreading (every dimension fits one tile): one core does it all
        layouts.append(())
    family = program_family(program).name
    hooks = _hooks(family) or CandidateVariants(family)
    out: list[Candidate] = []
    for axes in layouts:
        gather = next((a for a, d in axes if d in split), None)
        if not shard_fits(problem, axes, st.output, None):
            continue
        tag_sets = hooks.layout_tags(problem, st, axes) if hooks.layout_tags is not None else ((),)
        groups = _travel_groups(problem, st.streamed)
        options = [_comm_options(problem, st, group[0], axes, hooks.multicast_along) for group in groups]
        for combo, tags in product(product(*options), tag_sets):
            comm = {t: c for group, c in zip(groups, combo, strict=True) for t in group}
            out.append(
                Candidate(axes=axes, comms=tuple((t, comm[t]) for t in st.streamed), gather_axis=gather, tags=tags)
            )
    for variant in variant_families(family):
        own = _hooks(variant.name)
        out += own.candidates(problem, st) if own is not None and own.candidates is not None else []
    return out


def _hooks(family: str) -> CandidateVariants | None:
    """``family``'s candidate hooks, None when it registers none (or no family registers any)."""
    return candidate_variants().get(family)


def _travel_groups(problem: Problem, streamed: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Streamed inputs with the same access map and placement (e.g. keys and values) travel the same way."""
    groups: dict[tuple[object, ...], list[str]] = {}
    for t in streamed:
        groups.setdefault((problem.program.tensor(t).dims, problem.placement(t)), []).append(t)
    return [tuple(g) for g in groups.values()]


def shared_axes(
    problem: Problem, st: Structure, tensor: str, axes: Layout, multicast_along: MulticastAlong | None = None
) -> list[Axis]:
    """Grid axes along which ``tensor`` is shared (fully, or in groups of two or more cores' worth) and the
    family lets it be multicast (``multicast_along``, None: wherever it is shared)."""
    program = problem.program
    out: list[Axis] = []
    for axis, dims in axes:
        ok = True
        for d in dims.split("*"):
            grouped = program.grouped_by(tensor, d)
            if grouped is not None:
                # groups of consecutive cores along one row or column (not along a 1-D layout's order)
                ok = ok and problem.elements(d) // problem.elements(grouped) > 1 and axis != "xy"
            else:
                ok = ok and program.shared_along(tensor, d)
            if multicast_along is not None and not multicast_along(problem, st, tensor, d):
                ok = False
        if ok:
            out.append(axis)
    return out


def _comm_options(
    problem: Problem, st: Structure, tensor: str, axes: Layout, multicast_along: MulticastAlong | None
) -> list[Comm]:
    shared = shared_axes(problem, st, tensor, axes, multicast_along)
    mcasts: list[Comm] = []
    if "xy" in shared:
        mcasts.append(Comm.mcast_xy)
    if "x" in shared:
        mcasts.append(Comm.mcast_x)
    if "y" in shared:
        mcasts.append(Comm.mcast_y)
    if "x" in shared and "y" in shared:
        mcasts.append(Comm.mcast_xy)
    if problem.placement(tensor).in_l1:
        # resident shards: no DRAM read; shared data still has to travel from the core that holds it
        options = [Comm.local] if not shared else [m for m in mcasts if _covers(m, shared)]
        return [c for c in options if shard_fits(problem, axes, tensor, c)]
    return [Comm.dram, *mcasts]


def _covers(comm: Comm, shared: list[Axis]) -> bool:
    return comm is Comm.mcast_xy or [comm.axis] == shared
