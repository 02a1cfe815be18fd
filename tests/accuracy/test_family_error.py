"""The model's measured error per kernel family: the shipped figures are what the model scores now, the docs
state them, and the lookup and speed-up floor behave as their docstrings say."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from loom_explorer.accuracy.family_error import (
    MODEL_ERROR_FILE,
    FamilyError,
    ModelErrorFileError,
    _parse,
    error_for,
    family_errors,
    family_errors_csv,
    family_of,
    measure_family_errors,
    speedup_floor,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "accuracy.md"


def test_the_shipped_figures_are_what_the_model_scores_now() -> None:
    """Every figure but the cross-validated one (a fit per problem, a minute) is recomputed from the published
    data: a model change that moves an error without regenerating the file fails here."""
    shipped = {(f.family, f.hardware, f.basis): f for f in family_errors()}
    fresh = measure_family_errors(cross_validate=False)
    assert {(f.family, f.hardware, f.basis) for f in fresh} == {k for k in shipped if k[2] != "cross-validated"}
    for f in fresh:
        assert replace(f, run_date="") == replace(shipped[(f.family, f.hardware, f.basis)], run_date=""), f
    assert ("sdpa", "blackhole_p150a", "cross-validated") in shipped


def test_the_file_reads_back_from_its_own_text() -> None:
    assert _parse(family_errors_csv(list(family_errors())), "x") == family_errors()
    assert MODEL_ERROR_FILE.read_text(encoding="utf-8") == family_errors_csv(list(family_errors()))


def test_docs_state_every_figure() -> None:
    """docs/accuracy.md's table of the file has one line per figure, with the same numbers."""
    text = DOCS.read_text(encoding="utf-8")
    for f in family_errors():
        line = (
            f"| {f.family} | {f.hardware} | {f.basis} | {f.rows} | {f.median_abs_err_pct:.2f}% "
            f"| {f.worst_abs_err_pct:.2f}% | `{f.data}` |"
        )
        assert line in text, line
    assert re.search(r"python -m loom_explorer\.accuracy\.family_error", text)


def test_a_family_maps_to_its_figures() -> None:
    assert family_of("gemm", {"M": 32}) == "matmul"
    assert family_of("flash_attention", {"Sq": 2048}) == "sdpa"
    assert family_of("flash_attention", {"Sq": 1}) == "sdpa_decode"
    assert family_of("rmsnorm", {"H": 32}) == "rmsnorm"
    n150 = error_for("matmul", "wormhole_n150")
    assert n150 is not None and n150.hardware == "wormhole_n150" and n150.basis == "held out"
    # no SDPA timing on Wormhole: the Blackhole figure speaks, the most independent basis first, and names its chip
    sdpa = error_for("sdpa", "wormhole_n150")
    assert sdpa is not None and (sdpa.hardware, sdpa.basis) == ("blackhole_p150a", "cross-validated")
    assert sdpa.source() == f"cross-validated, {sdpa.rows} rows, blackhole_p150a"
    assert error_for("sdpa_decode", "wormhole_n150") is None
    assert error_for("rmsnorm", "blackhole_p150a") is None


def test_same_chip_comes_before_a_more_independent_basis() -> None:
    table = (
        FamilyError("f", "a", "held out", 5, 1.0, 2.0, "d", ""),
        FamilyError("f", "b", "in sample", 5, 3.0, 4.0, "d", ""),
    )
    assert error_for("f", "b", table) == table[1]
    assert error_for("f", "a", table) == table[0]
    assert error_for("f", "c", table) == table[0]


def test_speedup_floor() -> None:
    assert speedup_floor(3.0, 0.0) == 3.0
    assert speedup_floor(3.0, 50.0) == pytest.approx(1.0)  # 3 x 0.5 / 1.5
    assert speedup_floor(7.2, 80.81) == pytest.approx(7.2 * 0.1919 / 1.8081)
    assert speedup_floor(7.2, 100.0) == 0.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("family,hardware\nmatmul,x\n", "header must be family,hardware,basis"),
        (
            "family,hardware,basis,rows,median_abs_err_pct,worst_abs_err_pct,data,run_date\n"
            "matmul,x,guessed,3,1,2,d,2026-01-01\n",
            "line 2: basis 'guessed' is not one of",
        ),
        (
            "family,hardware,basis,rows,median_abs_err_pct,worst_abs_err_pct,data,run_date\n"
            "matmul,x,held out,three,1,2,d,2026-01-01\n",
            "line 2: invalid literal",
        ),
    ],
)
def test_a_bad_file_is_refused_naming_the_line(text: str, message: str) -> None:
    with pytest.raises(ModelErrorFileError, match=re.escape(message)):
        _parse(text, "model_error.csv")


@pytest.mark.slow
def test_the_capture_figures_are_today_s() -> None:
    """The kernel families' rows of ``model_error.csv`` are the captures' leave-one-capture-out errors of
    today's model and calibration (``capture_family_errors``)."""
    from loom_explorer.accuracy.family_error import CAPTURES_DATA, capture_family_errors

    shipped = [replace(f, run_date="") for f in family_errors() if f.data == CAPTURES_DATA]
    assert shipped, "model_error.csv has the captures' figures"
    assert [replace(f, run_date="") for f in capture_family_errors("")] == shipped
