"""Ring-joint SDPA per device: what each device of the ring computes, step by step, and its time.

ttnn's ``ring_joint_scaled_dot_product_attention`` (tt-metal@621369d7
``ttnn/cpp/ttnn/operations/transformer/sdpa/device/ring_joint_sdpa_program_factory.cpp``; the causal and
balanced rules as a stored version of ``kernels/dataflow/ring_joint_reader.cpp`` with ``NHK``, ``vDHt``,
``is_causal`` and ``is_balanced`` compile args has them) splits the sequence over ``R = ring_size`` devices:
device ``r`` (its *ring index*) holds ``N_l`` local tokens of Q, K and V. An all-gather on the ``ccl`` cores
beside the compute grid passes every device's K and V round the ring; the compute grid runs one *ring step*
per ring device ``j`` (the *ring id*) as its K/V arrive, in the order the fused-op receiver syncs them
(``arrival_order``: own first, then alternately from the forward and the backward neighbour on a line).

In step ``j`` every Q chunk of the device (``n_q = ceil(N_l / qc)`` local plus the joint Q chunks) streams the
K/V chunks of device ``j`` (``n_k = ceil(N_l / kc)``, the last device's step adding the joint K/V chunks),
an online-softmax SDPA step each. Which steps run (``step_kind``):

* not causal: every step is ``full``;
* causal, not balanced (the sequence in order over the ring): ``j == r`` is the ``diagonal`` (causal mask
  inside the local block), ``j < r`` ``full`` (earlier keys), ``j > r`` ``skipped`` (later keys); so device
  ``r`` runs ``r + 1`` steps and the later devices do more;
* causal, balanced (each device holds one early and one late half-chunk): ``j == r`` ``diagonal``;
  ``j < r`` ``half_kv`` (only the first half of ``j``'s K/V chunks); ``j > r`` ``heavy_q`` (only the Q chunks
  ``q >= floor(n_q / 2)``, the late half).

The reader streams every K/V chunk of the diagonal step for every Q chunk (the writer builds each Q chunk's
causal mask; no K/V chunk is left out), so a diagonal step costs as many SDPA steps as a full one. K/V chunks
past the global ``logical_n`` are skipped.

Work split inside a device: the ``B * H * (n_q + n_joint_q)`` Q chunks (flat, head by head) dealt out in
contiguous ranges, ``floor(T / cores)`` each and one more to the first ``T mod cores`` cores (``core_ranges``).

Time of core ``c`` (cycles), with ``a_j`` the arrival of device ``j``'s K/V (0 for its own) and per step
``w_{c,j}`` SDPA steps over ``m_{c,j}`` Q chunks:

    t_c = fixed;  for j in arrival order:  t_c = max(t_c, a_j) + w_{c,j} * step + m_{c,j} * chunk
                                                + m_{c,j} * merge * [an earlier step of c ran]

``step`` is one Q chunk against one K/V chunk (matmuls, softmax, streaming), ``chunk`` a Q chunk's
normalisation and write-back, paid every step that runs it (the op writes each partial output and its
log-sum-exp), and ``merge`` the read-back of the previous partial output merged by its log-sum-exp on every
later step (costed as one write-back). A skipped step still waits for its K/V (the sync comes before the
skip). The device's time is ``max_c t_c``; ``RingLatency`` gives the slowest core's terms.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from loom_explorer.errors import LoomError


class RingError(LoomError, ValueError):
    """A ring-joint SDPA that cannot run as given; the message names the field."""


class RingStep(str, Enum):
    """What one ring step computes for a device (module docstring)."""

    diagonal = "diagonal"
    full = "full"
    half_kv = "half_kv"
    heavy_q = "heavy_q"
    skipped = "skipped"


def arrival_order(ring_size: int, ring_index: int) -> tuple[int, ...]:
    """The ring ids in the order device ``ring_index`` processes them on a line (ttnn's fused-op receiver,
    ``Topology::Linear``): its own, then alternately the next forward (``ring_index + k``) and backward
    (``ring_index - k``) device, a direction dropped once it runs out of devices."""
    if not 0 <= ring_index < ring_size:
        raise RingError(f"ring_index must be 0..{ring_size - 1}, got {ring_index}")
    order, forward, backward = [ring_index], 1, 1
    while len(order) < ring_size:
        if ring_index + forward < ring_size:
            order.append(ring_index + forward)
            forward += 1
        if ring_index - backward >= 0:
            order.append(ring_index - backward)
            backward += 1
    return tuple(order)


def step_kind(ring_index: int, ring_id: int, causal: bool, balanced: bool) -> RingStep:
    """What device ``ring_index`` does with device ``ring_id``'s K/V (module docstring)."""
    if not causal:
        return RingStep.full
    if ring_id == ring_index:
        return RingStep.diagonal
    if ring_id < ring_index:
        return RingStep.half_kv if balanced else RingStep.full
    return RingStep.heavy_q if balanced else RingStep.skipped


