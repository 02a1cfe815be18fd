"""Capture-calibration rows made up for tests: every field a ``CalibrationRow`` needs, and rows whose measured
times are known scales applied to random latency terms (``synthetic``)."""

from __future__ import annotations

import random

from loom_explorer.accuracy.calibration_row import CalibrationRow

TERMS = ("launch", "fill", "compute", "data_movement", "write_back")


def row(
    terms: dict[str, int],
    measured_ns: float,
    *,
    family: str = "fam",
    kernel: str = "k1",
    arch: str = "wormhole",
    capture: str = "c1",
    clock_ghz: float = 1.0,
) -> CalibrationRow:
    return CalibrationRow(
        capture=capture,
        role="fit",
        hardware=f"{arch}_x",
        arch=arch,
        family=family,
        kernel=kernel,
        op_code="Op",
        shape_key=f"{kernel} {sorted(terms.items())}",
        measured_ns=measured_ns,
        clock_ghz=clock_ghz,
        terms_cycles=tuple(terms.items()),
        cores=64,
        work_tiles=100.0,
        tensor_bytes=1e5,
    )


TRUE_GROUP = {"launch": 0.4, "fill": 1.5, "compute": 2.5, "data_movement": 0.8, "write_back": 1.0}
TRUE_KERNEL = {"k1": 1.0, "k2": 1.3}
TRUE_ARCH = {"wormhole": 1.0, "blackhole": 0.9}


def true_ns(terms: dict[str, int], kernel: str, arch: str, clock_ghz: float) -> float:
    return sum(TRUE_GROUP[t] * c for t, c in terms.items()) * TRUE_KERNEL[kernel] * TRUE_ARCH[arch] / clock_ghz


def synthetic(n: int, seed: int = 0, capture: str = "c1") -> list[CalibrationRow]:
    """Rows whose measured time is the true scales applied to random terms (every group varied)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        terms = {"launch": 4000, **{t: rng.randint(0, 50_000) for t in TERMS[1:]}}
        kernel, arch = rng.choice(("k1", "k2")), rng.choice(("wormhole", "blackhole"))
        clock = 1.0 if arch == "wormhole" else 1.35
        out.append(
            row(terms, true_ns(terms, kernel, arch, clock), kernel=kernel, arch=arch, clock_ghz=clock, capture=capture)
        )
    return out
