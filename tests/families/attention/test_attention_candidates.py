"""Attention candidates follow from the access maps of a kernel the enumerator has never seen.

The kernel here is a cross-attention written for this file (not in ``kernels/``): batch ``N``, heads
``G`` with grouped key/value heads ``Gkv``, queries ``T``, memory positions ``S`` (reduced) and head dim
``E``, with different tensor names (``x``, ``mem_k``, ``mem_v``, scores ``att``, output ``y``) and its
dimensions declared in an unusual order. The expectations are written from the DSL's definitions:

* a tensor is shared along a dimension it does not mention; along a dimension it mentions through a
  grouped index (``mem_k[Gkv]`` along ``G``) it is shared by groups of ``E_G / E_Gkv`` consecutive
  heads, which a row or column multicast can reach (never a 1-D layout's row-major order), and only
  when a group holds two or more heads;
* under a causal mask, cores along the query dimension need different key/value blocks, so a tensor
  indexed by the key/value dimension is not multicast along the query dimension;
* layouts: every ordered pair of distinct spread dims, every spread dim alone on 1-D, and all spread
  dims flattened on 1-D when there are two or more (dims of extent one are not spread); under causal,
  layouts that carry the query dim come balanced and unbalanced, a flattened one only balanced.

Besides the rule-based reference, a few cases are spelled out by hand (exact candidate names).
"""

from __future__ import annotations

from collections import Counter
from itertools import permutations

import pytest

from loom_explorer.families.attention.program import analyse_attention
from loom_explorer.mapping import Comm, enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.problem import make_problem
from loom_explorer.program import Dim, Eltwise, Matmul, Tensor, TileProgram, load_program

QUERY, KEYS, VALUES = "x", "mem_k", "mem_v"


def cross_attention() -> TileProgram:
    """y[N, G, T, E] = softmax(x @ mem_k^T) @ mem_v, mem_k/mem_v indexed by grouped heads Gkv."""
    return TileProgram(
        name="xattn_under_test",
        description="cross-attention of queries x over a memory, grouped key/value heads",
        dims=(
            Dim("T", "parallel", description="query positions"),
            Dim("G", "parallel", tile=1, description="query heads"),
            Dim("S", "reduction", description="memory positions"),
            Dim("N", "parallel", tile=1, description="batch"),
            Dim("E", "parallel", spread=False, description="head dim"),
            Dim("Gkv", "parallel", tile=1, group_of="G", description="memory heads"),
        ),
        tensors=(
            Tensor("x", ("N", "G", "T", "E"), "input"),
            Tensor("mem_k", ("N", "Gkv", "S", "E"), "input"),
            Tensor("mem_v", ("N", "Gkv", "S", "E"), "input"),
            Tensor("att", ("N", "G", "T", "S"), "intermediate"),
            Tensor("mx", ("N", "G", "T"), "intermediate"),
            Tensor("den", ("N", "G", "T"), "intermediate"),
            Tensor("y", ("N", "G", "T", "E"), "output"),
        ),
        ops=(
            Matmul("x", "mem_k", "att"),
            Eltwise("mask", "att", unit="fpu", when="diagonal"),
            Eltwise("exp", "att", unit="sfpu", when="step"),
            Eltwise("exp", "mx", unit="sfpu", when="step"),
            Eltwise("mul", "y", unit="fpu", when="step"),
            Matmul("att", "mem_v", "y"),
            Eltwise("recip", "den", unit="sfpu", when="final"),
            Eltwise("mul", "y", unit="fpu", when="final"),
        ),
        options=("causal",),
    )


XATTN = cross_attention()


def problem(shape: str, causal: bool = False):
    return make_problem(XATTN, shape, options={"causal"} if causal else set())


# ------------------------------------------------------------------------------ independent reference


def spread_dims(prob) -> list[str]:
    """Dims of the output a grid axis may carry: parallel, spread, more than one tile/item; batch dims
    in program order, then the query dim (the one the key/value tensors do not mention)."""
    program = prob.program
    out_dims = program.tensor("y").dims
    kv_dims = {program.dim(d).group_of or d for d in program.tensor(KEYS).dims}
    query = [d for d in out_dims if d not in kv_dims]
    assert query == ["T"]
    batch = [
        d.name for d in program.dims if d.name in out_dims and d.name not in query and d.spread and d.kind == "parallel"
    ]
    return [d for d in (*batch, *query) if prob.tiles(d) > 1]


