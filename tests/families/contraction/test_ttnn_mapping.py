"""One TTNN matmul config mapping, both directions (``families/contraction/ttnn_mapping.py``): a schedule's
parameters -> its config -> parameters again, and a valid config -> parameters -> the config again
(hypothesis); and the export (``families/contraction/ttnn.py``) and ``predict --ttnn-config``
(``families/contraction/ttnn_config.py``) agree on real solved schedules."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loom_explorer.families.contraction.ttnn_config import evaluate_config, parse_config
from loom_explorer.families.contraction.ttnn_mapping import (
    LAYOUTS,
    ONE_D,
    MatmulArgs,
    MatmulLayout,
    config_args,
    schedule_values,
    ttnn_buffer_blocks,
)
from loom_explorer.hardware import load_hardware
from loom_explorer.mapping.enumerate import enumerate_candidates
from loom_explorer.problem import Placement, make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.targets.ttnn.op import ttnn_equivalent

EXTENT = st.integers(1, 48)  # tiles along M, N or K


def _spread(layout: MatmulLayout) -> tuple[bool, bool]:
    """Whether M and N are on a grid axis (a dimension on none is all on every core)."""
    return layout.m_axis is not None, layout.n_axis is not None


@st.composite
def legal_values(draw: st.DrawFn) -> tuple[MatmulLayout, tuple[int, int, int], dict[str, int]]:
    """A layout, (Mt, Nt, Kt) and parameter values as the model's coverage and domains allow them for the
    layout's candidate, with the K split and input buffers TTNN fixes (what a TTNN config can express)."""
    layout = draw(st.sampled_from(LAYOUTS))
    mt, nt, kt = draw(EXTENT), draw(EXTENT), draw(EXTENT)
    m_spread, n_spread = _spread(layout)
    pm = draw(st.integers(1, mt)) if m_spread else mt
    pn = draw(st.integers(1, nt)) if n_spread else nt
    along_m, along_n = math.ceil(mt / pm), math.ceil(nt / pn)
    if layout.config_class == ONE_D:  # u cores filled row by row into grid_x columns, no idle row
        used = along_m * along_n
        gx = draw(st.integers(1, used))
        grid = (gx, math.ceil(used / gx))
    else:  # the cores along each axis cover its dimension, none idle
        grid = (along_n, along_m) if layout.n_axis == "x" else (along_m, along_n)
    ibw = draw(st.sampled_from([d for d in range(1, kt + 1) if kt % d == 0]))
    depth = ttnn_buffer_blocks(kt // ibw)
    values = {
        "grid_x": grid[0],
        "grid_y": grid[1],
        "per_core_M": pm,
        "per_core_N": pn,
        "per_core_K": kt,
        "in0_block_w": ibw,
        "out_block_h": draw(st.integers(1, pm)),
        "out_block_w": draw(st.integers(1, pn)),
        "out_subblock_h": draw(st.integers(1, 8)),
        "out_subblock_w": draw(st.integers(1, 8)),
        "in0_buffer_depth": depth,
        "in1_buffer_depth": depth,
    }
    return layout, (mt, nt, kt), values


@settings(max_examples=300, deadline=None)
@given(legal_values())
def test_schedule_to_config_to_schedule(case: tuple[MatmulLayout, tuple[int, int, int], dict[str, int]]) -> None:
    layout, tiles, values = case
    assert schedule_values(layout, config_args(values, "M", "N"), tiles) == values


@st.composite
def valid_configs(draw: st.DrawFn) -> tuple[MatmulLayout, tuple[int, int, int], MatmulArgs]:
    """A layout, (Mt, Nt, Kt) and a config TTNN runs on them: the un-split dimension of a 1-D config whole on
    every core, ``in0_block_w`` dividing Kt, and the grid the cores its blocks need."""
    layout = draw(st.sampled_from(LAYOUTS))
    mt, nt, kt = draw(EXTENT), draw(EXTENT), draw(EXTENT)
    m_spread, n_spread = _spread(layout)
    pm = draw(st.integers(1, mt)) if m_spread else mt
    pn = draw(st.integers(1, nt)) if n_spread else nt
    along_m, along_n = math.ceil(mt / pm), math.ceil(nt / pn)
    if layout.config_class == ONE_D:
        used = along_m * along_n
        gx = draw(st.integers(1, used))
        grid = (gx, math.ceil(used / gx))
    else:
        grid = (along_n, along_m) if layout.n_axis == "x" else (along_m, along_n)
    ibw = draw(st.sampled_from([d for d in range(1, kt + 1) if kt % d == 0]))
    args = MatmulArgs(
        grid=grid,
        in0_block_w=ibw,
        out_subblock_h=draw(st.integers(1, 8)),
        out_subblock_w=draw(st.integers(1, 8)),
        out_block_h=draw(st.integers(1, pm)),
        out_block_w=draw(st.integers(1, pn)),
        per_core_M=pm,
        per_core_N=pn,
    )
    return layout, (mt, nt, kt), args


@settings(max_examples=300, deadline=None)
@given(valid_configs())
def test_config_to_schedule_to_config(case: tuple[MatmulLayout, tuple[int, int, int], MatmulArgs]) -> None:
    layout, tiles, args = case
    assert config_args(schedule_values(layout, args, tiles), "M", "N") == args


@settings(max_examples=200, deadline=None)
@given(valid_configs(), st.integers(0, 4), st.integers(0, 4))
def test_a_2d_config_on_a_larger_grid_runs_the_cores_its_blocks_need(
    case: tuple[MatmulLayout, tuple[int, int, int], MatmulArgs], more_x: int, more_y: int
) -> None:
    layout, tiles, args = case
    if layout.config_class == ONE_D:
        return
    larger = MatmulArgs(
        **{
            **{f: getattr(args, f) for f in args.__dataclass_fields__},
            "grid": (args.grid[0] + more_x, args.grid[1] + more_y),
        }
    )
    assert schedule_values(layout, larger, tiles) == schedule_values(layout, args, tiles)


def test_every_layout_runs_exactly_one_gemm_candidate() -> None:
    dram = make_problem(load_program("gemm"), "M=512,K=512,N=512")
    height = make_problem(load_program("gemm"), "M=512,K=512,N=512", placements={"in0": Placement.l1_height})
    for layout in LAYOUTS:
        runs = [
            c.name for p in (dram, height) for c in enumerate_candidates(p) if layout.runs(c, "M", "N", "in0", "in1")
        ]
        # in0 height-sharded in L1: the 1-D config over M reads it from each core's L1
        expected = [layout.candidate().name] + (["M@xy|in0=local,in1=mcast_xy"] if layout.m_axis == "xy" else [])
        assert runs == expected, layout


@pytest.fixture(scope="module")
def solved():
    hw = load_hardware("wormhole_n150")
    problem = make_problem(load_program("gemm"), "M=1024,K=2048,N=768")
    session = Session(hw, problem)
    names = [layout.candidate().name for layout in LAYOUTS]
    # input buffers as TTNN allocates them, so that the config says everything the schedule chose
    pins = {"in0_buffer_depth": 2, "in1_buffer_depth": 2}
    return hw, problem, session, session.solve(pins, SolveOptions(time_limit_seconds=20), candidates=names)


def test_the_export_and_predict_read_the_same_mapping(solved) -> None:
    """Each solved schedule, exported as a TTNN config and read back by ``predict``, is the same schedule
    with the same latency."""
    hw, problem, session, results = solved
    assert len(results) == len(LAYOUTS)
    for result in results:
        assert result.solution is not None, result.candidate_name
        values = result.solution.values()
        name, args, notes = ttnn_equivalent(session.schedule(result.candidate_name), values)
        assert notes == []
        evaluated = evaluate_config(hw, problem, parse_config({"program_config": name, **args}))
        assert evaluated.schedule.candidate.name == result.candidate_name
        assert evaluated.values == values
        assert evaluated.result.solution is not None
        assert evaluated.result.solution.latency_cycles == result.solution.latency_cycles
