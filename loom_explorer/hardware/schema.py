"""Pydantic schema of a hardware description (``hw/*.yaml``).

Every field carries its unit in its name. The YAML files state the source of each value in a comment;
values marked version-dependent in the reference (usable L1, effective bandwidths) are plain fields a user
can change. Rates that are not whole numbers (bytes/cycle) stay floats here and become exact rationals in
the model.

Every number is bounded, so that nothing the model derives from a file can overflow or divide by zero (NaN
and infinities are refused everywhere):

* NoC extents: at most 64 per axis. A NoC node id is a 6-bit field of a NoC address on Wormhole and Blackhole
  (tt-metal ``noc_parameters.h``: ``NOC_ADDR_NODE_ID_BITS 6``).
* Byte sizes (L1, DRAM channel, packet, tile): at most 2^36 bytes, a node's local address space
  (``NOC_ADDR_LOCAL_BITS 36``).
* Rates (bytes/cycle): from 0.001 (the model turns a rate into a fraction of denominator <= 1000, so a smaller
  one would round to zero) up to 2^36 (a node's whole address space per cycle).
* Fixed costs (cycles): at most 2^32 (seconds at any clock for one transaction or tile op); counts of Dst
  tiles: at most 2^16.
* ``clock_ghz``: 0.001 (1 MHz) to 1000 (1 THz), so that every time in microseconds stays finite and nonzero.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SCHEMA_VERSION = 1

MAX_NOC_EXTENT = 1 << 6  # NoC node ids are 6-bit (NOC_ADDR_NODE_ID_BITS)
MAX_BYTES = 1 << 36  # a NoC node's local address space (NOC_ADDR_LOCAL_BITS)
MIN_RATE_BYTES_PER_CYCLE = 0.001  # rates become fractions with denominator <= 1000 (model.expr.ceil_rate)
MAX_RATE_BYTES_PER_CYCLE = float(MAX_BYTES)
MAX_CYCLES = 1 << 32
MAX_TILES = 1 << 16
MIN_CLOCK_GHZ, MAX_CLOCK_GHZ = 0.001, 1000.0

Cycles = Annotated[int, Field(ge=0, le=MAX_CYCLES)]
PositiveCycles = Annotated[int, Field(gt=0, le=MAX_CYCLES)]
Bytes = Annotated[int, Field(gt=0, le=MAX_BYTES)]
Rate = Annotated[float, Field(ge=MIN_RATE_BYTES_PER_CYCLE, le=MAX_RATE_BYTES_PER_CYCLE)]
Factor = Annotated[float, Field(ge=0.01, le=100.0)]
# ttnn's SDPA kernels the model describes (``families/attention/quantities.py``)
SDPA_KERNELS = ("streaming", "accurate")


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


class Arch(str, Enum):
    """A chip's architecture. The values are the spellings of tt-metal's ``DEVICE ARCH`` (a profiler
    report's column) that the hardware files use; a member's name is the family (``wormhole``,
    ``blackhole``) that ``accuracy/capture_chip.py`` tells a capture's architecture by."""

    wormhole = "wormhole_b0"
    blackhole = "blackhole"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class CardSpec(_Frozen):
    """The board a chip is on, as the card lists of the accuracy tools read it (``accuracy/capture_chip.py``,
    ``accuracy/published_table.py``). No prediction depends on it: ``hashing.hardware_sha256`` leaves it out.
    (Words rather than booleans: a hardware file holds no boolean, ``hardware/load.py``.)"""

    name: str = Field(
        pattern=r"^[A-Za-z0-9_.-]+$",
        description="the card's name as measurement tables name it (their ``card`` column), e.g. n150",
    )
    chip_links: Literal["ethernet", "none"] = Field(
        description="links to other chips: ethernet (the card can be one chip of a multi-chip system) or none "
        "(single-chip only)"
    )
    role: Literal["reference", "variant"] = Field(
        description="reference: its architecture's reference card, the one the published measurements name and "
        "a profiler capture that does not tell its card is predicted on; variant: another card"
    )

    @property
    def multi_chip(self) -> bool:
        """Whether the card can be one chip of a multi-chip system."""
        return self.chip_links == "ethernet"

    @property
    def reference(self) -> bool:
        return self.role == "reference"


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
    noc_width: int = Field(
        ge=1, le=MAX_NOC_EXTENT, description="NoC grid x extent (all tiles, including DRAM/Ethernet/PCIe)"
    )
    noc_height: int = Field(ge=1, le=MAX_NOC_EXTENT, description="NoC grid y extent")

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
    total_bytes: Bytes
    usable_bytes: Bytes = Field(description="bytes available to circular buffers (version-dependent)")

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
    link_bytes_per_cycle: Rate = Field(description="per link per direction")
    hop_latency_cycles: Cycles = Field(description="router to router")
    max_packet_bytes: Bytes
    unicast_bytes_per_cycle: Rate = Field(description="sustained L1->L1 write of one core")
    multicast_bytes_per_cycle: Rate = Field(description="sustained multicast of one sender (bytes issued)")
    transaction_latency_cycles: Cycles = Field(description="fixed cost of one L1->L1 transaction")
    multicast_handshake_cycles: Cycles = Field(description="semaphore round trip sender<->receivers per block")

    @model_validator(mode="after")
    def _check(self) -> NocSpec:
        if len(self.routing) != self.count:
            raise ValueError(f"routing lists {len(self.routing)} NoCs but count = {self.count}")
        return self


class DramEndpoint(_Frozen):
    channel: int = Field(ge=0, lt=MAX_NOC_EXTENT * MAX_NOC_EXTENT)
    x: int = Field(ge=0, lt=MAX_NOC_EXTENT)
    y: int = Field(ge=0, lt=MAX_NOC_EXTENT)


class DramSpec(_Frozen):
    channels: int = Field(ge=1, le=MAX_NOC_EXTENT * MAX_NOC_EXTENT, description="each needs a NoC endpoint")
    channel_bytes: Bytes = Field(description="capacity of one channel")
    channel_peak_bytes_per_cycle: Rate
    chip_read_bytes_per_cycle: Rate = Field(description="sustained aggregate read bandwidth, all channels")
    core_read_bytes_per_cycle: Rate = Field(description="sustained read bandwidth of one reading core")
    core_write_bytes_per_cycle: Rate = Field(description="sustained write bandwidth of one writing core")
    read_latency_cycles: Cycles = Field(description="one read transaction, request to data")
    write_latency_cycles: Cycles
    endpoints: list[DramEndpoint]
    step_read_bytes_per_cycle: Rate | None = Field(
        default=None,
        description="rate at which a matmul K step's DRAM block read delays the step beyond its overlap "
        "(families/contraction/latency.py: read_stall_cycles); absent: block reads hide behind compute",
    )

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
    matmul_tile_cycles: dict[Fidelity, PositiveCycles] = Field(description="one 32x32x32 tile matmul, by fidelity")
    dst_tiles: int = Field(
        ge=1, le=MAX_TILES, description="Dst tiles a kernel gets with 16-bit accumulation (half sync)"
    )
    dst_tiles_fp32_acc: int = Field(ge=1, le=MAX_TILES, description="Dst tiles with fp32 accumulation")
    subblock_overhead_cycles: Cycles = Field(description="acquire/release Dst and start a sub-block")
    tile_pack_cycles: Cycles = Field(description="pack one tile from Dst to L1 (or unpack a partial back)")
    eltwise_tile_cycles: Cycles = Field(description="one FPU elementwise tile op (e.g. add of partials)")
    sfpu_tile_cycles: dict[str, Cycles] = Field(description="one SFPU op over a 32x32 tile, by op name")
    kernel_launch_cycles: Cycles = Field(
        description="fixed cost per op launch inside a device kernel duration (kernels' start and prologue)"
    )
    op_to_op_gap_cycles: Cycles = Field(
        default=0,
        description="one op's kernels ending to the next op's starting (dispatch), under trace: in a "
        "wall-clock time per op, never in a device kernel duration; 0: not known",
    )
    sdpa_softmax_scale: dict[str, Factor] = Field(
        default_factory=lambda: dict.fromkeys(SDPA_KERNELS, 1.0),
        description="ttnn's SDPA kernels (streaming, accurate): the factor on the online softmax's per-step "
        "op costs (the SFPU and FPU tile costs above) that the kernel really takes; 1 = as costed",
    )
    unpack_bytes_per_cycle: Rate | None = Field(
        default=None,
        description="L1 bytes per cycle the unpackers feed the matrix unit's source registers with; "
        "absent: never a bottleneck (not modelled)",
    )
    riscv_l1_store_cycles: PositiveCycles | None = Field(
        default=None,
        description="cycles per 32-bit store a data-movement RISC-V sustains into L1 (a kernel filling a tile "
        "word by word); absent: such fills are not costed",
    )
    riscv_l1_load_cycles: PositiveCycles | None = Field(
        default=None,
        description="cycles from a data-movement RISC-V's load from L1 to its result being usable (a kernel "
        "moving data element by element through its registers); absent: such copies are not costed",
    )

    @field_validator("sdpa_softmax_scale")
    @classmethod
    def _sdpa_kernels(cls, v: dict[str, float]) -> dict[str, float]:
        if set(v) != set(SDPA_KERNELS):
            raise ValueError(f"needs exactly the kernels {', '.join(SDPA_KERNELS)}")
        return v

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
    arch: Arch
    description: str
    card: CardSpec | None = Field(default=None, description="the board (shipped chips); absent: not a known card")
    clock_ghz: float = Field(ge=MIN_CLOCK_GHZ, le=MAX_CLOCK_GHZ)
    grid: GridSpec
    l1: L1Spec
    noc: NocSpec
    dram: DramSpec
    compute: ComputeSpec
    tile_bytes: dict[DataFormat, Bytes]

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
                raise ValueError(
                    f"dram.endpoints.{i} ({e.x}, {e.y}) lies outside the NoC grid {g.noc_width}x{g.noc_height}"
                )
            if e.x in g.noc_x and e.y in g.noc_y:
                raise ValueError(f"dram.endpoints.{i} ({e.x}, {e.y}) sits on a compute core")
        return self

    def cycles_to_us(self, cycles: int) -> float:
        return cycles / (self.clock_ghz * 1e3)