def shared_on_axis(prob, tensor: str, axis: str, dims: list[str], causal: bool) -> bool:
    """Whether every core along ``axis`` needs the same tiles of ``tensor`` (from its access map)."""
    program = prob.program
    index = program.tensor(tensor).dims
    for d in dims:
        if d in index:
            return False
        via = [g for g in index if program.dim(g).group_of == d]
        if via:
            heads_per_group = prob.elements(d) // prob.elements(via[0])
            if axis == "xy" or heads_per_group < 2:
                return False
        if causal and d == "T" and "S" in index:  # cores along the queries need different k/v blocks
            return False
    return True


def expected_comms(prob, tensor: str, axes, causal: bool) -> set[Comm]:
    shared = {axis for axis, d in axes if shared_on_axis(prob, tensor, axis, d.split("*"), causal)}
    out = {Comm.dram}
    out |= {{"x": Comm.mcast_x, "y": Comm.mcast_y, "xy": Comm.mcast_xy}[a] for a in shared}
    if {"x", "y"} <= shared:
        out.add(Comm.mcast_xy)
    return out


def expected_layouts(prob) -> set[tuple]:
    spread = spread_dims(prob)
    layouts: set[tuple] = {(("y", a), ("x", b)) for a, b in permutations(spread, 2)}
    layouts |= {(("xy", d),) for d in spread}
    if len(spread) >= 2:
        layouts.add((("xy", "*".join(spread)),))
    return layouts


def expected_balance(axes, causal: bool) -> set[bool]:
    carries_q = any("T" in d.split("*") for _, d in axes)
    if not causal or not carries_q:
        return {False}
    return {True} if any("*" in d for _, d in axes) else {False, True}


def check_against_access_maps(prob, causal: bool):
    cands = enumerate_candidates(prob)
    names = [c.name for c in cands]
    assert len(names) == len(set(names)), "duplicate candidates"
    assert {c.axes for c in cands} == expected_layouts(prob)
    by_layout: dict = {}
    for c in cands:
        # the query is indexed by every spread dim: it is never multicast
        assert c.comm(QUERY) is Comm.dram, c.name
        # same access map: keys and values travel together
        assert c.comm(KEYS) is c.comm(VALUES), c.name
        assert [t for t, _ in c.comms] == [QUERY, KEYS, VALUES]
        assert c.gather_axis is None, c.name  # the key/value reduction is never split over cores
        by_layout.setdefault(c.axes, []).append(c)
    for axes, group in by_layout.items():
        want = expected_comms(prob, KEYS, axes, causal)
        balance = expected_balance(axes, causal)
        got = Counter((c.comm(KEYS), c.has_tag("balanced")) for c in group)
        assert set(got) == {(m, b) for m in want for b in balance}, (axes, sorted(got, key=str))
        assert all(n == 1 for n in got.values()), (axes, got)
    return cands


# ------------------------------------------------------------------------------------------------ tests

SHAPES = [
    "N=2,G=4,Gkv=2,T=128,S=96,E=64",  # grouped heads: pairs of heads share a memory head
    "N=2,G=4,T=128,S=96,E=64",  # Gkv defaults to G: no sharing across heads
    "N=3,G=4,Gkv=1,T=96,S=64,E=32",  # one memory head for every query head
    "N=1,G=6,Gkv=3,T=64,S=160,E=64",  # N=1 is not spread
    "N=2,G=1,T=256,S=32,E=128",  # G=1 is not spread
    "N=1,G=1,T=96,S=96,E=64",  # only T is spread: no flattened layout
    "N=2,G=2,Gkv=1,T=32,S=32,E=32",  # one query tile: T is not spread
]


@pytest.mark.parametrize("causal", [False, True], ids=["plain", "causal"])
@pytest.mark.parametrize("shape", SHAPES)
def test_candidates_follow_the_access_maps(shape, causal):
    if causal:  # a causal mask needs as many memory positions as queries
        parts = dict(p.split("=") for p in shape.split(","))
        parts["S"] = parts["T"]
        shape = ",".join(f"{k}={v}" for k, v in parts.items())
    prob = problem(shape, causal)
    cands = check_against_access_maps(prob, causal)
    assert cands


