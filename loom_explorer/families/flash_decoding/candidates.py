"""Flash-decoding's candidate of an attention problem (``VARIANTS``, ``KV_SPLIT``).

Each (batch, key/value head) group takes consecutive cores that split its key/value sequence in contiguous
runs of key chunks; the query heads of the group are packed into the rows of one tile, so its keys and
values are read once per group; each core's partial output, row max and row sum go L1-to-L1 to the group's
first core, which combines them (``model.py``).

One candidate where the structure has key/value groups (``kv_groups``), the problem is not causal, no tensor
is placed in L1 and one group's packed query rows fit ``MAX_PACKED_TILES`` tiles (decode, small ``Sq``; for
ttnn's ``sdpa_decode``, a single query token): the groups (``B*Hkv``, those of extent 1 left out) on a 1-D
layout, every input read from DRAM, named ``...|kv_split``.
"""

from __future__ import annotations

from loom_explorer.families.attention.program import Attention
from loom_explorer.mapping.candidate import Candidate, Comm, Tag
from loom_explorer.mapping.variants import CandidateVariants
from loom_explorer.problem import KernelTarget, Problem
from loom_explorer.program.family import Structure

FAMILY = "flash_decoding"
MAX_PACKED_TILES = 8  # flash-decoding candidates for a group's query rows up to 8 tiles (256 rows)
KV_SPLIT = Tag(
    "kv_split",
    "each (batch, key/value head) group's keys and values split over consecutive cores, its "
    "query heads packed into tile rows, partial results combined on its first core "
    "(flash-decoding)",
)


def kv_split_candidates(problem: Problem, st: Structure) -> list[Candidate]:
    """The flash-decoding candidate (module docstring), if the problem has one."""
    assert isinstance(st, Attention)
    causal = st.diagonal is not None and problem.has_option("causal")
    groups = st.kv_groups
    if causal or any(problem.placement(t).in_l1 for t in (*st.streamed, st.output)):
        return []
    query, key = (problem.program.tensor(t) for t in st.streamed[:2])
    length = [
        d
        for d in query.dims
        if problem.program.dim(d).spread and d not in key.dims and problem.program.grouped_by(key.name, d) is None
    ]  # the query length (Sq)
    if problem.target is KernelTarget.ttnn and any(problem.elements(d) != 1 for d in length):
        return []  # ttnn's sdpa_decode takes one query token
    if packed_rows(problem, query.name, key.name, groups[-1:]) > 32 * MAX_PACKED_TILES:
        return []
    spread = [g for g in groups if problem.elements(g) > 1] or list(groups[-1:])
    return [
        Candidate(
            axes=(("xy", "*".join(spread)),),
            comms=tuple((t, Comm.dram) for t in st.streamed),
            family=FAMILY,
            tags=(KV_SPLIT,),
        )
    ]


def packed_rows(problem: Problem, query: str, key: str, heads: tuple[str, ...]) -> int:
    """Rows of ``query`` packed per batch item (``H*Sq``) or, given the key/value heads dim, per group
    (``H*Sq / Hkv`` = query heads per key/value head times the query length): the extents of its spread dims
    that do not index ``key`` directly (the batch does), over the extents of ``heads``."""
    program = problem.program
    rows = 1
    for d in program.tensor(query).dims:
        rows *= problem.elements(d) if program.dim(d).spread and d not in program.tensor(key).dims else 1
    for g in heads:
        rows //= problem.elements(g)
    return rows


VARIANTS = CandidateVariants(FAMILY, candidates=kv_split_candidates)
