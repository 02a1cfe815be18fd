"""`accuracy` and `ingest` on large inputs: rows per second at N rows and at N/10 (linearity).

    python benchmarks/large_inputs.py                       # 100,000 rows, and 10,000 for the ratio
    python benchmarks/large_inputs.py --rows 20000 --ops 500 --no-small
    python benchmarks/large_inputs.py --quick               # 1,000 rows of 40 ops: a smoke run (seconds)

Generates into a temporary folder, with a fixed seed:

* a measurement CSV in the columns of ``gemm_flops_calibration.csv`` (and its manual-configs CSV): ``--ops``
  distinct measured ops (card, M, K, N, dtype, fidelity; M, K, N multiples of 32 drawn log-uniformly from
  32..8192, both cards, the three dtypes and fidelities; a tenth hand-tuned with a 2-D config in the configs
  file), each row one of them with its time perturbed by +-10%, half the rows ``use_trace=False`` as in the
  published file;
* a device-profiler CSV in the columns of ``tests/accuracy/data/ops_perf_results_v2.csv``: ``--ops``
  distinct matmuls (2-D multicast configs sized to the shape, a quarter 1-D) and ``--ops // 100`` SDPAs,
  interleaved with the other ops of a model trace (tilize, untilize, signposts, host ops): about 45% of the
  rows are matmul or SDPA.

Each command runs end to end through ``loom_explorer.cli.main`` in a fresh Python process (so no cache of
one run helps the next); the time is that of ``main`` (imports excluded, reported apart), wall clock and the
process's CPU time (on a machine shared with other work the CPU time is the better estimate of an idle
run). ``ingest`` records into a temporary store; ``accuracy`` prints its table (to /dev/null).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import random
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

MEASURED_HEADER = [
    "card",
    "config_kind",
    "table_heading",
    "M",
    "K",
    "N",
    "use_trace",
    "grid_x",
    "grid_y",
    "in0_sharded",
    "out_sharded",
    "in0_storage",
    "in1_storage",
    "out_storage",
    "dtype",
    "math_fidelity",
    "time_ns",
    "tflops",
    "host_util_pct",
    "device_util_pct",
    "derived_device_kernel_ns",
    "derived_device_tflops",
]
CONFIG_HEADER = [
    "card",
    "grid_x",
    "grid_y",
    "dtype",
    "M",
    "K",
    "N",
    "program_config",
    "transpose_mcast",
    "in0_block_w",
    "per_core_M",
    "per_core_N",
    "out_block_h",
    "out_block_w",
    "out_subblock_h",
    "out_subblock_w",
    "in0_sharded",
    "out_sharded",
]
GRIDS = {"n150": (8, 8), "p150": (13, 10)}
DTYPES = ("BFLOAT16", "BFLOAT8_B", "BFLOAT4_B")
FIDELITIES = ("LoFi", "HiFi2", "HiFi4")
FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "accuracy" / "data" / "ops_perf_results_v2.csv"


def _extent(rng: random.Random, low_tiles: int = 1, high_tiles: int = 256) -> int:
    return 32 * round(math.exp(rng.uniform(math.log(low_tiles), math.log(high_tiles))))


def _time_ns(m: int, k: int, n: int) -> float:
    """A plausible time: 2MKN flops at ~60 TFLOP/s, the operands at ~200 GB/s, plus 8 us."""
    return max(2 * m * k * n / 60e3, 2 * (m * k + k * n + m * n) / 200) + 8000


def _subblock(h: int, w: int) -> tuple[int, int]:
    return next(
        (a, b)
        for a, b in ((4, 2), (2, 4), (8, 1), (1, 8), (2, 2), (4, 1), (1, 4), (2, 1), (1, 2), (1, 1))
        if h % a == 0 and w % b == 0 and a * b <= 8
    )


def measurement_files(folder: Path, rows: int, ops: int, seed: int) -> tuple[Path, Path]:
    rng = random.Random(seed)
    distinct: dict[tuple[str, int, int, int, str, str], float] = {}
    while len(distinct) < ops:
        m, k, n = _extent(rng), _extent(rng), _extent(rng)
        key = (rng.choice(tuple(GRIDS)), m, k, n, rng.choice(DTYPES), rng.choice(FIDELITIES))
        distinct[key] = _time_ns(m, k, n)
    keys = list(distinct)
    manual = set(rng.sample(range(len(keys)), len(keys) // 10))
    configs = folder / "configs.csv"
    with configs.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CONFIG_HEADER)
        for i in sorted(manual):
            card, m, k, n, dtype, _ = keys[i]
            gx, gy = GRIDS[card]
            pm, pn, kt = math.ceil(m / 32 / gy), math.ceil(n / 32 / gx), k // 32
            sh, sw = _subblock(pm, pn)
            ibw = max(d for d in (1, 2, 4, 8) if kt % d == 0)
            w.writerow(
                [
                    card,
                    gx,
                    gy,
                    dtype,
                    m,
                    k,
                    n,
                    "MatmulMultiCoreReuseMultiCastProgramConfig",
                    "False",
                    ibw,
                    pm,
                    pn,
                    pm,
                    pn,
                    sh,
                    sw,
                    "False",
                    "False",
                ]
            )
    data = folder / "measured.csv"
    with data.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(MEASURED_HEADER)
        for _ in range(rows):
            i = rng.randrange(len(keys))
            card, m, k, n, dtype, fidelity = keys[i]
            gx, gy = GRIDS[card]
            t = distinct[keys[i]] * rng.uniform(0.9, 1.1)
            w.writerow(
                [
                    card,
                    "manual" if i in manual else "out_of_box",
                    "generated",
                    m,
                    k,
                    n,
                    rng.choice(("True", "False")),
                    gx,
                    gy,
                    "",
                    "",
                    "DRAM",
                    "DRAM",
                    "DRAM",
                    dtype,
                    fidelity,
                    f"{t:.2f}",
                    "",
                    "",
                    "",
                    "",
                    "",
                ]
            )
    return data, configs


def _matmul_attributes(m: int, k: int, n: int, fidelity: str, one_d: bool) -> tuple[str, int]:
    mt, kt, nt = m // 32, k // 32, n // 32
    ibw = max(d for d in (1, 2, 4) if kt % d == 0)
    compute = (
        f"WormholeComputeKernelConfig(math_fidelity={fidelity};math_approx_mode=0;fp32_dest_acc_en=0;"
        "packer_l1_acc=1;dst_full_sync_en=0;throttle_level=ThrottleLevel::NO_THROTTLE)"
    )
    if one_d:
        pn = math.ceil(nt / 64)
        sh, sw = _subblock(mt, pn)
        config = (
            f"MatmulMultiCoreReuseMultiCast1DProgramConfig(compute_with_storage_grid_size=8-8;in0_block_w={ibw};"
            f"out_subblock_h={sh};out_subblock_w={sw};out_block_h={mt};out_block_w={pn};per_core_M={mt};"
            f"per_core_N={pn};fuse_batch=1;fused_activation=std::nullopt;mcast_in0=1;gather_in0=0;hop_cores={{}};"
            "num_global_cb_receivers=1;untilize_out=0)"
        )
        cores = min(64, math.ceil(nt / pn))
    else:
        pm, pn = math.ceil(mt / 8), math.ceil(nt / 8)
        sh, sw = _subblock(pm, pn)
        config = (
            f"MatmulMultiCoreReuseMultiCastProgramConfig(compute_with_storage_grid_size=8-8;in0_block_w={ibw};"
            f"out_subblock_h={sh};out_subblock_w={sw};out_block_h={pm};out_block_w={pn};per_core_M={pm};"
            f"per_core_N={pn};transpose_mcast=0;fused_activation=std::nullopt;fuse_batch=0)"
        )
        cores = math.ceil(mt / pm) * math.ceil(nt / pn)
    return (
        f"{{'bcast_batch': 'true'; 'compute_kernel_config': '{compute}'; 'global_cb': 'std::nullopt'; "
        "'output_dtype': 'DataType::BFLOAT16'; 'output_mem_config': 'MemoryConfig(memory_layout="
        "TensorMemoryLayout::INTERLEAVED;buffer_type=BufferType::DRAM;shard_spec=std::nullopt;nd_shard_spec="
        "std::nullopt;created_with_nd_shard_spec=0)'; 'output_tile': 'std::nullopt'; "
        f"'program_config': '{config}'; 'transpose_a': 'false'; 'transpose_b': 'false'; "
        "'untilize_out': 'false'; 'user_core_coord': 'std::nullopt'; 'user_fused_activation': "
        "'std::nullopt'; 'user_run_batched': 'false'}"
    ), cores


def _tensor(row: dict[str, str], name: str, dims: tuple[int, int, int, int], dtype: str = "BFLOAT16") -> None:
    for axis, value in zip("WZYX", dims, strict=True):
        row[f"{name}_{axis}_PAD[LOGICAL]"] = f"{value}[{value}]"
    row[f"{name}_LAYOUT"], row[f"{name}_DATATYPE"], row[f"{name}_MEMORY"] = "TILE", dtype, "DEV_0_DRAM_INTERLEAVED"


def profiler_file(folder: Path, rows: int, ops: int, seed: int) -> Path:
    rng = random.Random(seed)
    with FIXTURE.open(newline="") as f:
        reader = csv.DictReader(f)
        header = list(reader.fieldnames or [])
        fixture = list(reader)
    others = [r for r in fixture if r["OP CODE"] in ("TilizeWithValPaddingDeviceOperation", "Untilize", "TorchPermute")]
    sdpa_row = next(r for r in fixture if r["OP CODE"] == "SDPAOperation")
    templates: list[tuple[dict[str, str], float]] = []
    for _ in range(ops):
        m, k, n = _extent(rng, 2, 128), _extent(rng, 1, 128), _extent(rng, 2, 128)
        fidelity = rng.choice(FIDELITIES)
        one_d = rng.random() < 0.25
        if one_d:
            m = 32
        attributes, cores = _matmul_attributes(m, k, n, fidelity, one_d)
        row = {
            "OP CODE": "MatmulDeviceOperation",
            "OP TYPE": "tt_dnn_device",
            "DEVICE ID": "0",
            "DEVICE ARCH": "wormhole_b0",
            "ATTRIBUTES": attributes,
            "MATH FIDELITY": fidelity,
            "CORE COUNT": str(cores),
            "AVAILABLE WORKER CORE COUNT": "64",
        }
        _tensor(row, "INPUT_0", (1, 1, m, k))
        _tensor(row, "INPUT_1", (1, 1, k, n), rng.choice(DTYPES))
        _tensor(row, "OUTPUT_0", (1, 1, m, n))
        templates.append((row, _time_ns(m, k, n)))
    for _ in range(max(1, ops // 100)):
        s, heads = 32 * rng.choice((4, 8, 16, 32, 64)), rng.choice((8, 16, 32))
        chunk = min(256, s)
        row = {
            **sdpa_row,
            "ATTRIBUTES": sdpa_row["ATTRIBUTES"].replace(
                "q_chunk_size=256;k_chunk_size=256", f"q_chunk_size={chunk};k_chunk_size={chunk}"
            ),
        }
        _tensor(row, "INPUT_0", (1, heads, s, 128))
        for name in ("INPUT_1", "INPUT_2"):
            _tensor(row, name, (1, 1, s, 128))
        _tensor(row, "OUTPUT_0", (1, heads, s, 128))
        templates.append((row, 4 * heads * s * s * 128 / 30e3 + 10000))
    path = folder / "ops_perf_results_large.csv"
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=header, extrasaction="ignore", restval="")
        w.writeheader()
        w.writerow({"OP CODE": "start", "OP TYPE": "signpost"})
        for _ in range(rows - 2):
            if rng.random() < 0.45:
                row, t = rng.choice(templates)
                w.writerow({**row, "DEVICE KERNEL DURATION [ns]": str(round(t * rng.uniform(0.9, 1.1)))})
            else:
                w.writerow(rng.choice(others))
        w.writerow({"OP CODE": "stop", "OP TYPE": "signpost"})
    return path


_CHILD = textwrap.dedent("""
    import contextlib, io, json, os, sys, time
    t0 = time.perf_counter()
    from loom_explorer.cli import main
    imported = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.process_time()
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        code = main(json.loads(sys.argv[1]))
    print(json.dumps({"code": code, "seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0,
                      "import_seconds": imported}))
