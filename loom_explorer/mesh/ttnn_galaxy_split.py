"""tt-metal's hand-written split of a Llama-3-70B decoder layer on a Wormhole Galaxy (8 x 4), as pins of our
model (``ttnn_split.py`` does the same for tt_transformers on a T3000).

Read in tenstorrent/tt-metal, ``models/demos/llama3_70b_galaxy/tt/`` (reference only). ``ShardTensor2dMesh``
``dims=(d0, d1)`` puts tensor dim ``d0`` over the mesh's rows (``cluster_axis`` 0, 8 chips) and ``d1`` over its
columns (``cluster_axis`` 1, 4 chips); the weights are stored transposed, ``[..., K, N]``:

* ``llama_mlp.py`` @ 0457767c2d6505768f44001ff3fba95334c4eb62: ``w1``/``w3`` ``dims=(-1, -2)``: N over the
  rows, K over the columns (``N@rows,K@columns``), each followed by a reduce-scatter on ``cluster_axis=1``
  (the partial sums scattered on the columns: ``Sc`` on both axes); the SiLU-multiply on those slices; an
  all-gather on ``cluster_axis=1`` into ``w2``, ``dims=(-2, -1)``: K over the rows, N over the columns
  (``K@rows,N@columns``), then an all-reduce on ``cluster_axis=0``: the residual stream is replicated on the
  rows and sharded on its columns over the columns (``R, Sc``, ``dim / 4`` per chip);
* ``llama_attention.py`` @ 00d4c974a4ed4a272e1d09e533f530841ae79ad1: ``wqkv`` ``dims=(3, 2)``: N (each row's
  group of 8 query heads and 1 key/value head) over the rows, K over the columns (``N@rows,K@columns``).
  Decode: ``llama_rs_create_heads`` on ``cluster_axis=1`` reduce-scatters the partial sums onto the users
  ("8 users per chip": ``Sr`` on the columns), SDPA decode runs on each chip's heads and users
  (``heads@rows,batch@columns``), ``all_gather_concat`` on ``cluster_axis=1`` gathers the users, ``wo``
  ``dims=(2, 3)``: K over the rows, N over the columns (``K@rows,N@columns``), ``line_all_reduce`` on
  ``cluster_axis=0``. Prefill: an all-reduce of the qkv partial sums on ``cluster_axis=1`` (``num_links=3``),
  SDPA on each row's heads, ``wo`` as in decode, an all-reduce on ``cluster_axis=0`` (``num_links=3``).
  At more than 1k tokens of one user (``ring_distributed_sdpa = seq_len > 1024 and batch_size == 1``) the
  SDPA is ``ring_distributed_scaled_dot_product_attention`` with ``ring_size=4`` over the columns (its
  ``ring_id`` inferred from the device's column: ``ring_distributed_sdpa_program_factory.cpp`` @
  00fca5923584fcfa5a069593b010f93f449d3be3, query chunks ``ring_id`` and ``2 * ring_size - 1 - ring_id``):
  our ``heads@rows,seq@columns`` (``splits.py``); its output is gathered back on ``cluster_axis=1`` by two
  ``ring_all_gather`` calls (each chip's first and second chunk, the second in reverse order) and a concat
  before ``wo``: the ``seq`` split's own gathers, its output replicated on the columns;
* ``distributed_norm.py`` @ 0b50bdd8f28cb423ad18403baee8e4d33817dc1c: on a Galaxy both phases call
  ``tt_distributed_rmsnorm`` (its stats all-gathered on ``cluster_axis=1`` with ``num_links=1``): the norm is
  distributed over the columns (``cols@columns``), which is our distributed norm's split;
* ``model_config.py`` @ 019d812b3321dbb5055242f5ab1029b72f7ed152: Wormhole ``GALAXY_NUM_LINKS`` 4 on a 6U
  Galaxy (3 on a 4U), ``CCL_TOPOLOGY`` ``Ring`` on a 6U (``Linear`` on a 4U); the shipped ``galaxy`` mesh is
  the 6U torus. ``llama_mlp.py``: in prefill a Wormhole Galaxy's MLP collectives pass ``num_links=3``;
  ``llama_ccl.py`` @ 00ab7c952127176992634047a2555da7aab90f93: in prefill with a ring topology the
  reduce-scatters run ``reduce_scatter_minimal_async`` with ``num_links = 4`` and ``Topology.Ring`` (whatever
  was passed) and the all-gathers ``ring_all_gather`` (``num_links = 4``, ``Topology.Ring``); in decode every
  collective takes ``CCL_TOPOLOGY``.

So decode pins every tensor's collectives to 4 links and a ring; prefill pins the reduce-scattered tensors
(``w1``, ``w3``) to 4 links and the others to 3, all rings. The ring-distributed SDPA's two order-restoring
gathers are the ``seq`` split's own (``splits.seq_gathers``: every link of the columns, 4 on the 6U Galaxy, a
ring, as ``ring_all_gather`` passes them).

**What is not ttnn's.** In decode ttnn pads the users to a tile of 32 (8 per column, ``llama_attention.py``:
``batch_size_per_device_group``); with fewer users than columns (decode at batch 1) the users cannot be
split over the columns in the model, so each column's chips are costed computing the attention of all the
users (``heads@rows``: what the padding amounts to at best), with an all-reduce of the qkv partial sums on the
columns in place of the reduce-scatter onto the users. In prefill the ring-distributed SDPA's chip is
priced as ``splits.py``'s ``seq`` per-chip problem (a non-causal problem of the chip's quarter of the queries
against the mean keys they need, within 0.92-1.17 of a quarter of the whole causal problem in this model).
At 1k tokens and less ttnn runs the plain causal SDPA on each row's heads, replicated on the
columns (``heads@rows``). Fused ops (``llama_rs_matmul``, the fused create-heads collectives, the
prefetcher), ttnn's data formats (bfp8/bfp4 weights) and per-op program configs are left out, as in
``ttnn_split.py``.
"""

