"""A chip with its compute grid restricted, as ttnn's ``--grid-size`` runs and the 120-core Blackhole
firmware do: the first ``columns`` x ``rows`` cores of the hardware file's grid (its NoC coordinates kept)."""

from __future__ import annotations

from loom_explorer.hardware.schema import HardwareSpec


def restrict_grid(hw: HardwareSpec, columns: int, rows: int) -> HardwareSpec:
    """``hw`` with only its first ``columns`` x ``rows`` compute cores (``hw`` itself when that is all)."""
    if (columns, rows) == (hw.grid.columns, hw.grid.rows):
        return hw
    if not (1 <= columns <= hw.grid.columns and 1 <= rows <= hw.grid.rows):
        raise ValueError(f"grid {columns}x{rows} does not fit {hw.name}'s {hw.grid.columns}x{hw.grid.rows} cores")
    grid = hw.grid.model_copy(
        update={"columns": columns, "rows": rows, "noc_x": hw.grid.noc_x[:columns], "noc_y": hw.grid.noc_y[:rows]}
    )
    return hw.model_copy(update={"grid": grid, "name": f"{hw.name}@{columns}x{rows}"})