def ring_index_of(device_id: int, mesh_rows: int, mesh_columns: int, cluster_axis: int) -> int:
    """A device's place in its ring: ttnn takes the devices of the device's line along ``cluster_axis``
    (axis 0: its mesh column, ``rows`` devices; axis 1: its mesh row) and the device's position in it, so
    with device ids numbered row by row (``id = row * columns + column``) the ring index is the row (axis 0)
    or the column (axis 1)."""
    if not 0 <= device_id < mesh_rows * mesh_columns:
        raise RingError(f"device {device_id} is not one of a {mesh_rows}x{mesh_columns} mesh's devices")
    if cluster_axis not in (0, 1):
        raise RingError(f"cluster_axis must be 0 or 1, got {cluster_axis}")
    return device_id // mesh_columns if cluster_axis == 0 else device_id % mesh_columns


@dataclass(frozen=True, slots=True)
class RingJointShape:
    """One device's ring-joint SDPA in chunks: ``heads = B * H`` (b, h) pairs, Q chunks (local and joint),
    K/V chunks of one device's block (local) and the joint K/V chunks, ``kv_valid_chunks[j]`` of device ``j``'s
    local K/V chunks before ``logical_n``."""

    heads: int
    local_q_chunks: int
    joint_q_chunks: int
    local_kv_chunks: int
    joint_kv_chunks: int
    ring_size: int
    causal: bool
    balanced: bool
    kv_valid_chunks: tuple[int, ...]

    @property
    def q_chunks(self) -> int:
        return self.local_q_chunks + self.joint_q_chunks

    def kv_chunks(self, ring_index: int, ring_id: int) -> int:
        """K/V chunks each running Q chunk streams in step ``ring_id``."""
        kind = step_kind(ring_index, ring_id, self.causal, self.balanced)
        if kind is RingStep.skipped:
            return 0
        chunks = self.local_kv_chunks + (self.joint_kv_chunks if ring_id == self.ring_size - 1 else 0)
        if kind is RingStep.half_kv:
            chunks //= 2  # the reader halves the step's count, joint chunks included
        return chunks - (self.local_kv_chunks - min(self.kv_valid_chunks[ring_id], self.local_kv_chunks))

    def runs(self, ring_index: int, ring_id: int, q_chunk: int) -> bool:
        """Whether Q chunk ``q_chunk`` (of its head) runs in step ``ring_id``."""
        kind = step_kind(ring_index, ring_id, self.causal, self.balanced)
        if kind is RingStep.skipped:
            return False
        return kind is not RingStep.heavy_q or q_chunk >= self.q_chunks // 2