from __future__ import annotations

from loom_explorer.mesh.graph import OpGraph
from loom_explorer.mesh.states import MeshError, MeshView

GALAXY_VIEW = "mesh"  # llama3_70b_galaxy opens the Galaxy as MeshShape(8, 4): rows (cluster_axis 0) x columns
DECODE_LINKS = 4  # GALAXY_NUM_LINKS on a 6U Galaxy (model_config.py)
PREFILL_LINKS = 3  # llama_mlp.py / llama_attention.py prefill num_links on a Wormhole Galaxy
PREFILL_RS_LINKS = 4  # llama_ccl.py ring_reduce_scatter and ring_all_gather: num_links = 4
RING_SDPA_MIN_TOKENS = 1025  # llama_attention.py: ring_distributed_sdpa = seq_len > 1024 and batch_size == 1


def galaxy_layer_pins(graph: OpGraph, views: tuple[MeshView, ...], prefill: bool) -> tuple[str, ...]:
    """The pins that make our model cost llama3_70b_galaxy's split of ``graph`` (a decoder layer)."""
    if graph.name != "decoder_layer":
        raise MeshError(f"ttnn's Galaxy split is written for a decoder layer, not graph {graph.name}")
    mesh = [v for v in views if v.name == GALAXY_VIEW]
    if not mesh or tuple((a.name, a.chips) for a in mesh[0].axes) != (("rows", 8), ("columns", 4)):
        raise MeshError("ttnn's Galaxy split needs an 8 x 4 mesh view (rows of 8 chips, columns of 4)")
    columns = mesh[0].axes[1].chips
    users = graph.op("attention").dim("B")
    by_users = not prefill and users % columns == 0  # module docstring: fewer users than columns
    attention = "heads@rows,batch@columns" if by_users else "heads@rows"
    tokens = graph.op("attention").dim("Sq")
    ring = prefill and users == 1 and tokens >= RING_SDPA_MIN_TOKENS  # ring-distributed SDPA on the columns
    if ring:
        attention = "heads@rows,seq@columns"
    splits = {
        "x": f"{GALAXY_VIEW}:R,Sc",
        "attn_norm": "cols@columns",
        "qkv": "N@rows,K@columns",
        "attention": attention,
        "wo": "K@rows,N@columns",
        "residual_attn": "cols@columns",
        "ffn_norm": "cols@columns",
        "w1": "N@rows,K@columns",
        "w3": "N@rows,K@columns",
        "swiglu": "cols@rows,cols@columns",
        "w2": "K@rows,N@columns",
        "residual_ffn": "cols@columns",
    }
    pins = [f"view={GALAXY_VIEW}", *(f"{op}.split={name}" for op, name in splits.items())]
    for op in splits:
        links = DECODE_LINKS if not prefill else PREFILL_RS_LINKS if op in ("w1", "w3") else PREFILL_LINKS
        pins += [f"{op}.num_links={links}", f"{op}.topology=ring"]
    return tuple(pins)
