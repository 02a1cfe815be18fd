"""The attention model at concrete parameter values, against direct counts written here.

Work distribution (written from the model's definitions, independently of ``families/attention/quantities.py``): a
task is one query chunk of one (batch, head), or with causal balancing the pair of chunks
``{j, n_q - 1 - j}``; a grid axis carrying a dimension deals its units out in contiguous ranges of
``per_core`` (rows top to bottom, columns left to right, a 1-D layout in row-major order; a flattened
layout deals out its (outer..inner) index space the same way); dimensions on no axis are all on every
core. A core then runs, per query chunk ``i``, ``n_k = ceil(Skv_t / kc)`` key/value steps, or under the
causal mask ``ceil((i + 1) * qc / kc)``.

For every legal point of small problems (found by the exhaustive walk, with the sub-blocks and buffer
depths pinned to keep it short), the model's ``chunks`` and ``steps`` are compared with the slowest
core's direct count. The L1 buffers and the latency terms are checked against the formulas of the
module docstrings, with the hardware's numbers.
"""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from loom_explorer.brute import brute_force
from loom_explorer.families.attention.candidates import BALANCED
from loom_explorer.families.attention.program import analyse_attention
from loom_explorer.families.attention.quantities import build_attention_quantities
from loom_explorer.mapping import Candidate, Comm, enumerate_candidates
from loom_explorer.model.build import build_schedule
from loom_explorer.model.expr import evaluate
from loom_explorer.problem import KernelTarget, make_problem
from loom_explorer.program import load_program
from loom_explorer.validate import referee

FA = load_program("flash_attention")
QUICK = {
    "qk_subblock_h": 1,
    "qk_subblock_w": 1,
    "out_subblock_h": 1,
    "out_subblock_w": 1,
    "q_buffer_depth": 2,
    "k_buffer_depth": 2,
    "v_buffer_depth": 2,
}
TERM_NAMES = [
    "launch",
    "fill",
    "q_load",
    "qk_matmul",
    "softmax",
    "pv_matmul",
    "kv_streaming",
    "normalize",
    "write_back",
]


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def problem(shape: str, causal: bool = False, **kw):
    return make_problem(FA, shape, options={"causal"} if causal else set(), **kw)


# ------------------------------------------------------------------------------ direct count


def core_work(prob, cand: Candidate, values: dict[str, int]) -> list[list[tuple[tuple, int]]]:
    """For each core holding work: its (batch index, query chunk) items. Checks that the cores used fit
    the grid, none is idle, and every (batch index, query chunk) is computed exactly once."""
    st = analyse_attention(prob.program)
    qc = values["q_chunk_size"] // 32
    n = cdiv(prob.tiles(st.q_dim), qc)
    q = st.q_dim
    spread = [d for d in (*st.batch_dims, q) if prob.program.dim(d).spread]

    def units(d: str) -> int:
        if d == q:
            return cdiv(n, 2) if cand.has_tag("balanced") else n
        return prob.elements(d)

    def chunks(u: int) -> list[int]:
        return sorted({u, n - 1 - u}) if cand.has_tag("balanced") else [u]

    gx, gy = values["grid_x"], values["grid_y"]
    axes = dict(cand.axes)
    cores: list[list[dict[str, int]]] = []  # per core: its assignments of the grid-carried dims
    if "xy" in axes:
        dims = axes["xy"].split("*")
        p = values[f"per_core_{axes['xy']}"]
        flat = list(itertools.product(*(range(units(d)) for d in dims)))
        used = cdiv(len(flat), p)
        assert used <= gx * gy, "more cores than the grid used"
        assert used > gx * (gy - 1) and used >= gx, "an idle row or column of the grid used"
        cores = [[dict(zip(dims, t, strict=True)) for t in flat[c * p : (c + 1) * p]] for c in range(used)]
        carried = dims
    else:
        ranges = []
        carried = []
        for axis, g in (("y", gy), ("x", gx)):
            if axis not in axes:
                assert g == 1, f"grid along unused axis {axis}"
                continue
            d = axes[axis]
            p = values[f"per_core_{d}"]
            rs = [list(range(i * p, min((i + 1) * p, units(d)))) for i in range(g)]
            assert all(rs), f"an idle core along {axis}"
            assert rs[-1][-1] == units(d) - 1, f"{d} not covered along {axis}"
            ranges.append(rs)
            carried.append(d)
        for combo in itertools.product(*ranges):
            cores.append([dict(zip(carried, t, strict=True)) for t in itertools.product(*combo)])
    rest = [d for d in spread if d not in carried]
    out = []
    for items in cores:
        work = []
        for it in items:
            for t in itertools.product(*(range(units(d)) for d in rest)):
                full = {**it, **dict(zip(rest, t, strict=True))}
                batch = tuple(full.get(d, 0) for d in st.batch_dims)
                for ch in chunks(full[q]) if q in spread else range(n):
                    work.append((batch, ch))
        out.append(work)
    every = [w for work in out for w in work]
    batches = list(itertools.product(*(range(prob.elements(d)) for d in st.batch_dims)))
    assert sorted(every) == sorted((b, i) for b in batches for i in range(n)), "work not covered exactly once"
    return out


