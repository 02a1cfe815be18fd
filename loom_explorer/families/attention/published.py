"""The published SDPA op times of the ``flash_attention`` kernel: their rows read and predicted, for
``loom-explorer accuracy --kernel flash_attention`` and ``calibrate --kernel flash_attention``
(``published_runs``; the statistics are ``published_scoring``'s).

The rows (``loom_explorer/data/published/sdpa_op_times.csv``, one per timing of ``sdpa_perf.csv`` that states a
whole single-chip problem: shape, causal or not, chunk sizes and grid) are predicted with exactly the
config each ran (``families/attention/ttnn_config.py``: ttnn's SDPA split of the flattened candidate, its
sub-blocks and buffers). The ``kernel`` column says which SDPA kernel a row timed:

* ``streaming``: a call without ``precision`` and a bf16 Dst (ttnn's default);
* ``accurate``: the ACCURATE recipe, named or routed to by an fp32-Dst call on Blackhole;
* ``standard``, ``balanced``, ``fast``: the STANDARD, BALANCED and FAST recipes, named by the caller;
* ``legacy``: the fp32-Dst loop those calls ran before precision routing (no longer in ttnn).

The model describes ``streaming`` and ``accurate`` (``MODELLED``: ``families/attention/quantities.py``,
``ttnn_sdpa_kernel``); the other rows are listed as not modelled, never scored against a kernel they did
not time.

Checked in every row: ``card`` (p150), ``B``, ``H``, ``Hkv``, ``Sq``, ``Skv``, ``D``, ``q_chunk``,
``k_chunk``, ``grid_x``, ``grid_y`` (whole numbers >= 1, the grid within the card's chip), ``causal``,
``fp32_dest`` and ``dtype_stated`` (True/False), ``q_dtype``, ``kv_dtype`` (data formats), ``math_fidelity``,
``kernel`` (one of ``KERNELS``) and ``time_ns`` (a time > 0). ``dtype_stated`` False marks rows whose
source gives no data format; they are predicted in bfloat16 (ttnn's default), which the report says.

Rows with ``time_derived`` True are per-core throughputs (one core, K/V resident in L1) turned into a time,
``4 * Sq * Skv * D`` FLOP over the printed TFLOP/s; the model reads K/V from DRAM there, which on one core
never binds.

Each scored row carries its regimes (``regimes``): the kernel, one core or the chip, causal or not, grouped-query
(``Hkv < H``) or not, the chunk sizes and the head dimension, so the error is reported per regime as well
as over all rows (``published_scoring``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from loom_explorer.accuracy.csv_input import CellError, RowIssue, boolean, positive_int, positive_time
from loom_explorer.accuracy.published_table import (
    CARDS,
    CellChecker,
    card_cell,
    checked_records,
    data_format_cell,
    fidelity_cell,
    read_table,
)
from loom_explorer.data import published_path
from loom_explorer.families.attention.ttnn_config import TtnnSdpaConfig, evaluate_sdpa_config
from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.schema import DataFormat, Fidelity, HardwareSpec
from loom_explorer.hashing import hardware_sha256
from loom_explorer.problem import Problem, ProblemError, make_problem
from loom_explorer.program import load_program
from loom_explorer.program.structure import program_family
from loom_explorer.targets.ttnn.evaluate import ConfigError

KERNEL = "flash_attention"  # the kernel the rows time
ERROR_FAMILY = "sdpa"  # the family of model_error.csv its figures are: ttnn's prefill SDPA op
SDPA_DATA = "sdpa_op_times.csv"
KERNELS = ("streaming", "accurate", "standard", "balanced", "fast", "legacy")
MODELLED = ("streaming", "accurate")
SHAPE = ("B", "H", "Hkv", "Sq", "Skv", "D")
REQUIRED = (
    "card",
    "kernel",
    *SHAPE,
    "causal",
    "q_chunk",
    "k_chunk",
    "grid_x",
    "grid_y",
    "q_dtype",
    "kv_dtype",
    "dtype_stated",
    "math_fidelity",
    "fp32_dest",
    "time_ns",
)


def _kernel_cell(text: str) -> str:
    if text.strip() not in KERNELS:
        raise CellError(text, f"not an SDPA kernel ({', '.join(KERNELS)})")
    return text.strip()


@dataclass(frozen=True, slots=True)
class SdpaMeasured:
    """One checked row of an SDPA op-time CSV (``line``: its line in the file)."""

    line: int
    source: dict[str, str]
    card: str
    kernel: str
    shape: tuple[tuple[str, int], ...]
    options: frozenset[str]  # the program options it ran with: causal when the ``causal`` column says so
    config: TtnnSdpaConfig
    q_dtype: DataFormat
    kv_dtype: DataFormat
    dtype_stated: bool
    fidelity: Fidelity
    fp32_dest: bool
    time_ns: float

    def problem(self) -> Problem:
        """The flash_attention problem this row timed, in its formats (q and the output in ``q_dtype``, k and v
        in ``kv_dtype``), fidelity and Dst mode."""
        program = load_program(KERNEL)
        q, k, v = program_family(program).analyse(program).streamed
        return make_problem(
            program,
            dict(self.shape),
            self.q_dtype,
            self.fidelity,
            formats={k: self.kv_dtype, v: self.kv_dtype},
            fp32_acc=self.fp32_dest,
            options=self.options,
        )


def read_sdpa_measurements(path: str | Path) -> tuple[list[SdpaMeasured], list[RowIssue]]:
    """Every row of an SDPA op-time CSV, checked (module docstring): the good rows and the unusable ones."""
    file, header, records = read_table(path, REQUIRED)
    check = CellChecker(
        file,
        header,
        {
            "card": card_cell,
            "kernel": _kernel_cell,
            **dict.fromkeys((*SHAPE, "q_chunk", "k_chunk", "grid_x", "grid_y"), positive_int),
            "causal": boolean,
            "dtype_stated": boolean,
            "fp32_dest": boolean,
            "math_fidelity": fidelity_cell,
            "q_dtype": data_format_cell,
            "kv_dtype": data_format_cell,
            "time_ns": positive_time,
        },
        unique=("time_ns",),
    )
    good: list[SdpaMeasured] = []
    issues: list[RowIssue] = []
    for line, cells, v in checked_records(file, header, records, check, issues):
        bad = [c for c in ("q_chunk", "k_chunk") if v[c] % 32]
        if bad:
            issues.extend(
                RowIssue(file, line, c, "not a multiple of 32", f"{v[c]} is not a multiple of 32") for c in bad
            )
            continue
        config = TtnnSdpaConfig(
            compute_with_storage_grid_size=(v["grid_x"], v["grid_y"]),
            q_chunk_size=v["q_chunk"],
            k_chunk_size=v["k_chunk"],
            exp_approx_mode=None,
        )
        good.append(
            SdpaMeasured(
                line,
                dict(zip(header, cells, strict=True)),
                v["card"],
                v["kernel"],
                tuple((d, v[d]) for d in SHAPE),
                frozenset({"causal"}) if v["causal"] else frozenset(),
                config,
                v["q_dtype"],
                v["kv_dtype"],
                v["dtype_stated"],
                v["math_fidelity"],
                v["fp32_dest"],
                v["time_ns"],
            )
        )
    return good, issues


@dataclass(frozen=True, slots=True)
class SdpaRow:
    """One scored row: the measurement, the model's prediction of exactly its config (None: the model finds
    it illegal, ``conflict`` says why), the candidate and its latency breakdown."""

    measured: SdpaMeasured
    predicted_ns: float | None
    conflict: str = ""
    breakdown: dict[str, int] = field(default_factory=dict)
    candidate: str = ""
    hardware: str = ""
    hardware_sha256: str = ""

    @property
    def error_pct(self) -> float | None:
        """``100 * (predicted - measured) / measured``; None without a prediction."""
        if self.predicted_ns is None:
            return None
        return 100.0 * (self.predicted_ns - self.measured.time_ns) / self.measured.time_ns

    def regimes(self) -> dict[str, str]:
        """The row's regime in each of ``REGIME_KINDS``."""
        shape = dict(self.measured.shape)
        cfg = self.measured.config
        grid = self.measured.config.compute_with_storage_grid_size
        return {
            "kernel": self.measured.kernel,
            "cores": "one core, K/V in L1" if grid == (1, 1) else "chip",
            "mask": "causal" if "causal" in self.measured.options else "non-causal",
            "heads": "GQA" if shape["Hkv"] < shape["H"] else "MHA",
            "chunks": f"q{cfg.q_chunk_size}/k{cfg.k_chunk_size}",
            "head dim": f"D{shape['D']}",
        }


