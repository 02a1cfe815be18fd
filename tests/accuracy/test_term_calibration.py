"""The capture calibration's fit, its file and its gate, on rows whose true scales are known."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
from synthetic_rows import row, synthetic

from loom_explorer.accuracy.least_squares import cauchy_weights, robust_least_squares
from loom_explorer.accuracy.term_calibration import (
    ALL,
    FACTORS,
    MIN_ROWS,
    UNCALIBRATED,
    CalibrationFileError,
    OpKey,
    TermScales,
    fit_term_scales,
    gated_fit,
    grouped,
    p90,
)


def test_the_fit_recovers_the_times_of_known_scales() -> None:
    rows = synthetic(300)
    scales = fit_term_scales(rows, factors=FACTORS)
    errors = [abs(scales.predict_ns(r) / r.measured_ns - 1) for r in rows]
    assert statistics.median(errors) < 0.01 and max(errors) < 0.05
    before = [abs(r.uncalibrated_ns / r.measured_ns - 1) for r in rows]
    assert statistics.median(before) > 0.3  # the hardware file's costs were far off


def test_outliers_do_not_drag_the_fit() -> None:
    """A tenth of the rows measured 10x slower (another software version) leave the others' fit intact."""
    rows = synthetic(300)
    spoiled = [
        row(dict(r.terms_cycles), r.measured_ns * 10, kernel=r.kernel, arch=r.arch, clock_ghz=r.clock_ghz)
        if i % 10 == 0
        else r
        for i, r in enumerate(rows)
    ]
    scales = fit_term_scales(spoiled, factors=FACTORS)
    clean = [abs(scales.predict_ns(r) / r.measured_ns - 1) for i, r in enumerate(rows) if i % 10]
    assert statistics.median(clean) < 0.02


def test_the_family_scales_alone_cannot_tell_kernels_apart() -> None:
    """Without a kernel's own factor (the shipped fit's), two kernels of one family share its scales."""
    rows = synthetic(300)
    scales = fit_term_scales(rows)
    assert not any(level != "family" for _, level, _, _ in scales.log_scales)
    errors = [abs(scales.predict_ns(r) / r.measured_ns - 1) for r in rows]
    assert statistics.median(errors) > 0.05  # k2 is 1.3x k1, blackhole 0.9x wormhole: not expressible
    with pytest.raises(ValueError, match="factors"):
        fit_term_scales(rows, factors=("op_code",))


def test_a_family_with_too_few_rows_stays_uncalibrated() -> None:
    rows = synthetic(MIN_ROWS - 1)
    scales = fit_term_scales(rows)
    assert not scales.fitted("fam")
    assert all(scales.predict_ns(r) == pytest.approx(r.uncalibrated_ns) for r in rows)


def test_a_kernel_never_seen_takes_its_family_scales() -> None:
    rows = synthetic(200)
    scales = fit_term_scales(rows, factors=FACTORS)
    seen = OpKey("fam", "k1", "wormhole")
    unseen = OpKey("fam", "k9", "wormhole")
    own = math.exp(scales.log_scales[("fam", "kernel", "k1", ALL)])
    assert np.allclose(scales.scales(unseen) * own, scales.scales(seen))


def test_the_file_round_trips() -> None:
    scales = fit_term_scales(synthetic(200), factors=FACTORS)
    again = TermScales.parse(scales.to_csv(), "x.csv")
    for r in synthetic(20, seed=1):
        assert again.predict_ns(r) == pytest.approx(scales.predict_ns(r), rel=2e-4)  # 4 digits in the file
    assert again.rows == scales.rows


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("family,level\n", "header must be"),
        ("family,level,key,term,scale,rows\nfam,core,,compute,1.0,20\n", "line 2: level 'core'"),
        ("family,level,key,term,scale,rows\nfam,family,,dram,1.0,20\n", "line 2: term 'dram' of level family"),
        ("family,level,key,term,scale,rows\nfam,kernel,k1,compute,1.0,20\n", "line 2: term 'compute' of level kernel"),
        ("family,level,key,term,scale,rows\nfam,family,,compute,-2,20\n", "line 2: scale '-2'"),
        ("family,level,key,term,scale,rows\nfam,family,,compute,nan,20\n", "line 2: scale 'nan'"),
        ("family,level,key,term,scale,rows\nfam,family,,compute,1.0,many\n", "line 2:"),
    ],
)
def test_a_bad_file_names_its_line(text: str, message: str) -> None:
    with pytest.raises(CalibrationFileError, match=message):
        TermScales.parse(text, "bad.csv")


