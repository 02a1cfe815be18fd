"""Recognise the attention structure of a program from its access maps.

Two chained matmuls ``s = q @ k^T`` and ``o = s @ v``, where ``s`` is an intermediate tensor, make an
attention program (FlashAttention-2: the reduction over the key/value sequence runs as steps of an online
softmax, and ``s`` never leaves L1). The roles of its dimensions follow from which tensors mention them
(a grouped index such as ``Hkv`` counts as the dimension it groups):

* head dim (``D``):  in ``q`` and ``k``, not in ``s`` (contracted by the first matmul), in ``v`` and ``o``;
* key/value dim (``Skv``): in ``s``, ``k`` and ``v``, not in ``o`` (the reduction of the second matmul);
* query dim (``Sq``): in ``q``, ``s`` and ``o``, not in ``k`` or ``v``;
* batch dims (``B``, ``H``): every other dimension of ``o`` (also in ``q``; in ``k``/``v`` directly or grouped).

Besides the scores, the intermediates are the two running statistics of the online softmax, the row maximum
then the row sum, one value per query row: each indexed by the dimensions of ``o`` but the head dim.

Eltwise ops declare how often they run (``when``): per step on the step's block (scores, statistics,
output rescale), on diagonal steps only (the causal mask), or once on the final value.
"""

from __future__ import annotations

from dataclasses import dataclass

from loom_explorer.program.dsl import Eltwise, Matmul, Reduce, TileProgram
from loom_explorer.program.family import ProgramFamily, ProgramStructureError


@dataclass(frozen=True, slots=True)
class Attention:
    qk: Matmul
    pv: Matmul
    q_dim: str
    kv_dim: str
    head_dim: str
    batch_dims: tuple[str, ...]
    ops: tuple[Eltwise, ...]
    program: TileProgram

    @property
    def scores(self) -> str:
        return self.qk.out

    @property
    def output(self) -> str:
        return self.pv.out

    @property
    def spread_dims(self) -> tuple[str, ...]:
        """Batch dims and the query dim: each (b, h, query chunk) is an independent task."""
        return tuple(d for d in (*self.batch_dims, self.q_dim) if self.program.dim(d).spread)

    @property
    def split_dims(self) -> tuple[str, ...]:
        """The key/value reduction runs as online-softmax steps on one core; it is not split over cores."""
        return ()

    @property
    def streamed(self) -> tuple[str, ...]:
        return (self.qk.a, self.qk.b, self.pv.b)

    @property
    def flatten(self) -> bool:
        """Tasks of all spread dims may be flattened over the cores (TTNN's SDPA work split)."""
        return True

    @property
    def diagonal(self) -> tuple[str, str] | None:
        """(query dim, key/value dim) of the causal diagonal when the program has a ``causal`` option."""
        return (self.q_dim, self.kv_dim) if "causal" in self.program.options else None

    gather_1d: bool = False

    @property
    def kv_groups(self) -> tuple[str, ...]:
        """The dims of the keys other than the key/value and head dims (``B``, ``Hkv``): one index of each is
        one (batch, key/value head) group, whose query heads share its keys and values (flash-decoding)."""
        k = self.program.tensor(self.qk.b)
        return tuple(d for d in k.dims if d not in (self.kv_dim, self.head_dim))

    def step_ops(self, when: str) -> tuple[Eltwise, ...]:
        return tuple(op for op in self.ops if op.when == when)


def is_attention(program: TileProgram) -> bool:
    matmuls = [op for op in program.ops if isinstance(op, Matmul)]
    if any(isinstance(op, Reduce) for op in program.ops):
        return False
    return len(matmuls) == 2 and any(m.out == n.a for m in matmuls for n in matmuls)


def analyse_attention(program: TileProgram) -> Attention:
    matmuls = [op for op in program.ops if isinstance(op, Matmul)]
    chain = [(m, n) for m in matmuls for n in matmuls if m is not n and m.out == n.a]
    if len(matmuls) != 2 or len(chain) != 1:
        raise ProgramStructureError(
            f"program {program.name}: attention needs two chained matmuls (s = q @ k, o = s @ v), found {matmuls}"
        )
    qk, pv = chain[0]
    if program.tensor(qk.out).role != "intermediate":
        raise ProgramStructureError(f"program {program.name}: the scores {qk.out} must be an intermediate tensor")
    if program.tensor(pv.out).role != "output":
        raise ProgramStructureError(f"program {program.name}: {pv.out} must be the output")

    def dims(tensor: str) -> set[str]:  # grouped indices count as the dimension they group
        return {program.dim(d).group_of or d for d in program.tensor(tensor).dims}

    q, k, s, v, o = (dims(t) for t in (qk.a, qk.b, qk.out, pv.b, pv.out))
    order = [d.name for d in program.dims]
    head = [d for d in order if d in (q & k & v & o) - s]
    kv = [d for d in order if d in (s & k & v) - o]
    qd = [d for d in order if d in (q & s & o) - (k | v)]
    for role, found in (
        ("head (in q, k, v and o, not in the scores)", head),
        ("key/value (in the scores, k and v, not in o)", kv),
        ("query (in q, scores and o)", qd),
    ):
        if len(found) != 1:
            raise ProgramStructureError(f"program {program.name}: expected one {role} dimension, found {found}")
    batch = [d for d in order if d in o and d not in (*head, *qd)]
    not_in_q = [d for d in batch if d not in q]
    if not_in_q:
        raise ProgramStructureError(
            f"program {program.name}: batch dimension(s) {not_in_q} of {pv.out} do not index {qk.a}"
        )
    if program.dim(kv[0]).kind != "reduction":
        raise ProgramStructureError(f"program {program.name}: dimension {kv[0]} is summed over but declared parallel")
    if program.dim(head[0]).spread:
        raise ProgramStructureError(
            f"program {program.name}: the head dimension {head[0]} is contracted by "
            f"{qk} and must be declared spread=False"
        )
    grouped = [d.name for d in program.dims if d.group_of in batch]
    roleless = [d for d in order if d not in (*head, *kv, *qd, *batch, *grouped)]
    if roleless:
        raise ProgramStructureError(f"program {program.name}: dimension(s) {roleless} have no role in attention")
    rows = sorted(o - {head[0]})  # one value per query row: the output's dims but the head dim
    stats = [t for t in program.intermediates if t.name != qk.out]
    if len(stats) != 2 or any(dims(t.name) != set(rows) for t in stats):
        found = [f"{t.name}{list(t.dims)}" for t in stats]
        raise ProgramStructureError(
            f"program {program.name}: attention keeps two running statistics per query row "
            f"(the row maximum, then the row sum) as intermediates indexed by {rows}; found "
            f"{found or 'none'}"
        )
    ops = tuple(op for op in program.ops if isinstance(op, Eltwise))
    return Attention(
        qk=qk, pv=pv, q_dim=qd[0], kv_dim=kv[0], head_dim=head[0], batch_dims=tuple(batch), ops=ops, program=program
    )


ATTENTION = ProgramFamily(
    name="attention",
    description="two chained matmuls with an online softmax between them (FlashAttention-2)",
    matches=is_attention,
    analyse=analyse_attention,
)
