"""Data shipped with the package: the published Tenstorrent measurements in ``published/``.

``published/`` holds the measurements the model is checked and calibrated against (GEMM timings and the
configs they ran, SDPA timings, NoC packet-size and DRAM figures), transcribed from public
tenstorrent/tt-metal files; ``published/README.md`` gives each file's source (repository file, commit,
table) and licence; ``published/captures/`` holds device-profiler captures of real models (``CAPTURES``,
``capture_path``; ``CAPTURE_ROLES`` says which fit the capture calibration and which only check it).
``model_error.csv`` is the model's own measured error per kernel family on those measurements
(``accuracy/family_error.py`` makes and reads it); ``capture_calibration.csv`` the capture calibration's
per-family factors (``accuracy/term_calibration.py`` reads it, ``accuracy/calibration_rows.py`` makes it);
``collective_calibration.csv`` the collective model's two constants (``accuracy/collective_calibration.py``).
A wheel also carries the hardware descriptions and tile programs here (``data/hw``, ``data/kernels``;
pyproject's force-include); a checkout keeps those at the top level (``loom_explorer.shipped.shipped_dir``
finds both).
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
    "fabric_bandwidth.csv",
    "fabric_latency.csv",
    "collective_times.csv",
    "ccl_bandwidth_wormhole.csv",
    "ccl_bandwidth_blackhole.csv",
    "ethernet_facts.md",
)

# device-profiler captures of real models (tenstorrent/tt-perf-report tests/data, tenstorrent/ttnn-visualizer's
# demo report; published/README.md): name -> what ran
CAPTURES: dict[str, str] = {
    "wh_clip_encoder_2.csv.gz": "CLIP encoder, Wormhole n150 (8x8)",
    "bh_64_clip_encoder_1.csv.gz": "CLIP encoder, Blackhole on an 8x8 grid",
    "bh_8xp150_deepseek_v3_d_p.csv.gz": "DeepSeek-V3 layer (prefill), 8 Blackhole p150",
    "bh_p100_dlv3.csv.gz": "DeepLabV3 segmentation, Blackhole p100a",
    "bh20_oft.csv.gz": "OFT 3-D object detection, Blackhole on 20 cores",
    "ops_perf_results_2025_02_16_18_11_10.csv.gz": "SegFormer encoder, older format, chip not named",
    "ops_perf_results_2025_09_18_11_39_20.csv.gz": "OFT 3-D object detection, older run, chip not named",
    "bh_invalid_trace_decode_window.csv.gz": "LLM decoder layer (decode), Blackhole, 13 of 20 durations invalid",
    "ops_perf_results_2026_07_29_21_38_48.csv.gz": "North-Mini decoder layer (prefill, 128 tokens), p300c chip",
    "tt_forge_fe_mnist_linear.csv.gz": "MNIST linear classifier compiled by tt-forge, chip not named",
    "ops_perf_results_fused_prefill_final_2026_07_22_17_56_07.csv.gz": (
        "GPT-OSS-20B decoder layer (prefill, 17 tokens) and its weight preparation, Blackhole p300c chip"
    ),
}

# the chip and worker grid of the captures that do not name them (no DEVICE ARCH column), or that name the
# architecture but run on a board no shipped hardware file is (a Blackhole p300c chip: the p100a's 11x10 grid
# with the p150a's 8 DRAM banks), as published/README.md states and argues them: name -> (shipped hardware,
# (columns, rows))
CAPTURE_CHIPS: dict[str, tuple[str, tuple[int, int]]] = {
    "ops_perf_results_2025_02_16_18_11_10.csv.gz": ("wormhole_n150", (8, 8)),
    "ops_perf_results_2025_09_18_11_39_20.csv.gz": ("blackhole_p150a", (5, 4)),
    "ops_perf_results_2026_07_29_21_38_48.csv.gz": ("blackhole_p150a", (11, 10)),
    "tt_forge_fe_mnist_linear.csv.gz": ("wormhole_n150", (8, 8)),
    "ops_perf_results_fused_prefill_final_2026_07_22_17_56_07.csv.gz": ("blackhole_p150a", (11, 10)),
}


# each capture's role in the capture calibration (``accuracy/term_calibration.py``): ``fit`` captures' rows
# fit the shipped scale factors; ``check`` captures' rows never do, and say how the shipped calibration
# predicts models it has never seen (published/README.md, "Fitting and checking")
CAPTURE_ROLES: dict[str, str] = {
    "wh_clip_encoder_2.csv.gz": "fit",
    "bh_64_clip_encoder_1.csv.gz": "fit",
    "bh_8xp150_deepseek_v3_d_p.csv.gz": "fit",
    "bh_p100_dlv3.csv.gz": "check",
    "bh20_oft.csv.gz": "fit",
    "ops_perf_results_2025_02_16_18_11_10.csv.gz": "check",
    "ops_perf_results_2025_09_18_11_39_20.csv.gz": "fit",
    "bh_invalid_trace_decode_window.csv.gz": "fit",
    "ops_perf_results_2026_07_29_21_38_48.csv.gz": "fit",
    "tt_forge_fe_mnist_linear.csv.gz": "check",
    "ops_perf_results_fused_prefill_final_2026_07_22_17_56_07.csv.gz": "check",
}

# the network each capture ran (leave-one-network-out folds: two captures of one network share its shapes)
CAPTURE_NETWORKS: dict[str, str] = {
    "wh_clip_encoder_2.csv.gz": "CLIP encoder",
    "bh_64_clip_encoder_1.csv.gz": "CLIP encoder",
    "bh_8xp150_deepseek_v3_d_p.csv.gz": "DeepSeek-V3",
    "bh_p100_dlv3.csv.gz": "DeepLabV3",
    "bh20_oft.csv.gz": "OFT",
    "ops_perf_results_2025_02_16_18_11_10.csv.gz": "SegFormer",
    "ops_perf_results_2025_09_18_11_39_20.csv.gz": "OFT",
    "bh_invalid_trace_decode_window.csv.gz": "Llama-3-8B-shaped decoder",
    "ops_perf_results_2026_07_29_21_38_48.csv.gz": "North-Mini-Code",
    "tt_forge_fe_mnist_linear.csv.gz": "MNIST linear",
    "ops_perf_results_fused_prefill_final_2026_07_22_17_56_07.csv.gz": "GPT-OSS-20B",
}


class PublishedDataMissing(FileNotFoundError):
    """A published data file is not where the package keeps it; the message names the file."""


def published_path(name: str) -> Path:
    """The path of the published data file ``name`` (a bare file name, e.g. ``"sdpa_perf.csv"``).

    Raises ``PublishedDataMissing`` naming the file when it is not in ``published/`` (or when ``name``
    is a path rather than a file name).
    """
    if not name or Path(name).name != name:
        raise PublishedDataMissing(f"published data file {name!r}: give a bare file name, e.g. {PUBLISHED_FILES[0]!r}")
    path = PUBLISHED_DIR / name
    if not path.is_file():
        known = ", ".join(sorted(p.name for p in PUBLISHED_DIR.glob("*") if p.is_file())) or "none"
        raise PublishedDataMissing(f"published data file {name!r} is missing: expected {path} (files there: {known})")
    return path


def capture_path(name: str) -> Path:
    """The path of the shipped device-profiler capture ``name`` (a key of ``CAPTURES``); PublishedDataMissing
    for any other name."""
    if name not in CAPTURES:
        raise PublishedDataMissing(f"capture {name!r} is not shipped; shipped: {', '.join(CAPTURES)}")
    path = PUBLISHED_DIR / "captures" / name
    if not path.is_file():
        raise PublishedDataMissing(f"capture {name!r} is missing: expected {path}")
    return path