""")


def timed(argv: list[str]) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(argv)], capture_output=True, text=True, check=False)
    if done.returncode != 0 or not done.stdout.strip():
        raise SystemExit(f"{argv[0]} failed:\n{done.stderr[-2000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if result["code"] != 0:
        raise SystemExit(f"{argv[0]} exited {result['code']}:\n{done.stderr[-2000:]}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--ops", type=int, default=2000, help="distinct ops per file (default 2000)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-small", action="store_true", help="skip the run at rows/10")
    parser.add_argument("--quick", action="store_true", help="1,000 rows of 40 distinct ops, no run at rows/10")
    args = parser.parse_args()
    if args.quick:
        args.rows, args.ops, args.no_small = 1000, 40, True
    sizes = [args.rows] if args.no_small else [args.rows // 10, args.rows]
    print(f"{'command':<9} {'rows':>8} {'distinct ops':>12} {'seconds':>8} {'rows/s':>8} {'cpu s':>8} {'import s':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for rows in sizes:
            sub = folder / str(rows)
            sub.mkdir()
            data, configs = measurement_files(sub, rows, args.ops, args.seed)
            profile = profiler_file(sub, rows, args.ops, args.seed)
            for name, argv in (
                ("accuracy", ["accuracy", "--data", str(data), "--configs", str(configs)]),
                ("ingest", ["ingest", str(profile), "--store", str(sub / "store.sqlite")]),
            ):
                r = timed(argv)
                print(
                    f"{name:<9} {rows:>8} {args.ops:>12} {r['seconds']:>8.2f} {rows / r['seconds']:>8.0f} "
                    f"{r['cpu_seconds']:>8.2f} {r['import_seconds']:>8.2f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
