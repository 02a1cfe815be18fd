"""Fit the attention constants to published SDPA times: ``loom-explorer calibrate --kernel flash_attention``,
and how well the fit predicts problems it has not seen (``cross_validate_sdpa``).

The constants (``SDPA_CONSTANTS``) are the factors on the online softmax's per-step op costs of the two ttnn
kernels the model describes (``compute.sdpa_softmax_scale``: streaming and accurate); nothing GEMM or the
other families use is fitted, so their predictions do not move. The fit is ``calibrate``'s coordinate descent
on the mean squared log error (``scoring.log_loss``), over the modelled rows (``published.MODELLED``) of the card.

Cross-validation leaves one problem out at a time (its shape, mask, chunk sizes and grid: rows of different
kernels that timed the same problem go out together), fits on the rest from the same starting values and
predicts the rows left out (``accuracy/cross_validation.py``).
"""

from __future__ import annotations

from loom_explorer.accuracy.calibrate import CalibrationError, card_of, fit_constants, start_values, with_constants
from loom_explorer.accuracy.cross_validation import leave_groups_out
from loom_explorer.accuracy.progress import Progress
from loom_explorer.accuracy.published_table import CARDS
from loom_explorer.accuracy.scoring import log_loss
from loom_explorer.families.attention.published import MODELLED, SdpaMeasured, SdpaRow, predict_sdpa
from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.schema import HardwareSpec

SDPA_CONSTANTS = ("compute.sdpa_softmax_scale.streaming", "compute.sdpa_softmax_scale.accurate")


def sdpa_loss(rows: list[SdpaMeasured], hw: HardwareSpec, card: str) -> float:
    """The fit's loss on ``rows`` predicted with ``hw`` (``scoring.log_loss``)."""
    return log_loss([(r.predicted_ns, r.measured.time_ns) for r in predict_sdpa(rows, {card: hw})])


def modelled_rows(hw: HardwareSpec, rows: list[SdpaMeasured]) -> list[SdpaMeasured]:
    """The rows of ``hw``'s card that time a kernel the model describes."""
    card = card_of(hw)
    return [m for m in rows if m.card == card and m.kernel in MODELLED]


def fit_sdpa(
    hw: HardwareSpec, rows: list[SdpaMeasured], constants: tuple[str, ...] = SDPA_CONSTANTS
) -> dict[str, float]:
    """The fitted ``constants`` on ``rows`` (module docstring); CalibrationError when there are too few."""
    mine = modelled_rows(hw, rows)
    if len(mine) < 3:
        raise CalibrationError(f"only {len(mine)} modelled SDPA rows for {hw.name}: a fit needs at least 3")
    return fit_constants(hw, mine, card_of(hw), constants=constants, loss=sdpa_loss)


def problem_key(m: SdpaMeasured) -> tuple[object, ...]:
    """What identifies the problem a row timed, whatever kernel ran it."""
    cfg = m.config
    return m.shape, tuple(sorted(m.options)), cfg.q_chunk_size, cfg.k_chunk_size, cfg.compute_with_storage_grid_size


def _fold(
    hw: HardwareSpec, card: str, train: list[SdpaMeasured], test: list[SdpaMeasured], constants: tuple[str, ...]
) -> list[SdpaRow]:
    fitted = fit_constants(hw, train, card, constants=constants, loss=sdpa_loss) if train else {}
    return predict_sdpa(test, {card: with_constants(hw, fitted)})


def _line(row: SdpaRow) -> int:
    return row.measured.line


def cross_validate_sdpa(
    hw: HardwareSpec,
    rows: list[SdpaMeasured],
    constants: tuple[str, ...] = SDPA_CONSTANTS,
    processes: int | None = None,
    progress: Progress | None = None,
) -> tuple[int, list[SdpaRow]]:
    """(folds, every modelled row predicted by constants fitted without its problem), in file order; the
    folds run ``processes`` at a time (default one per CPU core); ``progress`` counts the folds."""
    mine = modelled_rows(hw, rows)
    return leave_groups_out(
        hw, card_of(hw), mine, problem_key, _fold, constants, _line, "problems", processes, progress
    )


def cross_validate_cards(
    measured: list[SdpaMeasured], hardware: dict[str, HardwareSpec], progress: Progress | None = None
) -> tuple[int, list[SdpaRow]]:
    """``cross_validate_sdpa`` of every card of ``measured`` in card order, from its ``hardware`` (else the
    card's shipped file): (folds, every card's held-out rows)."""
    folds, out = 0, []
    for card in sorted({m.card for m in measured}):
        name = CARDS[card]
        hw = hardware.get(card) or load_hardware(name)
        n, card_rows = cross_validate_sdpa(start_values(hw, name, SDPA_CONSTANTS), measured, progress=progress)
        folds += n
        out += card_rows
    return folds, out