def test_structure_of_the_kernel_is_recognised_by_roles_not_names():
    st = analyse_attention(XATTN)
    assert (st.q_dim, st.kv_dim, st.head_dim) == ("T", "S", "E")
    assert st.batch_dims == ("G", "N")  # program order
    assert st.streamed == (QUERY, KEYS, VALUES)
    assert (st.scores, st.output) == ("att", "y")


def test_grouped_heads_spelled_out_non_causal():
    """N=2, G=4 heads over Gkv=2 memory heads, T=4 tiles: every layout and option by hand."""
    got = {c.name for c in enumerate_candidates(problem("N=2,G=4,Gkv=2,T=128,S=96,E=64"))}
    kv = lambda c: f"x=dram,mem_k={c},mem_v={c}"  # noqa: E731
    want = {
        f"G@y,N@x|{kv('dram')}",
        f"G@y,N@x|{kv('mcast_y')}",  # G grouped (2 heads)
        f"G@y,T@x|{kv('dram')}",
        f"G@y,T@x|{kv('mcast_y')}",
        f"G@y,T@x|{kv('mcast_x')}",
        f"G@y,T@x|{kv('mcast_xy')}",
        f"N@y,G@x|{kv('dram')}",
        f"N@y,G@x|{kv('mcast_x')}",
        f"N@y,T@x|{kv('dram')}",
        f"N@y,T@x|{kv('mcast_x')}",  # shared along T
        f"T@y,G@x|{kv('dram')}",
        f"T@y,G@x|{kv('mcast_y')}",
        f"T@y,G@x|{kv('mcast_x')}",
        f"T@y,G@x|{kv('mcast_xy')}",
        f"T@y,N@x|{kv('dram')}",
        f"T@y,N@x|{kv('mcast_y')}",
        f"G@xy|{kv('dram')}",  # no grouped 1-D mcast
        f"N@xy|{kv('dram')}",
        f"T@xy|{kv('dram')}",
        f"T@xy|{kv('mcast_xy')}",
        f"G*N*T@xy|{kv('dram')}",  # N differs over it
    }
    assert got == want


def test_grouped_heads_spelled_out_causal():
    """The same problem under a causal mask (S = T): no k/v multicast along T; balanced variants."""
    got = {c.name for c in enumerate_candidates(problem("N=2,G=4,Gkv=2,T=128,S=128,E=64", causal=True))}
    kv = lambda c: f"x=dram,mem_k={c},mem_v={c}"  # noqa: E731
    want = {
        f"G@y,N@x|{kv('dram')}",
        f"G@y,N@x|{kv('mcast_y')}",
        f"N@y,G@x|{kv('dram')}",
        f"N@y,G@x|{kv('mcast_x')}",
        f"G@xy|{kv('dram')}",
        f"N@xy|{kv('dram')}",
    }
    for suffix in ("", "|balanced"):
        want |= {
            f"G@y,T@x|{kv('dram')}{suffix}",
            f"G@y,T@x|{kv('mcast_y')}{suffix}",
            f"N@y,T@x|{kv('dram')}{suffix}",
            f"T@y,G@x|{kv('dram')}{suffix}",
            f"T@y,G@x|{kv('mcast_x')}{suffix}",
            f"T@y,N@x|{kv('dram')}{suffix}",
            f"T@xy|{kv('dram')}{suffix}",
        }
    want.add(f"G*N*T@xy|{kv('dram')}|balanced")
    assert got == want


def test_ungrouped_heads_are_never_multicast_along_the_heads_axis():
    """Gkv = G (default or explicit): each memory head serves one query head, no sharing along G."""
    for shape in ("N=2,G=4,T=128,S=96,E=64", "N=2,G=4,Gkv=4,T=128,S=96,E=64"):
        cands = enumerate_candidates(problem(shape))
        for c in cands:
            axis = c.axis_of("G")
            if axis is None:
                continue
            comm = c.comm(KEYS)
            # neither along G's axis nor 2-D (which would need G shared too)
            assert comm.axis != axis and comm is not Comm.mcast_xy, c.name
        # the only multicasts are along T (the key/value tensors do not mention the queries)
        for c in cands:
            keys_axis = c.comm(KEYS).axis
            if keys_axis in ("x", "y"):
                assert c.dim_on(keys_axis) == "T", c.name
            if c.comm(KEYS) is Comm.mcast_xy:
                assert c.dims_on("xy") == ("T",), c.name