def direct_count(prob, cand: Candidate, values: dict[str, int]) -> tuple[int, int]:
    """(steps, query chunks) of the slowest core, counted item by item."""
    st = analyse_attention(prob.program)
    qc, kc = values["q_chunk_size"] // 32, values["k_chunk_size"] // 32
    n_k = cdiv(prob.tiles(st.kv_dim), kc)
    causal = prob.has_option("causal")
    work = core_work(prob, cand, values)
    steps = [sum(min(cdiv((i + 1) * qc, kc), n_k) if causal else n_k for _, i in w) for w in work]
    return max(steps), max(len(w) for w in work)


def legal_points(schedule, pins=QUICK) -> list[dict[str, int]]:
    points: list[dict[str, int]] = []
    result = brute_force(schedule, pins=pins, on_legal=lambda v, _: points.append(dict(v)))
    assert result.complete and points, schedule.candidate.name
    return points


# ------------------------------------------------------------------------------ steps and chunks

NON_CAUSAL = ["B=2,H=2,Sq=160,Skv=96,D=64", "B=1,H=4,Hkv=2,Sq=96,Skv=224,D=32", "B=3,H=1,Sq=64,Skv=32,D=64"]
CAUSAL = ["B=2,H=2,Sq=160,Skv=160,D=64", "B=1,H=4,Hkv=2,Sq=96,Skv=96,D=32", "B=1,H=1,Sq=224,Skv=224,D=32"]


