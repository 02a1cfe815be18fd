"""Multi-chip splits: how each op of a graph is divided over the chips of a mesh, the collectives between
the ops, and the joint CP-SAT model that picks the fastest split of every op together with the proven
on-chip schedule of each chip's share (docs/mesh.md).

Modules, bottom up: ``states`` (mesh views, axes and the sharding state of a tensor), ``transitions`` (the
collectives that move a tensor from one state to another, costed by the registered collective model),
``splits`` (what one chip computes under each split of an op), ``graph`` (op graphs: a matmul, an MLP, an
attention block, a decoder layer), ``bounds`` (per-chip lower bounds: compute roofline, DRAM floor),
``capacity`` (what a split keeps in a chip's DRAM), ``onchip`` (each split's per-chip problem, its bound and
its proven optimum), ``joint`` (the CP-SAT model over splits, states and collective parameters; pins and
conflicts), ``plan`` (the bound-and-refine loop that proves the answer) and ``ttnn_split`` (tt-metal's
hand-written Llama split on a T3000, as pins).
"""
