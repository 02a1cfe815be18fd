"""Where ``calibrate`` starts: a file an earlier calibration wrote is fitted again from the values it had
before that fit (its ``calibrated (was V)`` notes), and the notes are replaced, never stacked."""

from __future__ import annotations

from pathlib import Path

from loom_explorer.accuracy.calibrate import (
    CALIBRATED_NOTE,
    Calibration,
    calibrated_yaml,
    shipped_constants,
    start_values,
    with_constants,
)
from loom_explorer.accuracy.op_mapping import published_kernels
from loom_explorer.hardware import load_hardware
from loom_explorer.hardware.load import resolve_hardware_path

CONSTANTS = published_kernels()[0].constants  # what `calibrate` fits by default (the default kernel's)


def _calibration(start_file: str, fitted_values: dict[str, float]) -> Calibration:
    given = load_hardware(start_file)
    start = start_values(given, start_file, CONSTANTS)
    values = {**shipped_constants(start, CONSTANTS), **fitted_values}
    return Calibration(
        hardware=with_constants(start, values),
        values=values,
        shipped=shipped_constants(start, CONSTANTS),
        given=shipped_constants(given, CONSTANTS),
        rows=7,
    )


def test_a_calibrated_file_starts_again_from_its_earlier_values(tmp_path: Path) -> None:
    shipped = tmp_path / "base.yaml"  # the shipped file without the notes of its own calibration
    shipped.write_text(CALIBRATED_NOTE.sub("", Path(resolve_hardware_path("wormhole_n150")).read_text()))
    first = tmp_path / "first.yaml"
    path = "compute.tile_pack_cycles"
    first.write_text(calibrated_yaml(shipped, _calibration(str(shipped), {path: 13}), "rows.csv"))
    assert "tile_pack_cycles calibrated (was 32) on 7 rows of rows.csv" in first.read_text()
    fitted = load_hardware(str(first))
    assert fitted.compute.tile_pack_cycles == 13
    # the next fit starts from 32, not from 13 (the value fitted on the same rows)
    assert start_values(fitted, first, CONSTANTS).compute.tile_pack_cycles == 32
    assert start_values(load_hardware(str(shipped)), shipped, CONSTANTS) == load_hardware(str(shipped))
    # the shipped n150 file notes its fitted read-stall rate: its fits start from the value before the fit
    n150 = load_hardware("wormhole_n150")
    assert (
        start_values(n150, "wormhole_n150", CONSTANTS).dram.step_read_bytes_per_cycle
        == n150.dram.core_read_bytes_per_cycle
    )
    # fitting the calibrated file again: a new value replaces the note; back at 32 the note goes
    second = tmp_path / "second.yaml"
    second.write_text(calibrated_yaml(first, _calibration(str(first), {path: 20}), "rows.csv"))
    line = next(x for x in second.read_text().splitlines() if x.strip().startswith("tile_pack_cycles:"))
    assert line.count("calibrated (was") == 1 and "(was 32)" in line and ": 20 " in line
    third = tmp_path / "third.yaml"
    third.write_text(calibrated_yaml(second, _calibration(str(second), {path: 32}), "rows.csv"))
    line = next(x for x in third.read_text().splitlines() if x.strip().startswith("tile_pack_cycles:"))
    assert "calibrated (was" not in line and ": 32 " in line
    assert load_hardware(str(third)).compute.tile_pack_cycles == 32
