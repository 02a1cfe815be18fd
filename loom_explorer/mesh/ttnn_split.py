"""tt-metal's hand-written split of a Llama decoder layer on a T3000, written as pins of our model.

Read in tenstorrent/tt-metal, ``models/tt_transformers/tt/`` (reference only):

* ``decoder.py`` @ 9568a92c15b0f08c301e7c35265c91b05d872da8: the residual stream is "fractured across
  devices" (``Sc``) in and out of the layer; the norms take it fractured and give it replicated; the residual
  adds run on fractured tensors;
* ``distributed_norm.py`` @ e91780a5b8356f8693467552c3367d3cd6867c10 and ``model_config.py`` @
  17a8a99d62bb4a596727b72bfd98f574f2d5f002 (``is_distributed_norm``: a 1 x 8 mesh with ``dim > 4096`` in
  prefill): in prefill the norm is distributed over the fractured input, then all-gathered (``num_links=1``);
  in decode the input is all-gathered first and the norm runs replicated. ``ccl_topology``: ``Ring`` on a
  T3000 of 8 devices. ``USE_FUSED_ALL_GATHER_MATMUL``: 8 devices and ``dim / 32 / 8`` a multiple of 8 (true
  for 70B, ``dim = 8192``);
* ``attention.py`` @ 5cd1b56c9adf3bae04601e0f01b3cd46a666b3ef: ``wqkv`` chunked per device's heads
  (column parallel, N over the 8 devices), heads split for SDPA; ``wo`` width-sharded (N over the devices)
  when the fused path is on: in prefill the attention output is all-gathered (``all_gather_async``,
  ``num_links=1``) then multiplied, in decode the gather is fused into the matmul;
* ``mlp.py`` @ 3b3861e20001904e146f29603b66f2a914c8ffe7: ``w1``/``w3`` N over the devices (``dims=(-2, -1)``
  on a 1 x 8 mesh), the SiLU-multiply on the fractured outputs, ``w2`` K over the devices (``dims=(-1, -2)``)
  followed by ``tt_all_reduce``, which on a 1 x 8 mesh is a reduce-scatter over the hidden dim (``ccl.py`` @
  7d857b2a746b87ea7d312c5de0d43f0c6afa5d4d): the output fractured again;
* ``num_reduce_scatter_links = 1`` and ``num_all_gather_links = 1`` off a Galaxy (``model_config.py``).

The collectives' ``num_links`` and ``topology`` are pinned to 1 and ``ring`` on every tensor.
Left out: ttnn's data formats (bfp8 weights and activations; this model runs bf16 throughout) and its
per-op program configs (each op here gets its proven-fastest on-chip schedule).
"""

from __future__ import annotations

from loom_explorer.mesh.graph import OpGraph
from loom_explorer.mesh.states import MeshError, MeshView

TTNN_VIEW = "ring"  # tt_transformers opens a T3000 as a 1 x 8 mesh


def ttnn_layer_pins(graph: OpGraph, views: tuple[MeshView, ...], prefill: bool) -> tuple[str, ...]:
    """The pins that make our model cost tt_transformers' split of ``graph`` (a decoder layer)."""
    if graph.name != "decoder_layer":
        raise MeshError(f"ttnn's hand-written split is written for a decoder layer, not graph {graph.name}")
    ring = [v for v in views if v.name == TTNN_VIEW and v.chips == 8]
    if not ring:
        raise MeshError("ttnn's T3000 split needs a ring view of 8 chips (a mesh with flat_ring, 8 chips)")
    norm = "cols@ring" if prefill else "rep@ring"
    splits = {
        "x": "ring:Sc",
        "attn_norm": norm,
        "qkv": "N@ring",
        "attention": "heads@ring",
        "wo": "N@ring" if prefill else "agN@ring",
        "residual_attn": "cols@ring",
        "ffn_norm": norm,
        "w1": "N@ring",
        "w3": "N@ring",
        "swiglu": "cols@ring",
        "w2": "K@ring",
        "residual_ffn": "cols@ring",
    }
    pins = [f"{op}.split={name}" for op, name in splits.items()]
    for op in splits:
        pins += [f"{op}.num_links=1", f"{op}.topology=ring"]
    return ("view=ring", *pins)