def ring_joint_shape(
    *,
    batch_heads: int,
    local_tokens: int,
    joint_tokens: int,
    q_chunk_size: int,
    k_chunk_size: int,
    ring_size: int,
    logical_n: int,
    causal: bool,
    balanced: bool,
) -> RingJointShape:
    """The chunk counts of ttnn's program factory (tokens and chunk sizes in elements): ``n_q = ceil(N_l /
    qc)``, joint ``ceil(L / qc)``, ``n_k = ceil(N_l / kc)``, joint ``ceil(L / kc)``; device ``j``'s local K/V
    chunk ``k`` counts when its first tile ``j * N_l/32 + k * kc/32`` is before ``ceil(logical_n / 32)``."""
    for name, value in (("ring_size", ring_size), ("local_tokens", local_tokens), ("batch_heads", batch_heads)):
        if value < 1:
            raise RingError(f"{name} must be >= 1, got {value}")
    if ring_size < 2:
        raise RingError(f"a ring joins at least 2 devices, got ring_size {ring_size}")
    n_k = -(-local_tokens // k_chunk_size)
    logical_tiles = -(-logical_n // 32)
    local_tiles, kc_tiles = local_tokens // 32, k_chunk_size // 32
    valid = tuple(sum(j * local_tiles + k * kc_tiles < logical_tiles for k in range(n_k)) for j in range(ring_size))
    return RingJointShape(
        heads=batch_heads,
        local_q_chunks=-(-local_tokens // q_chunk_size),
        joint_q_chunks=-(-joint_tokens // q_chunk_size),
        local_kv_chunks=n_k,
        joint_kv_chunks=-(-joint_tokens // k_chunk_size),
        ring_size=ring_size,
        causal=causal,
        balanced=balanced,
        kv_valid_chunks=valid,
    )


def core_ranges(total_chunks: int, cores: int) -> tuple[tuple[int, int], ...]:
    """``[start, end)`` of the flat Q chunks each core takes (the program factory's even split)."""
    base, extra = divmod(total_chunks, cores)
    out, start = [], 0
    for c in range(cores):
        count = base + (c < extra)
        out.append((start, start + count))
        start += count
    return tuple(out)


@dataclass(frozen=True, slots=True)
class StepCosts:
    """Cycles of one SDPA step by term (``qk_matmul``, ``softmax``, ``pv_matmul``, ``kv_streaming``), of one
    Q chunk's ``normalize`` and ``write_back``, of one ``merge`` (previous output read back), and the op's
    ``fixed`` terms (``launch``, ``fill``): from the attention family's SDPA model (``ring_predict.py``)."""

    step: tuple[tuple[str, float], ...]
    chunk: tuple[tuple[str, float], ...]
    merge_cycles: float
    fixed: tuple[tuple[str, float], ...]

    @property
    def step_cycles(self) -> float:
        return sum(c for _, c in self.step)

    @property
    def chunk_cycles(self) -> float:
        return sum(c for _, c in self.chunk)


@dataclass(frozen=True, slots=True)
class CoreWork:
    """One core's work in one ring step: the SDPA steps and the Q chunks that run."""

    ring_id: int
    sdpa_steps: int
    q_chunks: int


def core_work(shape: RingJointShape, ring_index: int, start: int, end: int) -> tuple[CoreWork, ...]:
    """The work of the core holding flat Q chunks ``[start, end)`` in each step, in arrival order."""
    out = []
    for ring_id in arrival_order(shape.ring_size, ring_index):
        kv = shape.kv_chunks(ring_index, ring_id)
        running = sum(shape.runs(ring_index, ring_id, t % shape.q_chunks) for t in range(start, end)) if kv else 0
        out.append(CoreWork(ring_id, running * kv, running))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class RingLatency:
    """A device's ring-joint SDPA time on its slowest core: ``terms`` (cycles, summing to ``total_cycles``),
    that core's work per step, and every core's total (cycles)."""

    ring_index: int
    terms: tuple[tuple[str, int], ...]
    work: tuple[CoreWork, ...]
    core_cycles: tuple[int, ...]

    @property
    def total_cycles(self) -> int:
        return sum(c for _, c in self.terms)

    @property
    def sdpa_steps(self) -> int:
        return sum(w.sdpa_steps for w in self.work)


def _core_time(work: Sequence[CoreWork], costs: StepCosts, arrivals: Mapping[int, int]) -> dict[str, float]:
    terms: dict[str, float] = {name: c for name, c in costs.fixed}
    t, ran = sum(terms.values()), False
    terms["ring_wait"] = 0.0
    for w in work:
        wait = max(0.0, arrivals.get(w.ring_id, 0) - t)
        terms["ring_wait"] += wait
        t += wait
        for name, c in costs.step:
            terms[name] = terms.get(name, 0.0) + w.sdpa_steps * c
        for name, c in costs.chunk:
            terms[name] = terms.get(name, 0.0) + w.q_chunks * c
        merge = w.q_chunks * costs.merge_cycles if ran else 0.0
        terms["lse_merge"] = terms.get("lse_merge", 0.0) + merge
        t += w.sdpa_steps * costs.step_cycles + w.q_chunks * costs.chunk_cycles + merge
        ran = ran or w.q_chunks > 0
    return terms


def ring_joint_latency(
    shape: RingJointShape, ring_index: int, cores: int, costs: StepCosts, arrivals: Mapping[int, int]
) -> RingLatency:
    """Device ``ring_index``'s time (module docstring): every core's, the slowest core's terms.
    ``arrivals[j]``: cycles from the op's start until device ``j``'s K/V are in this device's DRAM."""
    if cores < 1:
        raise RingError(f"cores must be >= 1, got {cores}")
    ranges = core_ranges(shape.heads * shape.q_chunks, cores)
    works = {r: core_work(shape, ring_index, *r) for r in set(ranges)}
    timed = [(_core_time(works[r], costs, arrivals), works[r]) for r in ranges]
    totals = tuple(round(sum(t.values())) for t, _ in timed)
    slowest = max(range(len(ranges)), key=lambda i: totals[i])
    terms, work = timed[slowest]
    return RingLatency(ring_index, tuple((n, round(c)) for n, c in terms.items()), work, totals)
