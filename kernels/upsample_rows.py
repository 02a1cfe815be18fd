"""Nearest upsample of a row-major tensor by its sticks: y[H, W], each of x's ``Hx = H / k`` sticks (rows of W
elements) read once and written ``k = scale_h * scale_w`` times.

Written only with the tile DSL, a data-movement program (``families/data_movement/program.py``). The DSL has
no repeat (a move neither reduces nor broadcasts, ``docs/dsl.md`` section 10), so the source is indexed by a
part of the output's rows (``Hx`` of ``H``): the model reads it as moving only ``Hx`` sticks (each read once,
one row-major page a stick) while all ``H`` sticks are written, which is the traffic of ttnn's interleaved
nearest upsample (``upsample_program_factory_multicore_interleaved.cpp``, tenstorrent/tt-metal
``ttnn/cpp/ttnn/operations/pool/upsample/device/`` @6ac853f9d41488a60d4934f0e2ad340ac3cbc42a: the reader reads
one input stick into the buffer, the writer writes it ``scale_factor_h * scale_factor_w`` times). Read as a
plain program it is a pad of x to ``H`` sticks: the same sticks move, the values written differ, and the model
costs only the moves.
"""

from loom_explorer.program import Dim, Move, Tensor, TileProgram

PROGRAM = TileProgram(
    name="upsample_rows",
    description="y = x's Hx sticks each written H/Hx times: x [Hx, W], y [H, W], row-major pages of W elements",
    example_shape="H=16384,Hx=4096,W=256",
    dims=(
        Dim("H", "parallel", tile=1, description="output sticks (pages), one at a time"),
        Dim("Hx", "parallel", tile=1, part_of="H", description="input sticks, each read once"),
        Dim("W", "parallel", description="elements of a stick (the channels)"),
    ),
    tensors=(
        Tensor("x", ("Hx", "W"), "input", layout="row_major"),
        Tensor("y", ("H", "W"), "output", layout="row_major"),
    ),
    ops=(Move("x", "y"),),
)
