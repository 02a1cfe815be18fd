"""One measured op of a shipped capture as the capture calibration sees it (``calibration_rows`` makes them:
what each field means is said there)."""

from __future__ import annotations

from dataclasses import dataclass

TILE_ELEMENTS = 32 * 32


@dataclass(frozen=True, slots=True)
class CalibrationRow:
    capture: str
    role: str  # "fit" | "check" (data.CAPTURE_ROLES)
    hardware: str
    arch: str  # "wormhole" | "blackhole"
    family: str
    kernel: str
    op_code: str
    shape_key: str  # the kernel, model shape and formats: one "shape" of leave-one-shape-out
    measured_ns: float
    clock_ghz: float
    terms_cycles: tuple[tuple[str, int], ...]
    cores: int
    work_tiles: float
    tensor_bytes: float

    @property
    def uncalibrated_ns(self) -> float:
        return sum(c for _, c in self.terms_cycles) / self.clock_ghz
