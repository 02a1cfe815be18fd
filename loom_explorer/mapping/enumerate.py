"""Enumerate the mapping candidates of a program on a grid, from its structure and access maps only.

Nothing here knows a kernel by name. The program's structure (``program/structure.py``) says which
dimensions may go on a grid axis (``spread_dims``; ``split_dims`` for reductions whose partials can be
gathered), which inputs stream (``streamed``), whether tasks may be flattened over the cores, and where a
causal diagonal lies. Then:

* layouts: every ordered pair of distinct dimensions (rows, columns) with at most one split reduction,
  every parallel dimension alone on a 1-D layout (and a split reduction, where the structure gathers
  over a 1-D layout), and, when the structure allows it and two or more
  dimensions are spread, all of them flattened on a 1-D layout; dimensions of extent 1 are not spread;
* for each layout and streamed input (inputs with the same access map, like attention's ``k`` and ``v``,
  travel together): ``dram`` always (or ``local`` for an L1-resident tensor no other
  core needs), and a multicast along every grid axis whose dimension does not index the tensor (it is
  shared there) or indexes it through a grouped index with groups of two or more (grouped-query
  attention), plus the 2-D multicast when it is shared along both. Under a causal mask, cores along
  the query dimension need different numbers of key/value blocks, so tensors indexed by the key/value
  dimension are not multicast along it;
* causal load balancing (a low and a high query chunk per core) as a second variant of every layout
  that spreads the query dimension; a flattened causal layout is always balanced (as TTNN's is);
* flash-decoding (``kv_split``) where the structure has key/value groups (``kv_groups``), the problem is
  not causal and one group's packed query rows fit ``MAX_PACKED_TILES`` tiles (decode, small ``Sq``): the
  groups (``B*Hkv``) on a 1-D layout, every input read from DRAM.

Tensors sharded in L1 keep only the layouts and options their sharding fits (``mapping/sharding.py``).
"""

from __future__ import annotations

from itertools import permutations, product

from loom_explorer.mapping.candidate import Axis, Candidate, Comm
from loom_explorer.mapping.sharding import shard_fits
from loom_explorer.problem import KernelTarget, Problem
from loom_explorer.program.structure import Structure, analyse_program

Layout = tuple[tuple[Axis, str], ...]
MAX_PACKED_TILES = 8  # flash-decoding candidates for a group's query rows up to 8 tiles (256 rows)


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
    causal = st.diagonal is not None and problem.has_option("causal")
    out: list[Candidate] = []
    for axes in layouts:
        gather = next((a for a, d in axes if d in split), None)
        if not shard_fits(problem, axes, st.output, None):
            continue
        carries_q = causal and st.diagonal is not None and any(st.diagonal[0] in d.split("*") for _, d in axes)
        flattened = any("*" in d for _, d in axes)
        balance = [True] if carries_q and flattened else [False, True] if carries_q else [False]
        groups = _travel_groups(problem, st.streamed)
        options = [_comm_options(problem, st, group[0], axes, causal) for group in groups]
        for combo, balanced in product(product(*options), balance):
            comm = {t: c for group, c in zip(groups, combo, strict=True) for t in group}
            out.append(Candidate(axes=axes, comms=tuple((t, comm[t]) for t in st.streamed), gather_axis=gather,
                                 balanced=balanced))
    return out + _kv_split_candidates(problem, st, causal)


def _kv_split_candidates(problem: Problem, st: Structure, causal: bool) -> list[Candidate]:
    """The flash-decoding candidate (module docstring), if the problem has one."""
    groups = st.kv_groups
    if groups is None or causal or any(problem.placement(t).in_l1 for t in (*st.streamed, st.output)):
        return []
    query, key = (problem.program.tensor(t) for t in st.streamed[:2])
    length = [d for d in query.dims if problem.program.dim(d).spread and d not in key.dims
              and problem.program.grouped_by(key.name, d) is None]  # the query length (Sq)
    if problem.target is KernelTarget.ttnn and any(problem.elements(d) != 1 for d in length):
        return []  # ttnn's sdpa_decode takes one query token
    if packed_rows(problem, query.name, key.name, groups[-1:]) > 32 * MAX_PACKED_TILES:
        return []
    spread = [g for g in groups if problem.elements(g) > 1] or list(groups[-1:])
    return [Candidate(axes=(("xy", "*".join(spread)),), comms=tuple((t, Comm.dram) for t in st.streamed),
                      kv_split=True)]


def packed_rows(problem: Problem, query: str, key: str, heads: tuple[str, ...]) -> int:
    """Rows of ``query`` packed per batch item (``H*Sq``) or, given the key/value heads dim, per group
    (``H*Sq / Hkv`` = query heads per key/value head times the query length): the extents of its spread dims
    that do not index ``key`` directly (the batch does), over the extents of ``heads``."""
    program = problem.program
    rows = 1
    for d in program.tensor(query).dims:
        rows *= problem.elements(d) if program.dim(d).spread and d not in program.tensor(key).dims else 1
    for g in heads:
        rows //= problem.elements(g)
    return rows


def _travel_groups(problem: Problem, streamed: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Streamed inputs with the same access map and placement (attention's k and v) travel the same way."""
    groups: dict[tuple[object, ...], list[str]] = {}
    for t in streamed:
        groups.setdefault((problem.program.tensor(t).dims, problem.placement(t)), []).append(t)
    return [tuple(g) for g in groups.values()]


def shared_axes(problem: Problem, st: Structure, tensor: str, axes: Layout, causal: bool) -> list[Axis]:
    """Grid axes along which ``tensor`` is shared (fully, or in groups of two or more cores' worth)."""
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
            if causal and st.diagonal is not None and d == st.diagonal[0] \
                    and st.diagonal[1] in program.tensor(tensor).dims:
                ok = False  # cores along the query dim need different key/value blocks
        if ok:
            out.append(axis)
    return out


def _comm_options(problem: Problem, st: Structure, tensor: str, axes: Layout, causal: bool) -> list[Comm]:
    shared = shared_axes(problem, st, tensor, axes, causal)
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
