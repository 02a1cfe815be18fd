"""Data shipped with the package: the published Tenstorrent measurements in ``published/``.

``published/`` holds the measurements the model is checked and calibrated against (GEMM timings and the
configs they ran, SDPA timings, NoC packet-size and DRAM figures), transcribed from public
tenstorrent/tt-metal files; ``published/README.md`` gives each file's source (repository file, commit,
table) and licence. ``model_error.csv`` is the model's own measured error per kernel family on those
measurements (``accuracy/family_error.py`` makes and reads it). A wheel also carries the hardware
descriptions and tile programs here (``data/hw``, ``data/kernels``; pyproject's force-include); a checkout
keeps those at the top level (``loom_explorer.shipped.shipped_dir`` finds both).
"""

from __future__ import annotations

from pathlib import Path

PUBLISHED_DIR: Path = Path(__file__).resolve().parent / "published"

# every file of ``published/`` the package, its tests or its docs use
PUBLISHED_FILES: tuple[str, ...] = (
    "gemm_flops_calibration.csv",
    "gemm_manual_configs.csv",
    "gemm_flops_checking.csv",
    "gemm_benchmark_method.md",
    "sdpa_perf.csv",
    "sdpa_op_times.csv",
    "noc_dm_packet_sizes.csv",
    "noc_dram_bench.md",
)


class PublishedDataMissing(FileNotFoundError):
    """A published data file is not where the package keeps it; the message names the file."""


def published_path(name: str) -> Path:
    """The path of the published data file ``name`` (a bare file name, e.g. ``"sdpa_perf.csv"``).

    Raises ``PublishedDataMissing`` naming the file when it is not in ``published/`` (or when ``name``
    is a path rather than a file name).
    """
    if not name or Path(name).name != name:
        raise PublishedDataMissing(f"published data file {name!r}: give a bare file name, e.g. "
                                   f"{PUBLISHED_FILES[0]!r}")
    path = PUBLISHED_DIR / name
    if not path.is_file():
        known = ", ".join(sorted(p.name for p in PUBLISHED_DIR.glob("*") if p.is_file())) or "none"
        raise PublishedDataMissing(f"published data file {name!r} is missing: expected {path} "
                                   f"(files there: {known})")
    return path