@pytest.mark.parametrize("shape", NON_CAUSAL)
def test_non_causal_steps_are_chunks_times_kv_chunks(tiny_hw, shape):
    prob = problem(shape)
    st = analyse_attention(FA)
    checked = 0
    for cand in enumerate_candidates(prob):
        q = build_attention_quantities(tiny_hw, prob, cand)
        for v in legal_points(build_schedule(tiny_hw, prob, cand)):
            steps, chunks = direct_count(prob, cand, v)
            n_k = cdiv(prob.tiles(st.kv_dim), v["k_chunk_size"] // 32)
            assert evaluate(q.chunks, v) == chunks, (cand.name, v)
            assert evaluate(q.steps, v) == steps == chunks * n_k, (cand.name, v)
            assert evaluate(q.n_k, v) == n_k
            assert evaluate(q.n_q, v) == cdiv(prob.tiles(st.q_dim), v["q_chunk_size"] // 32)
            assert evaluate(q.diagonal_steps, v) == 0
            checked += 1
    assert checked > 40


@pytest.mark.parametrize("shape", CAUSAL)
def test_causal_steps_bound_the_exact_count(tiny_hw, shape):
    """Model steps >= sum over the slowest core's chunks of ceil((i+1)*qc/kc); equal when that core runs
    a single unbalanced chunk. Diagonal steps: one ceil(qc/kc) per query chunk."""
    prob = problem(shape, causal=True)
    single = checked = 0
    for cand in enumerate_candidates(prob):
        q = build_attention_quantities(tiny_hw, prob, cand)
        for v in legal_points(build_schedule(tiny_hw, prob, cand)):
            steps, chunks = direct_count(prob, cand, v)
            model = evaluate(q.steps, v)
            assert model >= steps, (cand.name, v, model, steps)
            assert evaluate(q.chunks, v) >= chunks, (cand.name, v)
            qc, kc = v["q_chunk_size"] // 32, v["k_chunk_size"] // 32
            assert evaluate(q.diagonal_steps, v) == evaluate(q.chunks, v) * cdiv(qc, kc)
            if chunks == 1 and not cand.has_tag("balanced"):
                assert model == steps, (cand.name, v, model, steps)
                single += 1
            checked += 1
    assert single > 0 and checked > 100


def test_causal_steps_never_exceed_non_causal_for_one_chunk_per_head(tiny_hw):
    """A top query chunk that ends at the sequence end needs every key/value chunk: causal and plain
    agree when qc divides the query tiles and one chunk sits on each core."""
    prob_c, prob_n = problem("B=1,H=2,Sq=256,Skv=256,D=32", True), problem("B=1,H=2,Sq=256,Skv=256,D=32")
    cand = Candidate(axes=(("y", "H"), ("x", "Sq")), comms=(("q", Comm.dram), ("k", Comm.dram), ("v", Comm.dram)))
    qc_, qn = build_attention_quantities(tiny_hw, prob_c, cand), build_attention_quantities(tiny_hw, prob_n, cand)
    for qc in (1, 2, 4, 8):
        for kc in (1, 2, 4, 8):
            v = dict(
                QUICK, grid_x=8 // qc, grid_y=2, per_core_H=1, per_core_Sq=1, q_chunk_size=32 * qc, k_chunk_size=32 * kc
            )
            if v["grid_x"] > 4:
                continue
            assert evaluate(qc_.steps, v) <= evaluate(qn.steps, v) == cdiv(8, kc)
            assert evaluate(qc_.steps, v) == cdiv(8, kc)  # the last chunk needs all 8 key tiles


def test_balanced_single_chunk_steps_are_exact(tiny_hw):
    """With q_chunk_size >= Sq there is one query chunk; a balanced core then runs that one chunk, and
    the model's steps must be exact for a core with one chunk (as the docstring says, c = 1)."""
    prob = problem("B=1,H=4,Sq=96,Skv=96,D=32", causal=True)
    mismatches = []
    for cand in enumerate_candidates(prob):
        if not cand.has_tag("balanced"):
            continue
        q = build_attention_quantities(tiny_hw, prob, cand)
        for v in legal_points(build_schedule(tiny_hw, prob, cand), pins={**QUICK, "q_chunk_size": 96}):
            steps, chunks = direct_count(prob, cand, v)
            if chunks == 1:
                model = (evaluate(q.steps, v), evaluate(q.chunks, v))
                if model != (steps, 1):
                    mismatches.append((cand.name, v["k_chunk_size"], model, (steps, 1)))
    assert not mismatches, mismatches[:4]


def test_causal_single_chunk_never_needs_more_steps_than_plain(tiny_hw):
    """The mask only removes work: a core with one query chunk needs at most the n_k key/value chunks
    the unmasked problem runs (Sq = Skv = 5 tiles, so q chunks of 2 or 4 tiles are padded)."""
    causal, plain = problem("B=1,H=2,Sq=160,Skv=160,D=32", True), problem("B=1,H=2,Sq=160,Skv=160,D=32")
    over = []
    for cand in enumerate_candidates(causal):
        if cand.has_tag("balanced") or cand.axis_of("Sq") is None:
            continue
        qc_, qp = build_attention_quantities(tiny_hw, causal, cand), build_attention_quantities(tiny_hw, plain, cand)
        for v in legal_points(build_schedule(tiny_hw, causal, cand)):
            if direct_count(causal, cand, v)[1] != 1:
                continue
            sc, sp = evaluate(qc_.steps, v), evaluate(qp.steps, v)
            if sc > sp:
                over.append((cand.name, v["q_chunk_size"], v["k_chunk_size"], sc, sp))
    assert not over, over[:4]


# ------------------------------------------------------------------------------ balanced vs unbalanced


def balanced_twin(prob, cand, v):
    """The balanced counterpart of an unbalanced point on the same grid with the same chunks: per core
    ceil(pairs / g) pairs over the same g cores along the query axis; None when that does not fit."""
    n = cdiv(prob.tiles("Sq"), v["q_chunk_size"] // 32)
    g = cdiv(n, v["per_core_Sq"])
    pairs = cdiv(n, 2)
    pp = cdiv(pairs, g)
    if cdiv(pairs, pp) != g:
        return None
    return {**v, "per_core_Sq": pp}


def compare_balanced(tiny_hw, shape, keep):
    """(unbalanced, balanced) model steps and direct counts at twin points that ``keep`` selects."""
    prob = problem(shape, causal=True)
    out = []
    for cand in enumerate_candidates(prob):
        if cand.has_tag("balanced") or cand.axis_of("Sq") is None:
            continue
        twin = dataclasses.replace(cand, tags=(BALANCED,))
        qu, qb = (build_attention_quantities(tiny_hw, prob, c) for c in (cand, twin))
        sb = build_schedule(tiny_hw, prob, twin)
        for v in legal_points(build_schedule(tiny_hw, prob, cand)):
            vb = balanced_twin(prob, cand, v)
            if vb is None or not referee(sb, vb).legal:
                continue
            n = cdiv(prob.tiles("Sq"), v["q_chunk_size"] // 32)
            info = dict(
                n=n, g=cdiv(n, v["per_core_Sq"]), heads=evaluate(qu.heads, v), p=v["per_core_Sq"], pp=vb["per_core_Sq"]
            )
            if not keep(info):
                continue
            out.append(
                (
                    cand.name,
                    v,
                    info,
                    evaluate(qu.steps, v),
                    evaluate(qb.steps, vb),
                    direct_count(prob, cand, v)[0],
                    direct_count(prob, twin, vb)[0],
                )
            )
    assert out, "no twin points selected"
    return out


@pytest.mark.parametrize(
    "shape", ["B=1,H=1,Sq=256,Skv=256,D=32", "B=1,H=1,Sq=224,Skv=224,D=32", "B=2,H=1,Sq=192,Skv=192,D=32"]
)
def test_balanced_never_worse_than_unbalanced_on_the_same_grid(tiny_hw, shape):
    """Same grid, same chunks, one (batch, head) per core, and no more chunks per balanced core than
    per unbalanced core: the model charges the balanced split no more steps."""
    rows = compare_balanced(tiny_hw, shape, lambda i: i["heads"] == 1 and 2 * i["pp"] <= i["p"])
    for name, v, info, model_u, model_b, exact_u, exact_b in rows:
        assert model_b <= model_u, (name, v, info, model_b, model_u)
        assert exact_b <= model_b and exact_u <= model_u
    assert any(i["g"] > 1 for _, _, i, *_ in rows)


def test_balancing_with_one_core_along_the_queries_changes_nothing_odd_chunks(tiny_hw):
    """One core along the query axis runs every query chunk either way: the work is identical, so the
    balanced model must not charge more than the unbalanced one."""
    rows = compare_balanced(
        tiny_hw,
        "B=1,H=1,Sq=224,Skv=224,D=32",
        lambda i: i["g"] == 1 and i["n"] % 2 == 1 and i["n"] >= 3 and i["heads"] == 1,
    )
    worse = []
    for name, v, _info, model_u, model_b, exact_u, exact_b in rows:
        assert exact_u == exact_b, (name, v)
        if model_b > model_u:
            worse.append((name, v["q_chunk_size"], v["k_chunk_size"], model_u, model_b, exact_u))
    assert not worse, worse[:4]


def test_balancing_with_one_core_along_the_queries_changes_nothing_several_heads(tiny_hw):
    rows = compare_balanced(
        tiny_hw, "B=2,H=2,Sq=128,Skv=128,D=32", lambda i: i["g"] == 1 and i["n"] % 2 == 0 and i["heads"] > 1
    )
    worse = []
    for name, v, info, model_u, model_b, exact_u, exact_b in rows:
        assert exact_u == exact_b, (name, v)
        if model_b > model_u:
            worse.append((name, v["q_chunk_size"], v["k_chunk_size"], info["heads"], model_u, model_b, exact_u))
    assert not worse, worse[:4]


# ------------------------------------------------------------------------------ L1 buffers


def test_l1_buffers_causal_has_a_mask_and_plain_does_not(tiny_hw):
    """ttnn's streaming kernel's circular buffers (``families/attention/buffers.py``): the inputs at the
    schedule's depths, scalars, scores, the output's two running blocks, five statistics and the output; the
    causal mask in bfp4 (two blocks) replaces the reciprocal scratch of the plain kernel."""
    v = dict(
        QUICK,
        grid_x=2,
        grid_y=2,
        per_core_H=1,
        per_core_Sq=2,
        q_chunk_size=64,
        k_chunk_size=96,
        q_buffer_depth=1,
        k_buffer_depth=3,
        v_buffer_depth=2,
    )
    cand = Candidate(axes=(("y", "H"), ("x", "Sq")), comms=(("q", Comm.dram), ("k", Comm.dram), ("v", Comm.dram)))
    qc, kc, dt, tile, bfp4 = 2, 3, 2, 2048, 576
    want = {
        "q": 1 * qc * dt,
        "k": 3 * kc * dt,
        "v": 2 * kc * dt,
        "identity": 2,
        "s": qc * kc,
        "o_im": qc * dt,
        "o_acc": qc * dt,
        "m_l": 5 * qc,
        "o": qc * dt,
    }
    for causal in (False, True):
        prob = problem("B=1,H=2,Sq=256,Skv=256,D=64", causal)
        s = build_schedule(tiny_hw, prob, cand)
        assert referee(s, v).legal, referee(s, v).violations
        got = {b.name: evaluate(b.bytes_expr, v) for b in s.l1_buffers}
        expected = {k: t * tile for k, t in want.items()}
        if causal:
            expected["s_mask"] = 2 * qc * kc * bfp4
        else:
            expected["recip_scratch"] = tile
        assert got == expected, causal
        assert evaluate(s.l1_bytes, v) == sum(expected.values())
        assert referee(s, v).solution.l1_bytes == sum(expected.values())


def test_l1_buffers_stay_bf16_with_fp32_accumulation_on_wormhole(tiny_hw):
    """ttnn's streaming kernel keeps its intermediates in bf16 whatever the Dst mode (the fp32 ACCURATE
    recipe runs only on Blackhole: tests/families/attention/test_sdpa_buffers.py)."""
    prob = problem("B=1,H=2,Sq=128,Skv=128,D=64", fp32_acc=True)
    cand = Candidate(axes=(("xy", "H"),), comms=(("q", Comm.dram), ("k", Comm.dram), ("v", Comm.dram)))
    s = build_schedule(tiny_hw, prob, cand)
    v = dict(QUICK, grid_x=2, grid_y=1, per_core_H=1, q_chunk_size=128, k_chunk_size=64)
    got = {b.name: evaluate(b.bytes_expr, v) for b in s.l1_buffers}
    assert got["o_im"] == got["o_acc"] == got["o"] == 4 * 2 * 2048
    # fp32 accumulation halves the Dst tiles: a 2x4 sub-block no longer fits
    assert not referee(s, {**v, "out_subblock_h": 2, "out_subblock_w": 2, "qk_subblock_h": 4, "qk_subblock_w": 2}).legal


def test_l1_buffers_of_the_ttlang_target_are_the_exported_kernels(tiny_hw):
    """Under ``export --format ttlang`` the buffers are the exported TT-Lang kernel's dataflow buffers
    (``families/attention/buffers.py``; the compiler's totals: test_ttlang_compile_attention.py): the
    accumulator two blocks in the output's format even with fp32 accumulation, and under the mask
    the index, its two gaps, 32 and -1e30, the wide offset and key - query position, and the offset."""
    v = dict(
        QUICK,
        grid_x=2,
        grid_y=2,
        per_core_H=1,
        per_core_Sq=2,
        q_chunk_size=64,
        k_chunk_size=128,
        q_buffer_depth=1,
        k_buffer_depth=3,
        v_buffer_depth=2,
    )
    cand = Candidate(axes=(("y", "H"), ("x", "Sq")), comms=(("q", Comm.dram), ("k", Comm.dram), ("v", Comm.dram)))
    qc, kc, dt, tile = 2, 4, 2, 2048
    want = {
        "q": 1 * qc * dt,
        "k": 3 * kc * dt,
        "v": 2 * kc * dt,
        "o": qc * dt,
        "ones": 1,
        "scale": qc * kc,
        "k_t": dt * kc,
        "s_qk": qc * kc,
        "s": qc * kc,
        "s_max": qc,
        "m_new": qc,
        "m_wide": qc * kc,
        "s_p": qc * kc,
        "correction": qc,
        "s_sum": qc,
        "correction_wide": qc * dt,
        "o_corrected": qc * dt,
        "m": 2 * qc,
        "l": 2 * qc,
        "o_acc": 2 * qc * dt,
        "l_wide": qc * dt,
    }
    mask = {
        "s_mask_index": 2 * (qc + kc),
        "s_mask_gaps": 2 * qc * kc,
        "s_mask_constants": 2 * qc * kc,
        "s_mask_offset": 2,
        "s_mask_work": 2 * qc * kc,
    }
    for causal in (False, True):
        prob = problem("B=1,H=2,Sq=256,Skv=256,D=64", causal, target=KernelTarget.ttlang, fp32_acc=True)
        s = build_schedule(tiny_hw, prob, cand)
        assert referee(s, v).legal, referee(s, v).violations
        got = {b.name: evaluate(b.bytes_expr, v) for b in s.l1_buffers}
        expected = {k: t * tile for k, t in (want | mask if causal else want).items()}
        assert got == expected, causal
        assert referee(s, v).solution.l1_bytes == sum(expected.values())


def test_mask_buffer_is_named_after_the_programs_scores(tiny_hw):
    from test_attention_candidates import XATTN  # the cross-attention defined for the candidate tests

    prob = make_problem(XATTN, "N=1,G=2,T=64,S=64,E=32", options={"causal"})
    names = {b.name for b in build_schedule(tiny_hw, prob, enumerate_candidates(prob)[0]).l1_buffers}
    assert names == {"x", "mem_k", "mem_v", "identity", "att", "att_mask", "y_im", "y_acc", "mx_den", "y"}
    prob = make_problem(XATTN, "N=1,G=2,T=64,S=64,E=32")
    names = {b.name for b in build_schedule(tiny_hw, prob, enumerate_candidates(prob)[0]).l1_buffers}
    assert "att_mask" not in names


# ------------------------------------------------------------------------------ latency terms


def expected_terms(hw, prob, v, steps, chunks, diag):
    """The compute terms from the attention latency docstring, with the hardware's numbers."""
    c = hw.compute
    cf, cp, osub, elt = (
        c.matmul_tile_cycles[prob.fidelity],
        c.tile_pack_cycles,
        c.subblock_overhead_cycles,
        c.eltwise_tile_cycles,
    )
    exp, recip = c.sfpu_tile_cycles["exp"], c.sfpu_tile_cycles["recip"]
    qc, kc, dt = v["q_chunk_size"] // 32, v["k_chunk_size"] // 32, prob.tiles("D")
    tile_bytes = hw.tile_bytes[prob.data_format("q")]  # q, k, v and the scores share one format here

    def matmul(rows, cols, inner, sub_h, sub_w):
        """inner*max(math, unpack) + packing + sub-block overhead (model/latency.py, matmul_cycles)."""
        sub_rows, sub_cols = cdiv(rows, sub_h), cdiv(cols, sub_w)
        unpack = (
            cdiv((sub_cols * rows + sub_rows * cols) * tile_bytes, c.unpack_bytes_per_cycle)
            if c.unpack_bytes_per_cycle
            else 0
        )
        return inner * max(rows * cols * cf, unpack) + rows * cols * cp + sub_rows * sub_cols * osub

    qk = matmul(qc, kc, dt, v["qk_subblock_h"], v["qk_subblock_w"])
    pv = matmul(qc, dt, kc, v["out_subblock_h"], v["out_subblock_w"])
    # scale, max, exp, sum on s (qc x kc); exp on m (qc); mul on l (qc); rescale and accumulate o (qc x D_t)
    sm = qc * kc * (elt + elt + exp + elt) + qc * exp + qc * elt + 2 * qc * dt * elt
    mask = qc * kc * elt
    final = qc * recip + qc * dt * elt
    return {
        "launch": c.kernel_launch_cycles,
        "qk_matmul": steps * qk,
        "pv_matmul": steps * pv,
        "softmax": steps * sm + diag * mask,
        "normalize": chunks * final,
    }


@pytest.mark.parametrize("causal", [False, True], ids=["plain", "causal"])
def test_latency_terms_are_named_sum_up_and_follow_the_formulas(tiny_hw, causal):
    shape = "B=2,H=2,Sq=160,Skv=160,D=64"
    prob = problem(shape, causal)
    checked = 0
    for cand in enumerate_candidates(prob):
        s = build_schedule(tiny_hw, prob, cand)
        assert [t.name for t in s.terms] == TERM_NAMES, cand.name
        q = build_attention_quantities(tiny_hw, prob, cand)
        points = legal_points(s)
        # the pinned sub-blocks are 1x1; vary them and the buffer depths on a few points too
        points = points[:: max(1, len(points) // 6)]
        for v in list(points):
            qc, kc = v["q_chunk_size"] // 32, v["k_chunk_size"] // 32
            sub = max(d for d in range(1, 9) if qc % d == 0)
            wide = 2 if kc % 2 == 0 and sub <= 4 else 1
            # the two matmuls' sub-blocks differ, so each term must use its own
            points.append(
                {
                    **v,
                    "qk_subblock_h": sub,
                    "qk_subblock_w": wide,
                    "out_subblock_h": 1,
                    "out_subblock_w": 2,
                    "q_buffer_depth": 1,
                    "k_buffer_depth": 1,
                    "v_buffer_depth": 3,
                }
            )
            points.append(
                {
                    **v,
                    "qk_subblock_h": 1,
                    "qk_subblock_w": kc if kc <= 8 else 1,
                    "out_subblock_h": sub,
                    "out_subblock_w": 1,
                    "q_buffer_depth": 1,
                    "k_buffer_depth": 3,
                    "v_buffer_depth": 1,
                }
            )
        for v in points:
            verdict = referee(s, v)  # raises if the breakdown does not sum to the latency
            if not verdict.legal:
                continue
            sol = verdict.solution
            terms = dict(sol.breakdown)
            assert list(terms) == TERM_NAMES
            assert sum(terms.values()) == sol.latency_cycles == evaluate(s.latency, v)
            assert all(x >= 0 for x in terms.values()), (cand.name, terms)
            steps, chunks, diag = (evaluate(e, v) for e in (q.steps, q.chunks, q.diagonal_steps))
            for name, value in expected_terms(tiny_hw, prob, v, steps, chunks, diag).items():
                assert terms[name] == value, (cand.name, name, v)
            if v["q_buffer_depth"] == 2:
                assert terms["q_load"] == 0
            else:
                assert terms["q_load"] > 0 or chunks == 1
            assert sol.latency_cycles >= evaluate(s.latency_lower_bound, v)
            assert sol.latency_cycles >= s.ideal_cycles
            checked += 1
    assert checked > 50


def test_causal_mask_costs_only_under_the_causal_option(tiny_hw):
    """Same candidate and values: the plain problem has no diagonal steps and no mask in the softmax."""
    cand = Candidate(axes=(("xy", "H"),), comms=(("q", Comm.dram), ("k", Comm.dram), ("v", Comm.dram)))
    v = dict(QUICK, grid_x=2, grid_y=1, per_core_H=1, q_chunk_size=64, k_chunk_size=64)
    plain = referee(build_schedule(tiny_hw, problem("B=1,H=2,Sq=128,Skv=128,D=64"), cand), v).solution
    causal = referee(build_schedule(tiny_hw, problem("B=1,H=2,Sq=128,Skv=128,D=64", True), cand), v).solution
    # 2 query chunks of 2 tiles, 2 key chunks of 2 tiles: plain 2*2 = 4 steps; causal 1 + 2 = 3 steps
    # (exact: kc divides qc, so the bound has no slack), 2 diagonal steps
    q_plain = build_attention_quantities(tiny_hw, problem("B=1,H=2,Sq=128,Skv=128,D=64"), cand)
    q_causal = build_attention_quantities(tiny_hw, problem("B=1,H=2,Sq=128,Skv=128,D=64", True), cand)
    assert evaluate(q_plain.steps, v) == 4 and evaluate(q_plain.diagonal_steps, v) == 0
    assert evaluate(q_causal.steps, v) == 3 and evaluate(q_causal.diagonal_steps, v) == 2
    mask = 2 * 2 * tiny_hw.compute.eltwise_tile_cycles
    per_step = dict(plain.breakdown)["softmax"] // 4
    assert dict(causal.breakdown)["softmax"] - 3 * per_step == 2 * mask


def test_flops_count_the_causal_triangle(tiny_hw):
    cand = Candidate(axes=(("xy", "H"),), comms=(("q", Comm.dram), ("k", Comm.dram), ("v", Comm.dram)))
    plain = build_schedule(tiny_hw, problem("B=2,H=3,Sq=128,Skv=128,D=64"), cand)
    causal = build_schedule(tiny_hw, problem("B=2,H=3,Sq=128,Skv=128,D=64", True), cand)
    assert plain.flops == 4 * 2 * 3 * 128 * 128 * 64
    assert causal.flops == 4 * 2 * 3 * (128 * 129 // 2) * 64
    cycles = tiny_hw.compute.matmul_tile_cycles[plain.problem.fidelity]
    assert plain.ideal_cycles == cdiv(2 * 6 * 4 * 4 * 2 * cycles, 16)
    assert causal.ideal_cycles == cdiv(2 * 6 * 10 * 2 * cycles, 16)


def test_grouped_multicast_reaches_one_group(n150):
    """k multicast down a column of heads, H=8 over Hkv=2 (groups of 4 heads): 4/per_core_H receivers,
    one DRAM reader per group. (The 8x8 n150, so that one head per row fits.)"""
    prob = problem("B=1,H=8,Hkv=2,Sq=64,Skv=64,D=32")
    cand = Candidate(axes=(("y", "H"), ("x", "Sq")), comms=(("q", Comm.dram), ("k", Comm.mcast_y), ("v", Comm.mcast_y)))
    q = build_attention_quantities(n150, prob, cand)
    schedule = build_schedule(n150, prob, cand)
    for pch, receivers in ((1, 4), (2, 2), (4, 1)):
        v = dict(QUICK, grid_x=1, grid_y=8 // pch, per_core_H=pch, per_core_Sq=1, q_chunk_size=64, k_chunk_size=64)
        assert evaluate(q.mcast_receivers("k"), v) == receivers
        assert evaluate(q.mcast_hops("k"), v) == receivers - 1
        assert evaluate(q.mcast_readers("k"), v) == 8 // pch // receivers == 2
        verdict = referee(schedule, v)
        assert verdict.legal == (receivers >= 2), verdict.violations
