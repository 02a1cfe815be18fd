"""Exported TT-Lang FlashAttention kernels run in Tenstorrent's simulator (tt-lang-sim): the result matches
torch and the simulator moves exactly the tiles the model predicts, on the flattened split, plain and causal
(GEMM's: ``test_ttlang_sim.py``)."""

from __future__ import annotations

import pytest
from loom_helpers import NEEDS_SIM, simulate_attention

from loom_explorer.deploy.verify import PCC_MIN
from loom_explorer.hardware import load_hardware
from loom_explorer.problem import make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session

pytestmark = NEEDS_SIM


def _attention_report(tmp_path, shape: str, pins: dict[str, int], causal: bool = False, compile_it: bool = False):
    """The flattened split without multicasts, the layout the TT-Lang export writes; simulated only unless
    ``compile_it`` (for a check of ``report.passed``, which counts the compile): the compiler's checks are
    test_ttlang_compile_attention.py's, every file in one toolchain process."""
    return simulate_attention(
        tmp_path,
        shape,
        pins,
        lambda c: c.flattened and "mcast" not in c.name,
        frozenset({"causal"}) if causal else frozenset(),
        compile_it=compile_it,
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "shape,pins",
    [
        ("B=2,H=2,Sq=256,Skv=256,D=64", {}),
        # grouped-query heads, a ragged query length, 20 tasks on 7 cores of 3 (one padding task)
        ("B=1,H=4,Hkv=2,Sq=320,Skv=256,D=64", {"per_core_H*Sq": 3, "q_chunk_size": 64}),
    ],
)
def test_flash_attention_flattened_split(tmp_path, shape: str, pins: dict[str, int]) -> None:
    _, report = _attention_report(tmp_path, shape, pins)
    assert report.pcc >= PCC_MIN, report.pcc
    assert report.traffic_equal, report.differences()
    assert set(report.simulated.dram_read_tiles) == {"q", "k", "v"} and not report.simulated.pipe_received_tiles


@pytest.mark.slow
@pytest.mark.parametrize(
    "shape,pins",
    [
        # 4 query chunks of 2 tiles, key chunks of 1: each balanced pair streams (4 + 1) * 2 = 10 key chunks
        ("B=1,H=2,Sq=256,Skv=256,D=64", {"q_chunk_size": 64, "k_chunk_size": 32}),
        # key chunks longer than query chunks (pairs need 1+4, 1+4, 2+3, 2+3 key chunks)
        ("B=1,H=2,Sq=256,Skv=256,D=64", {"q_chunk_size": 32, "k_chunk_size": 64}),
        # grouped-query heads, 8 pairs on 3 cores of 3 tasks (one padding task)
        ("B=1,H=4,Hkv=2,Sq=256,Skv=256,D=64", {"q_chunk_size": 64, "k_chunk_size": 64, "grid_x": 3, "grid_y": 1}),
        # 200 tokens, 7 tiles of which the last is ragged, in key chunks of 2 tiles: the keys padded to 8 tiles
        # with zeros, which the causal mask removes (every padded key lies after every query row)
        ("B=1,H=2,Sq=200,Skv=200,D=64", {"q_chunk_size": 64, "k_chunk_size": 64}),
    ],
)
def test_causal_flash_attention(tmp_path, shape: str, pins: dict[str, int]) -> None:
    path, report = _attention_report(tmp_path, shape, pins, causal=True)
    assert report.pcc >= PCC_MIN, report.pcc
    assert report.traffic_equal, report.differences()
    qc, kc = pins["q_chunk_size"] // 32, pins["k_chunk_size"] // 32
    cores = int(path.read_text().split("WORKING_CORES = ")[1].split()[0])
    assert report.simulated.dram_read_tiles["mask_index"] == cores * 2 * (qc + kc)
    assert "Note:" not in path.read_text()


@pytest.mark.slow
def test_causal_tasks_of_unequal_work_move_each_cores_own_tiles(tmp_path) -> None:
    """n_q = 3: the middle chunk's task streams 4 key chunks, the pair (0, 2) streams 2 + 6; the model counts
    each core at its own task (the latency at the slowest), so it predicts exactly the simulator's reads."""
    path, report = _attention_report(
        tmp_path,
        "B=1,H=2,Sq=192,Skv=192,D=64",
        {"q_chunk_size": 64, "k_chunk_size": 32, "per_core_H*Sq": 1},
        causal=True,
    )
    assert report.pcc >= PCC_MIN, report.pcc
    assert report.traffic_equal, report.differences()
    # 4 tasks: two pairs of 8 key chunks, two middle chunks of 4 (the slowest core's count would be 4 x 8)
    assert report.simulated.dram_read_tiles["k"] == report.predicted.dram_read_tiles["k"] == (8 + 8 + 4 + 4) * 2
    assert "Note:" not in path.read_text()


def test_attention_candidates_the_export_does_not_write_yet_say_why() -> None:
    from loom_explorer.targets.ttlang.exporter import unsupported_reason

    hw = load_hardware("wormhole_n150")
    for options in (set(), {"causal"}):
        session = Session(
            hw, make_problem(load_program("flash_attention"), "B=1,H=2,Sq=256,Skv=256,D=64", options=options)
        )
        reasons = {s.candidate.name: unsupported_reason(s) for s in session.schedules}
        assert [n for n, r in reasons.items() if r is None] == [
            "H*Sq@xy|q=dram,k=dram,v=dram" + ("|balanced" if options else "")
        ]
        assert all("flattened layout" in r for r in reasons.values() if r is not None)


GROUPED = ("B=1,H=4,Hkv=2,Sq=128,Skv=128,D=64", {"q_chunk_size": 64, "k_chunk_size": 64, "grid_x": 2, "grid_y": 1})


@pytest.mark.slow
def test_grouped_causal_attention_verifies_against_the_problems_own_reference(tmp_path) -> None:
    """4 query heads on 2 key/value heads, causal: the file keeps HKV = 2 and verify's reference (grouped
    attention from the schedule's problem, not the file's check) agrees. A kernel that pairs the query heads
    with the wrong key/value heads fails verify even when its own check is edited to agree with it (and
    passes, run on its own): verify never takes the file's word."""
    from loom_explorer.deploy.simulator import simulate
    from loom_explorer.deploy.verify import verify_kernel_file

    shape, pins = GROUPED
    path, report = _attention_report(tmp_path, shape, pins, causal=True, compile_it=True)
    assert "B, H, HKV, SQ, SKV, D = 1, 4, 2, 128, 128, 64" in path.read_text()
    assert report.passed and report.pcc >= PCC_MIN, (report.pcc, report.differences())
    wrong = path.read_text()
    for old, new in (
        ("(head % H) // GROUP", "(head % H) % HKV"),  # query head h reads key/value head h % HKV
        ("repeat_interleave(groups, dim=1)", "repeat(1, groups, 1, 1)"),
    ):  # and its own check agrees
        assert old in wrong
        wrong = wrong.replace(old, new)
    edited = tmp_path / "wrong_heads.py"
    edited.write_text(wrong)
    own = simulate(edited, (2, 1), timeout_seconds=300)
    assert own.pcc is not None and own.pcc >= PCC_MIN  # the file's own check is content
    bad = verify_kernel_file(edited, timeout_seconds=300, compile_it=False)
    assert bad.constants_ok and not bad.numerics_ok and not bad.passed, bad.pcc
