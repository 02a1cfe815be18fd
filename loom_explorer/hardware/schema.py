"""Pydantic schema of a hardware description (``hw/*.yaml``).

Every field carries its unit in its name. The YAML files state the source of each value in a comment;
values marked version-dependent in the reference (usable L1, effective bandwidths) are plain fields a user
can change. Rates that are not whole numbers (bytes/cycle) stay floats here and become exact rationals in
the model.
"""

from __future__ import annotations

from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SCHEMA_VERSION = 1


class DataFormat(str, Enum):
    """Tile data formats, named as in ttnn."""

    bfloat16 = "bfloat16"
    bfloat8_b = "bfloat8_b"
    bfloat4_b = "bfloat4_b"
    float32 = "float32"


DATA_FORMAT_ALIASES: dict[str, DataFormat] = {
    "bf16": DataFormat.bfloat16,
    "bfp8_b": DataFormat.bfloat8_b,
    "bfp8": DataFormat.bfloat8_b,
    "bfp4_b": DataFormat.bfloat4_b,
    "bfp4": DataFormat.bfloat4_b,
    "fp32": DataFormat.float32,
    "f32": DataFormat.float32,
}


def parse_data_format(text: str) -> DataFormat:
    """``bf16`` / ``bfloat16`` / ``BFLOAT16`` -> DataFormat; ValueError naming the accepted names."""
    key = text.strip().lower()
    if key in DATA_FORMAT_ALIASES:
        return DATA_FORMAT_ALIASES[key]
    try:
        return DataFormat(key)
    except ValueError:
        names = sorted({f.value for f in DataFormat} | set(DATA_FORMAT_ALIASES))
        raise ValueError(f"unknown data format {text!r}; expected one of {', '.join(names)}") from None


class Fidelity(str, Enum):
    """Math fidelity: number of passes over the mantissa bits of the matrix engine."""

    lofi = "lofi"
    hifi2 = "hifi2"
    hifi3 = "hifi3"
    hifi4 = "hifi4"


def parse_fidelity(text: str) -> Fidelity:
    try:
        return Fidelity(text.strip().lower())
    except ValueError:
        raise ValueError(
            f"unknown math fidelity {text!r}; expected one of {', '.join(f.value for f in Fidelity)}"
        ) from None


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Coord(_Frozen):
    """A NoC coordinate (x = column, y = row), as Tenstorrent's CoreCoord."""

    x: int = Field(ge=0)
    y: int = Field(ge=0)


class GridSpec(_Frozen):
    """The compute grid: ``columns`` x ``rows`` Tensix cores and where each sits on the NoC."""

    columns: int = Field(ge=1, description="compute grid x extent (ttnn compute_with_storage_grid_size().x)")
    rows: int = Field(ge=1, description="compute grid y extent")
    noc_x: list[int] = Field(description="NoC x coordinate of each compute column, left to right")
    noc_y: list[int] = Field(description="NoC y coordinate of each compute row, top to bottom")
    noc_width: int = Field(ge=1, description="NoC grid x extent (all tiles, including DRAM/Ethernet/PCIe)")
    noc_height: int = Field(ge=1, description="NoC grid y extent")

    @model_validator(mode="after")
    def _check(self) -> GridSpec:
        if len(self.noc_x) != self.columns:
            raise ValueError(f"noc_x lists {len(self.noc_x)} columns but columns = {self.columns}")
        if len(self.noc_y) != self.rows:
            raise ValueError(f"noc_y lists {len(self.noc_y)} rows but rows = {self.rows}")
        for axis, coords, extent in (("noc_x", self.noc_x, self.noc_width), ("noc_y", self.noc_y, self.noc_height)):
            if len(set(coords)) != len(coords):
                raise ValueError(f"{axis} repeats a coordinate: {coords}")
            bad = [c for c in coords if not 0 <= c < extent]
            if bad:
                raise ValueError(f"{axis} has coordinates {bad} outside the NoC grid 0..{extent - 1}")
        return self

    @property
    def cores(self) -> int:
        return self.columns * self.rows


class L1Spec(_Frozen):
    total_bytes: int = Field(gt=0)
    usable_bytes: int = Field(gt=0, description="bytes available to circular buffers (version-dependent)")

    @model_validator(mode="after")
    def _check(self) -> L1Spec:
        if self.usable_bytes > self.total_bytes:
            raise ValueError(f"usable_bytes {self.usable_bytes} exceeds total_bytes {self.total_bytes}")
        return self