REGIME_KINDS = ("kernel", "cores", "mask", "heads", "chunks", "head dim")


def predict_sdpa(rows: list[SdpaMeasured], hardware: dict[str, HardwareSpec] | None = None) -> list[SdpaRow]:
    """Each row predicted with its card's hardware (``hardware[card]``, else the shipped file)."""
    chosen = dict(hardware or {})
    out = []
    for m in rows:
        hw = chosen.setdefault(m.card, load_hardware(CARDS[m.card]))
        if m.kernel not in MODELLED:
            out.append(
                SdpaRow(
                    m,
                    None,
                    conflict=f"not modelled: the model describes the {' and '.join(MODELLED)} "
                    f"kernels, this row timed {m.kernel}",
                )
            )
            continue
        try:
            evaluated = evaluate_sdpa_config(hw, m.problem(), m.config)
        except (ConfigError, ProblemError) as exc:
            out.append(SdpaRow(m, None, conflict=str(exc)))
            continue
        result = evaluated.result
        if result.solution is None:
            out.append(SdpaRow(m, None, conflict=result.conflict.message if result.conflict else result.status))
            continue
        cycles = result.solution.latency_cycles
        out.append(
            SdpaRow(
                m,
                hw.cycles_to_us(cycles) * 1e3,
                breakdown=dict(result.solution.breakdown),
                candidate=evaluated.schedule.candidate.name,
                hardware=hw.name,
                hardware_sha256=hardware_sha256(hw),
            )
        )
    return out


def shipped_data() -> Path:
    return published_path(SDPA_DATA)
