"""``loom-explorer accuracy`` and ``calibrate``: the model against a kernel's published measurements, whatever
the kernel (``--kernel``: one of ``op_mapping.published_kernels``, each a family's
:class:`~loom_explorer.accuracy.published.PublishedKernel`).

What every kernel shares is checked here, before its family's run starts: the measurement file (``--data``,
else the file the kernel ships; a flag only another kernel reads is refused by name), ``--constants`` (each
one the kernel's calibration fits), ``--hw CARD=FILE`` (a hardware file of the card's chip), and, for
``calibrate``, the output (never a shipped hardware file; an existing file only with ``--force``).
"""

from __future__ import annotations

from dataclasses import dataclass

from loom_explorer.accuracy.calibrate import chosen_constants, is_shipped
from loom_explorer.accuracy.op_mapping import published_kernel, published_kernels
from loom_explorer.accuracy.published import AccuracyRun, CalibrateRun, Console, PublishedKernel
from loom_explorer.accuracy.published_table import CARDS
from loom_explorer.data import published_path
from loom_explorer.errors import LoomError
from loom_explorer.export.files import check_target
from loom_explorer.hardware import HardwareError, load_hardware
from loom_explorer.hardware.schema import HardwareSpec

EVERY_KERNEL_TAKES = "--data, --hw, --json, --skip-bad-rows and --cross-validate"


class RunInputError(LoomError, ValueError):
    """A flag of ``accuracy`` or ``calibrate`` the kernel's measurements do not take; the message names it."""


@dataclass(frozen=True, slots=True)
class AccuracyRequest:
    """The flags of ``accuracy`` as given."""

    kernel: str
    data: str | None
    configs: str | None
    card_hw: tuple[str, ...]  # CARD=FILE
    record: bool
    skip_bad_rows: bool
    store: str | None
    json: bool
    cross_validate: bool
    constants: str | None  # --constants a,b: the constants the cross-validation refits


@dataclass(frozen=True, slots=True)
class CalibrateRequest:
    """The flags of ``calibrate`` as given."""

    kernel: str
    hw: str
    data: str | None
    configs: str | None
    output: str
    force: bool
    skip_bad_rows: bool
    cross_validate: bool
    constants: str | None  # --constants a,b


def measurement_file(published: PublishedKernel, data: str | None, flags: dict[str, object]) -> str:
    """The measurement CSV of ``published``'s kernel: ``--data``, else the file it ships (``--data`` is
    required when it ships none); ``flags`` it does not take (``PublishedKernel.options``) are refused by
    name, as the options of the kernels that take them."""
    given = [name for name, value in flags.items() if value and name not in published.options]
    if given:
        owners = [p.title for p in published_kernels() if any(name in p.options for name in given)]
        raise RunInputError(
            f"{', '.join(given)}: {' and '.join(owners) or 'other kernels'} options; --kernel {published.kernel} "
            f"takes {EVERY_KERNEL_TAKES}"
        )
    if published.shipped_data is None:
        if data is None:
            raise RunInputError(
                f"--data FILE is required for {published.kernel} (e.g. "
                f"loom_explorer/data/published/{published.example_data})"
            )
        return data
    return data or str(published_path(published.shipped_data))


def card_hardware(pins: tuple[str, ...]) -> dict[str, HardwareSpec]:
    """``--hw CARD=FILE`` options: the hardware file to predict one card's rows with (e.g. a calibrated one);
    the file must describe the same chip as the card's shipped file."""
    chosen: dict[str, HardwareSpec] = {}
    for pin in pins:
        card, sep, name = pin.partition("=")
        if not sep or not name or card not in CARDS:
            raise HardwareError(f"--hw {pin!r}: expected CARD=FILE with CARD one of {', '.join(CARDS)}")
        hw, shipped = load_hardware(name), load_hardware(CARDS[card])
        if hw.arch is not shipped.arch:  # Arch members: one architecture or another
            raise HardwareError(
                f"--hw {pin!r}: {name} describes a {hw.arch.value} chip; card {card} is "
                f"{shipped.arch.value} ({CARDS[card]})"
            )
        chosen[card] = hw
    return chosen


def run_accuracy(req: AccuracyRequest, console: Console) -> None:
    """``accuracy``: the flags checked (module docstring), then the kernel's family's run."""
    published = published_kernel(req.kernel)
    data = measurement_file(
        published,
        req.data,
        {"--configs": req.configs, "--record": req.record, "--constants": req.constants, "--store": req.store},
    )
    constants = chosen_constants(req.constants, published.constants) if req.constants else None
    hardware = card_hardware(req.card_hw)
    pinned = dict(pin.split("=", 1) for pin in req.card_hw)
    published.accuracy(
        AccuracyRun(
            data=data,
            configs=req.configs,
            hardware=hardware,
            hardware_files={card: pinned.get(card, name) for card, name in CARDS.items()},
            skip_bad_rows=req.skip_bad_rows,
            cross_validate=req.cross_validate,
            constants=constants,
            record=req.record,
            store=req.store,
            json=req.json,
        ),
        console,
    )


def run_calibrate(req: CalibrateRequest, console: Console) -> None:
    """``calibrate``: the flags checked (module docstring), then the kernel's family's fit."""
    published = published_kernel(req.kernel)
    data = measurement_file(published, req.data, {"--configs": req.configs, "--constants": req.constants})
    constants = chosen_constants(req.constants, published.constants)  # a bad name is refused before anything is read
    if is_shipped(req.output):
        raise RunInputError(f"-o {req.output}: calibration never writes a shipped hardware file; choose another path")
    check_target(req.output, force=req.force)  # a target write_new would refuse fails before the fit
    published.calibrate(
        CalibrateRun(
            hw=req.hw,
            data=data,
            configs=req.configs,
            output=req.output,
            force=req.force,
            skip_bad_rows=req.skip_bad_rows,
            cross_validate=req.cross_validate,
            constants=constants,
        ),
        console,
    )