class NocSpec(_Frozen):
    count: int = Field(ge=1, le=2)
    topology: Literal["torus", "mesh"]
    routing: list[Literal["x_then_y", "y_then_x"]] = Field(
        description="dimension order of each NoC: NoC0 +x then +y, NoC1 -y then -x"
    )
    link_bytes_per_cycle: float = Field(gt=0, description="per link per direction")
    hop_latency_cycles: int = Field(ge=0, description="router to router")
    max_packet_bytes: int = Field(gt=0)
    unicast_bytes_per_cycle: float = Field(gt=0, description="sustained L1->L1 write of one core")
    multicast_bytes_per_cycle: float = Field(gt=0, description="sustained multicast of one sender (bytes issued)")
    transaction_latency_cycles: int = Field(ge=0, description="fixed cost of one L1->L1 transaction")
    multicast_handshake_cycles: int = Field(ge=0, description="semaphore round trip sender<->receivers per block")

    @model_validator(mode="after")
    def _check(self) -> NocSpec:
        if len(self.routing) != self.count:
            raise ValueError(f"routing lists {len(self.routing)} NoCs but count = {self.count}")
        return self


class DramEndpoint(_Frozen):
    channel: int = Field(ge=0)
    x: int = Field(ge=0)
    y: int = Field(ge=0)


class DramSpec(_Frozen):
    channels: int = Field(ge=1)
    channel_bytes: int = Field(gt=0, description="capacity of one channel")
    channel_peak_bytes_per_cycle: float = Field(gt=0)
    chip_read_bytes_per_cycle: float = Field(gt=0, description="sustained aggregate read bandwidth, all channels")
    core_read_bytes_per_cycle: float = Field(gt=0, description="sustained read bandwidth of one reading core")
    core_write_bytes_per_cycle: float = Field(gt=0, description="sustained write bandwidth of one writing core")
    read_latency_cycles: int = Field(ge=0, description="one read transaction, request to data")
    write_latency_cycles: int = Field(ge=0)
    endpoints: list[DramEndpoint]

    @model_validator(mode="after")
    def _check(self) -> DramSpec:
        channels = {e.channel for e in self.endpoints}
        missing = set(range(self.channels)) - channels
        if missing:
            raise ValueError(f"no endpoint listed for DRAM channels {sorted(missing)}")
        extra = channels - set(range(self.channels))
        if extra:
            raise ValueError(f"endpoints name channels {sorted(extra)} beyond channels = {self.channels}")
        return self


class ComputeSpec(_Frozen):
    matmul_tile_cycles: dict[Fidelity, int] = Field(description="one 32x32x32 tile matmul, by fidelity")
    dst_tiles: int = Field(ge=1, description="Dst tiles a kernel gets with 16-bit accumulation (half sync)")
    dst_tiles_fp32_acc: int = Field(ge=1, description="Dst tiles with fp32 accumulation")
    subblock_overhead_cycles: int = Field(ge=0, description="acquire/release Dst and start a sub-block")
    tile_pack_cycles: int = Field(ge=0, description="pack one tile from Dst to L1 (or unpack a partial back)")
    eltwise_tile_cycles: int = Field(ge=0, description="one FPU elementwise tile op (e.g. add of partials)")
    sfpu_tile_cycles: dict[str, int] = Field(description="one SFPU op over a 32x32 tile, by op name")
    kernel_launch_cycles: int = Field(ge=0, description="fixed cost per op launch on the device")
    unpack_bytes_per_cycle: float | None = Field(
        default=None, gt=0,
        description="L1 bytes per cycle the unpackers feed the matrix unit's source registers with; "
                    "absent: never a bottleneck (not modelled)")

    @field_validator("matmul_tile_cycles")
    @classmethod
    def _all_fidelities(cls, v: dict[Fidelity, int]) -> dict[Fidelity, int]:
        missing = [f.value for f in Fidelity if f not in v]
        if missing:
            raise ValueError(f"missing fidelities {missing}")
        if any(c <= 0 for c in v.values()):
            raise ValueError("cycles must be positive")
        return v


class HardwareSpec(_Frozen):
    """One chip as the schedule model sees it."""

    schema_version: Literal[1]
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    arch: str
    description: str
    clock_ghz: float = Field(gt=0)
    grid: GridSpec
    l1: L1Spec
    noc: NocSpec
    dram: DramSpec
    compute: ComputeSpec
    tile_bytes: dict[DataFormat, int]

    @field_validator("tile_bytes")
    @classmethod
    def _all_formats(cls, v: dict[DataFormat, int]) -> dict[DataFormat, int]:
        missing = [f.value for f in DataFormat if f not in v]
        if missing:
            raise ValueError(f"missing data formats {missing}")
        return v

    @model_validator(mode="after")
    def _check(self) -> HardwareSpec:
        g = self.grid
        for i, e in enumerate(self.dram.endpoints):
            if not (e.x < g.noc_width and e.y < g.noc_height):
                raise ValueError(f"dram.endpoints.{i} ({e.x}, {e.y}) lies outside the NoC grid "
                                 f"{g.noc_width}x{g.noc_height}")
            if e.x in g.noc_x and e.y in g.noc_y:
                raise ValueError(f"dram.endpoints.{i} ({e.x}, {e.y}) sits on a compute core")
        return self

    def cycles_to_us(self, cycles: int) -> float:
        return cycles / (self.clock_ghz * 1e3)