def test_group_of_one_head_per_memory_head_is_not_shared_but_one_memory_head_is():
    """Gkv=1 (multi-query): all heads share the memory, so a G axis offers a multicast; a 1-D G layout
    still does not (its row-major order does not make a row/column group)."""
    cands = enumerate_candidates(problem("N=2,G=4,Gkv=1,T=128,S=96,E=64"))
    by_name = {c.name for c in cands}
    assert "G@y,N@x|x=dram,mem_k=mcast_y,mem_v=mcast_y" in by_name
    assert "N@y,G@x|x=dram,mem_k=mcast_x,mem_v=mcast_x" in by_name
    assert not any(c.dim_on("xy") == "G" and c.comm(KEYS) is not Comm.dram for c in cands)


def test_flattened_layout_needs_two_spread_dims():
    assert not any(c.flattened for c in enumerate_candidates(problem("N=1,G=1,T=96,S=96,E=64"))), (
        "one spread dim: nothing to flatten"
    )
    flat = [c for c in enumerate_candidates(problem("N=1,G=3,T=96,S=96,E=64")) if c.flattened]
    assert {c.name for c in flat} == {"G*T@xy|x=dram,mem_k=dram,mem_v=dram"}
    assert flat[0].dims_on("xy") == ("G", "T")


def test_causal_flattened_layout_is_only_balanced_and_never_multicast():
    cands = enumerate_candidates(problem("N=2,G=4,Gkv=1,T=128,S=128,E=64", causal=True))
    flat = [c for c in cands if c.flattened]
    assert len(flat) == 1 and flat[0].has_tag("balanced") and flat[0].comm(KEYS) is Comm.dram
    # layouts that do not carry the queries are never balanced
    for c in cands:
        if c.axis_of("T") is None and not c.flattened:
            assert not c.has_tag("balanced"), c.name


def test_causal_forbids_kv_multicast_along_the_queries_only():
    """Along T the plain problem multicasts k/v; the causal one does not, on any layout."""
    plain = enumerate_candidates(problem("N=2,G=2,T=128,S=128,E=64"))
    causal = enumerate_candidates(problem("N=2,G=2,T=128,S=128,E=64", causal=True))

    def along_t(c):
        comm = c.comm(KEYS)
        if comm is Comm.mcast_xy:
            return "T" in c.dims_on("xy") or "T" in (c.dim_on("x"), c.dim_on("y"))
        return comm.axis is not None and c.dim_on(comm.axis) == "T"

    assert any(along_t(c) for c in plain)
    assert not any(along_t(c) for c in causal)


def test_the_shipped_kernel_gets_the_same_candidates_up_to_renaming():
    """flash_attention and the test kernel have the same access maps up to names: same candidate set."""
    rename = {"B": "N", "H": "G", "Sq": "T", "q": "x", "k": "mem_k", "v": "mem_v"}

    def canon(name: str) -> str:
        layout, comms, *rest = name.split("|")
        layout = ",".join(
            "*".join(rename.get(d, d) for d in part.split("@")[0].split("*")) + "@" + part.split("@")[1]
            for part in layout.split(",")
        )
        comms = ",".join(f"{rename.get(t, t)}={c}" for t, c in (p.split("=") for p in comms.split(",")))
        return "|".join([layout, comms, *rest])

    fa = load_program("flash_attention")
    for causal in (False, True):
        opts = {"causal"} if causal else set()
        shipped = {
            canon(c.name)
            for c in enumerate_candidates(make_problem(fa, "B=2,H=4,Hkv=2,Sq=128,Skv=128,D=64", options=opts))
        }
        ours = {c.name for c in enumerate_candidates(problem("N=2,G=4,Gkv=2,T=128,S=128,E=64", causal))}
        # program order differs (G before N here), so the flattened layout is G*N*T vs N*G*T (B*H*Sq)
        ours = {n.replace("G*N*T@xy", "N*G*T@xy") for n in ours}
        assert shipped == ours


def test_every_candidate_builds_a_schedule(tiny_hw):
    """The model accepts every candidate of the test kernel (plain and causal, grouped heads)."""
    for prob in (problem("N=2,G=4,Gkv=2,T=128,S=96,E=64"), problem("N=2,G=4,Gkv=2,T=96,S=96,E=64", True)):
        for c in enumerate_candidates(prob):
            s = build_schedule(tiny_hw, prob, c)
            assert s.params and s.constraints and len(s.terms) == 9, c.name
