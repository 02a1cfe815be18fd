"""The TT-Lang writers' rules are constraints of the solve for the TT-Lang kernels (``ttlang_export``,
``model/constraints/ttlang_export.py``), solved with the real CP-SAT: the best schedule solved is one the
writer writes; a pin that breaks a rule is refused naming the rule; a schedule solved for TTNN's kernels that
breaks one is not exported as TT-Lang, and ``export`` falls back to the best one the writer writes."""

from __future__ import annotations

import dataclasses

import pytest

from loom_explorer.cli.export import best_export
from loom_explorer.export.exporter import SolvedSchedule
from loom_explorer.hardware import load_hardware
from loom_explorer.problem import KernelTarget, make_problem
from loom_explorer.program import load_program
from loom_explorer.solve.solver import Session, SolveOptions
from loom_explorer.targets.ttlang.exporter import ttlang_rule_blocker
from loom_explorer.validate import referee

SOFTMAX_SPLIT = "H@y,W@x|x=dram"  # the columns (W, 65 tiles at 2080) split over the grid's columns
ATTENTION = "B=1,H=4,Hkv=2,Sq=224,Skv=224,D=64"  # 7 tiles of queries and keys
FLAT = "H*Sq@xy|q=dram,k=dram,v=dram|balanced"  # the causal flattened split the writer writes


def _softmax(target: KernelTarget) -> Session:
    return Session(load_hardware("wormhole_n150"), make_problem(load_program("softmax"), "H=64,W=2080", target=target))


def _attention(pins: dict[str, int], causal: bool = True):
    problem = make_problem(
        load_program("flash_attention"), ATTENTION, options={"causal"} if causal else set(), target=KernelTarget.ttlang
    )
    flat = FLAT if causal else FLAT.removesuffix("|balanced")
    return Session(load_hardware("wormhole_n300"), problem).solve(pins, SolveOptions(), candidates=[flat])[0]


def test_the_rules_are_the_tt_lang_targets_only() -> None:
    ttnn, ttlang = (_softmax(t).schedule(SOFTMAX_SPLIT) for t in (KernelTarget.ttnn, KernelTarget.ttlang))
    assert "ttlang_export" not in ttnn.families
    (rule,) = [c for c in ttlang.constraints if c.family == "ttlang_export"]
    assert rule.name == "ttlang_export[per_core_W|W]" and rule.kind == "divides"


def test_a_split_of_the_columns_is_solved_even_and_an_uneven_one_is_named() -> None:
    session = _softmax(KernelTarget.ttlang)
    (result,) = session.solve({}, SolveOptions(), candidates=[SOFTMAX_SPLIT])
    values = result.solution.values()
    assert 65 % values["per_core_W"] == 0 and values["grid_x"] * values["per_core_W"] == 65
    verdict = referee(session.schedule(SOFTMAX_SPLIT), {**values, "per_core_W": 9, "grid_x": 8})
    assert not verdict.legal
    assert any(
        v.startswith(
            "ttlang_export[per_core_W|W]: TT-Lang export splits the columns evenly: per_core_W = 9 "
            "does not divide the 65 tiles of W"
        )
        for v in verdict.violations
    ), verdict.violations


def test_a_ttnn_schedule_breaking_a_rule_is_not_exported_and_export_falls_back(capsys) -> None:
    """Solved for TTNN's kernels, the split candidate takes 9 columns a core (8 x 9 >= 65): the TT-Lang writer
    cannot write it; the exporter says why and writes the best schedule it can."""
    session = _softmax(KernelTarget.ttnn)
    results = [
        *session.solve({"per_core_W": 9}, SolveOptions(), candidates=[SOFTMAX_SPLIT]),
        *session.solve({}, SolveOptions(), candidates=["H@xy|x=dram"]),
    ]  # whole rows a core
    solved = [
        SolvedSchedule(session.schedule(r.candidate_name), r, "wormhole_n150", "softmax", SolveOptions())
        for r in results
        if r.solution is not None
    ]
    split = next(s for s in solved if s.result.candidate_name == SOFTMAX_SPLIT)
    why = ttlang_rule_blocker(split.hw, split.problem, split.schedule, split.values)
    assert why == (
        "TT-Lang export splits the columns evenly: per_core_W = 9 does not divide the 65 tiles of W "
        "(a padded column would enter every reduction)"
    )
    chosen, text = best_export(solved, "ttlang")  # the split first, as if it were the best
    assert chosen.result.candidate_name == "H@xy|x=dram" and "GRID_X" in text
    assert f"better ones have none ({why})" in capsys.readouterr().err


def test_plain_attention_is_solved_in_whole_key_chunks() -> None:
    assert 224 % _attention({}, causal=False).solution.values()["k_chunk_size"] == 0


def test_causal_attention_keeps_the_last_query_chunk_within_the_keys_padded_or_not() -> None:
    """Under the causal mask (Sq = Skv) a padded key lies after every query row: 64-element key chunks pad
    the 7 key tiles to 8, which 64-element query chunks (8 tiles with their padding) do not pass."""
    values = _attention({}).solution.values()
    n_q, n_k = -(-7 * 32 // values["q_chunk_size"]), -(-7 * 32 // values["k_chunk_size"])
    assert n_q * values["q_chunk_size"] <= n_k * values["k_chunk_size"]
    assert _attention({"q_chunk_size": 64, "k_chunk_size": 64}).solution is not None


@pytest.mark.parametrize(
    "pins,causal,rule,words",
    [
        (
            {"q_chunk_size": 64, "k_chunk_size": 32},
            True,
            "ttlang_export[causal_last_chunk]",
            "under the causal mask Sq = 224 is not a whole number of query chunks, and the last chunk's padded rows "
            "reach past the keys: n_q * q chunk = 8 tiles, the key chunks hold 7",
        ),
        (
            {"k_chunk_size": 64},
            False,
            "ttlang_export[k_chunk_size|Skv]",
            "Skv = 224 is not a whole number of key chunks (k_chunk_size = 64)",
        ),
    ],
)
def test_a_pin_breaking_a_rule_is_refused_with_the_real_reason(
    pins: dict[str, int], causal: bool, rule: str, words: str
) -> None:
    result = _attention(pins, causal)
    assert result.solution is None and result.conflict is not None
    assert rule in result.conflict.constraints and words in result.conflict.message, result.conflict
    assert "more query than key tiles" not in result.conflict.message


def test_a_tt_lang_solve_keeps_the_rules_the_writer_checks() -> None:
    """The same problem solved for TT-Lang has no rule to break (the writer's check agrees)."""
    session = _softmax(KernelTarget.ttlang)
    (result,) = session.solve({}, SolveOptions(), candidates=[SOFTMAX_SPLIT])
    schedule = session.schedule(SOFTMAX_SPLIT)
    assert ttlang_rule_blocker(schedule.hardware, schedule.problem, schedule, result.solution.values()) is None
    ttnn_problem = dataclasses.replace(schedule.problem, target=KernelTarget.ttnn)
    assert ttlang_rule_blocker(schedule.hardware, ttnn_problem, schedule, result.solution.values()) is None