def test_the_gate_drops_a_family_whose_captures_disagree() -> None:
    """Family ``good``: two captures agree on the scales; family ``bad``: one capture says 2x slower than the
    model, the other 2x faster, so a fit on one mispredicts the other worse than the hardware file does."""
    good = [
        row(
            dict(r.terms_cycles),
            r.measured_ns,
            family="good",
            kernel=r.kernel,
            arch=r.arch,
            clock_ghz=r.clock_ghz,
            capture=c,
        )
        for c, seed in (("a", 1), ("b", 2))
        for r in synthetic(60, seed)
    ]
    bad = [
        row({"launch": 1000, "compute": 1000 * (1 + i)}, factor * 1000 * (2 + i), family="bad", capture=c)
        for c, factor in (("a", 2.0), ("b", 0.5))
        for i in range(40)
    ]
    scales = gated_fit(good + bad)
    assert scales.fitted("good") and not scales.fitted("bad")
    assert fit_term_scales(good + bad).fitted("bad")  # the ungated fit calibrates it


def test_the_gate_drops_a_family_that_a_capture_it_was_not_fitted_on_finds_worse() -> None:
    """Two big captures say 2x slower than the model, a small one (a twentieth of the rows, below the 90th
    percentile) says the model is right: the pooled median and 90th percentile improve out of sample, but the
    small capture, predicted from the big ones, gets worse, so the family stays uncalibrated."""
    rows = [
        row({"launch": 1000, "compute": 1000 * (1 + i)}, factor * 1000 * (2 + i), family="f", capture=c)
        for c, factor, n in (("a", 2.0, 80), ("b", 2.0, 80), ("c", 1.0, 8))
        for i in range(n)
    ]
    pooled_model, pooled_uncalibrated = [], []
    for held in "abc":
        inner = fit_term_scales([r for r in rows if r.capture != held])
        for r in rows:
            if r.capture == held:
                pooled_model.append(abs(inner.predict_ns(r) / r.measured_ns - 1))
                pooled_uncalibrated.append(abs(r.uncalibrated_ns / r.measured_ns - 1))
    assert statistics.median(pooled_model) < statistics.median(pooled_uncalibrated)
    assert p90(pooled_model) <= p90(pooled_uncalibrated)  # the pooled figures alone would keep it
    assert not gated_fit(rows).fitted("f")


def test_grouped_sums_a_family_own_terms_as_other() -> None:
    assert list(grouped([("compute", 5), ("epilogue", 2), ("gather", 3), ("launch", 1)])) == [1, 0, 5, 0, 0, 5]


def test_uncalibrated_is_the_sum_of_the_terms() -> None:
    r = row({"launch": 100, "compute": 300}, 1.0, clock_ghz=2.0)
    assert UNCALIBRATED.predict_ns(r) == 200.0 == r.uncalibrated_ns


def test_robust_least_squares_fits_an_exponential_despite_outliers() -> None:
    x = np.linspace(0, 2, 50)
    y = 3.0 * np.exp(1.5 * x)
    y[::10] *= 10  # five rows from another world

    def residuals(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        t = p[0] + p[1] * x  # log of the model
        return t - np.log(y), np.stack([np.ones_like(x), x], axis=1)

    fitted = robust_least_squares(residuals, np.zeros(2))
    assert fitted.x[0] == pytest.approx(math.log(3.0), abs=0.02)
    assert fitted.x[1] == pytest.approx(1.5, abs=0.02)


def test_cauchy_weights_halve_at_delta() -> None:
    assert list(cauchy_weights(np.array([0.0, 0.25, -0.25]), 0.25)) == [1.0, 0.5, 0.5]


def test_every_shipped_capture_has_a_role_and_a_network() -> None:
    from loom_explorer.data import CAPTURE_NETWORKS, CAPTURE_ROLES, CAPTURES

    assert set(CAPTURE_ROLES) == set(CAPTURES) == set(CAPTURE_NETWORKS)
    assert set(CAPTURE_ROLES.values()) == {"fit", "check"}
    # a network is fitted or checked whole: no check capture shares its shapes with a fit capture
    fitted = {CAPTURE_NETWORKS[c] for c, role in CAPTURE_ROLES.items() if role == "fit"}
    assert not any(CAPTURE_NETWORKS[c] in fitted for c, role in CAPTURE_ROLES.items() if role == "check")
