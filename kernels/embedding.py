"""An embedding lookup: y[P, C] = table[index[P], C], one table row per output row (``ttnn.embedding``).

Written only with the tile DSL, a gather program (``families/gather/program.py``): ``R`` (the vocabulary) is
selected by the index, walked by no iteration, so only the table names it.
"""

from loom_explorer.program import Dim, Gather, Tensor, TileProgram

PROGRAM = TileProgram(
    name="embedding",
    description="y = table[index]: one table row per output row; table [R, C], index [P], y [P, C]",
    example_shape="P=128,C=768,R=49408",
    dims=(
        Dim("P", "parallel", tile=1, description="output rows (tokens)"),
        Dim("C", "parallel", description="row width (hidden size)"),
        Dim("R", "parallel", tile=1, description="table rows (vocabulary), selected by the index"),
    ),
    tensors=(
        Tensor("table", ("R", "C"), "input", description="the embedding table"),
        Tensor("index", ("P",), "input", description="one token id per output row"),
        Tensor("y", ("P", "C"), "output", description="the embeddings"),
    ),
    ops=(Gather("y", "table", "index", rows=1),),
)
