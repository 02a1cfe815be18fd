"""What every exported kernel file shares: its header (problem, candidate, prediction, parameters), its
footer (the embedded schedule document and the main guard), and the statements that multicast a block
through a ``ttl.PipeNet``."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

from loom_explorer.export.exporter import ExportError
from loom_explorer.export.schedule_json import RebuiltSchedule, ScheduleDocument
from loom_explorer.mapping.candidate import Comm
from loom_explorer.model.schedule import SymbolicSchedule

COORDS = ("cx", "cy")
"""The names of a core's grid column and row in the element-wise and row-reduction kernels (``x`` and ``y``
are common tensor names)."""


def header(built: RebuiltSchedule, doc: ScheduleDocument) -> str:
    """The module docstring and the parameter comment block of a TT-Lang file."""
    hw, problem, solution = built.hardware, built.problem, built.solution
    cand = built.schedule.candidate
    pins = ", ".join(f"{p}={x}" for p, x in doc.pins.items()) or "none"
    breakdown = ", ".join(f"{t} {c:,}" for t, c in solution.breakdown)
    params = "\n".join(f"#   {name:<18} = {value}" for name, value in solution.values().items())
    description = textwrap.fill(cand.description, 100, initial_indent="  ", subsequent_indent="  ")
    title = f"{problem.program.name} {problem.shape_text} on {hw.name}: TT-Lang kernel exported by loom-explorer."
    latency_us = hw.cycles_to_us(solution.latency_cycles)
    return (
        f'"""{title}\n\n'
        f"Candidate {cand.name}:\n{description}\nPins: {pins}\n"
        f"Predicted latency: {solution.latency_cycles:,} cycles ({latency_us:.2f} us); "
        f"{breakdown}\n\n"
        "Run it in Tenstorrent's simulator with `tt-lang-sim THIS_FILE.py` "
        "(or `loom-explorer verify THIS_FILE.py`,\n"
        "which also compares the simulated traffic with the model's), or on a card with `python THIS_FILE.py`.\n"
        '"""\n'
        f"# Schedule parameters (tiles of 32x32 unless named otherwise):\n{params}\n"
    )


def footer(doc: ScheduleDocument) -> str:
    """The embedded schedule document (``loom-explorer verify`` reads it) and the main guard."""
    return (
        "# The schedule this file was exported from (loom-explorer's schedule JSON, schema_version 1).\n"
        f'LOOM_SCHEDULE = r"""\n{doc.to_json()}"""\n\nif __name__ == "__main__":\n    main()\n'
    )


@dataclass(frozen=True, slots=True)
class CoreShares:
    """Where a schedule puts each dimension of a rows x columns program on the cores it uses (``working``,
    numbered row by row on a 1-D layout): the grid axis that carries the dimension, how many cores are
    along it, each core's share and the padded extent the shares cover (tiles)."""

    schedule: SymbolicSchedule
    values: dict[str, int]
    working: list[tuple[int, int]]

    def axis(self, dim: str) -> str | None:
        return next((a for a, d in self.schedule.candidate.axes if d == dim), None)

    def cores_along(self, dim: str) -> int:
        """Cores along the axis that carries ``dim`` (1 when none does)."""
        v = self.values
        return {"x": v["grid_x"], "y": v["grid_y"], "xy": len(self.working), None: 1}[self.axis(dim)]

    def share(self, dim: str) -> int:
        """A core's tiles of ``dim``: ``per_core_<dim>``, or all of it on no axis."""
        return self.values[f"per_core_{dim}"] if self.axis(dim) else self.schedule.problem.tiles(dim)

    def padded(self, dim: str) -> int:
        """Tiles of ``dim`` the cores' whole shares cover (the host pads the tensors to them)."""
        return self.cores_along(dim) * self.share(dim)

    def origin(self, dim: str, name: str, share: str) -> str:
        """The statement giving a core its first tile of ``dim`` (``name = index * share``)."""
        cx, cy = COORDS
        index = {"x": cx, "y": cy, "xy": f"({cy} * GRID_X + {cx})"}.get(self.axis(dim) or "")
        return (
            f"{name} = {index} * {share}" if index else f"{name} = 0  # {dim} is not spread: every core takes all of it"
        )

    def tile_loops(self, rows: str, cols: str, flat: bool, inner: str) -> str:
        """``inner`` once per block of a core's share of the ``rows`` x ``cols`` tiles, with ``row``, ``col`` its
        first tile: per ``BLOCK_H x BLOCK_W`` block of its ``SHARE_ROWS x SHARE_COLS`` share on a rectangular
        layout, or per tile of its ``PER_CORE`` flattened tiles (``BLOCK`` at a time) on a flattened one."""
        if flat:
            return (
                "first_tile = (cy * GRID_X + cx) * PER_CORE\n"
                "for step in range(PER_CORE // BLOCK):\n"
                "    for tile in range(BLOCK):\n"
                "        tile_index = first_tile + step * BLOCK + tile\n"
                "        row = tile_index // COLS_TILES\n"
                "        col = tile_index % COLS_TILES\n" + textwrap.indent(inner, "        ")
            )
        origin = [self.origin(rows, "r0", "SHARE_ROWS"), self.origin(cols, "c0", "SHARE_COLS")]
        return (
            "\n".join(origin) + "\n"
            "for br in range(SHARE_ROWS // BLOCK_H):\n"
            "    row = r0 + br * BLOCK_H\n"
            "    for bc in range(SHARE_COLS // BLOCK_W):\n"
            "        col = c0 + bc * BLOCK_W\n" + textwrap.indent(inner, "        ")
        )


def pipe_helpers(tensor: str, blk: str, comm: Comm) -> str:
    """The send/receive functions a multicast ``tensor``'s pipe net calls with ``blk`` ("" without one)."""
    if comm.axis is None:
        return ""
    return textwrap.dedent(f"""\
        def send_{tensor}(pipe):
            ttl.copy({blk}, pipe).wait()

        def receive_{tensor}(pipe):
            ttl.copy(pipe, {blk}).wait()

        """)


def receive_send(tensor: str, comm: Comm, read: str, blk: str, coords: tuple[str, str] = ("x", "y")) -> str:
    """Statements that fill ``blk`` with this step's block of ``tensor`` on every working core (``coords``: the
    names of the core's grid column and row)."""
    if comm in (Comm.dram, Comm.local):
        return f"ttl.copy({read}, {blk}).wait()\n"
    cx, cy = coords
    head = {Comm.mcast_x: f"{cx} == 0", Comm.mcast_y: f"{cy} == 0", Comm.mcast_xy: f"{cx} == 0 and {cy} == 0"}[comm]
    return textwrap.dedent(f"""\
        if {head}:
            ttl.copy({read}, {blk}).wait()
            {tensor}_net.if_src(send_{tensor})
        else:
            {tensor}_net.if_dst(receive_{tensor})
        """)


def pipes(comm: Comm, working: list[tuple[int, int]], gx: int, coords: tuple[str, str] = ("x", "y")) -> str:
    """The PipeNet of a multicast input (``coords``: the names its comprehensions give a core's column and row)."""
    cx, cy = coords
    if comm is Comm.mcast_x:
        return f"ttl.PipeNet([ttl.Pipe(src=(0, {cy}), dst=(slice(1, GRID_X), {cy})) for {cy} in range(GRID_Y)])"
    if comm is Comm.mcast_y:
        return f"ttl.PipeNet([ttl.Pipe(src=({cx}, 0), dst=({cx}, slice(1, GRID_Y))) for {cx} in range(GRID_X)])"
    # mcast_xy: every working core but the first, as rectangles: full rows, then the last partial row
    full_rows, rest = divmod(len(working), gx)
    rects = []
    if min(gx, len(working)) > 1:
        rects.append(f"ttl.Pipe(src=(0, 0), dst=(slice(1, {min(gx, len(working))}), 0))")
    if full_rows > 1:
        rects.append(f"ttl.Pipe(src=(0, 0), dst=(slice(0, {gx}), slice(1, {full_rows})))")
    if rest and full_rows >= 1:
        rects.append(f"ttl.Pipe(src=(0, 0), dst=(slice(0, {rest}), {full_rows}))")
    if not rects:
        raise ExportError("a 1-D multicast to a single working core has no receivers")
    return "ttl.PipeNet([\n        " + ",\n        ".join(rects) + ",\n    ])"


def thread_body(work: str, one_d: bool, coords: tuple[str, str] = ("x", "y")) -> str:
    """A thread body: the node's coordinates (named ``coords``), then ``work`` (1-D: only on the working
    cores, inside an ``if``: the compiler takes no ``return`` in a thread), indented for its place in the
    operation."""
    cx, cy = coords
    if one_d:
        work = (
            f"if {cy} * GRID_X + {cx} < WORKING_CORES:  # 1-D layout: cores are numbered row by row; the rest "
            "idle\n" + textwrap.indent(work, "    ")
        )
    used = [name if re.search(rf"\b{name}\b", work) else "_" for name in coords]
    node = "" if used == ["_", "_"] else f"{used[0]}, {used[1]} = ttl.node(dims=2)\n"
    return textwrap.indent(node + work, "        ")


# Exported kernels are written in the language the TT-Lang compiler takes; ``SIM_ADAPTER`` (placed in the file
# after ``import ttl``) gives the simulator the compiler's signatures where the two differ.
SIM_ADAPTER = '''\
if hasattr(ttl, "block"):
    # tt-lang-sim: its ttl.math.reduce_*/ttl.block.broadcast/ttl.block.fill take a result shape where the
    # compiler takes a scaler block (ones here) or an output block; give the simulator the compiler's forms.
    _sim_reduce_max, _sim_reduce_sum = ttl.math.reduce_max, ttl.math.reduce_sum

    def _scaled(reduce, block, scaler, dims):
        """The compiler's reduce: the reduction times its scaler tile (all ones here)."""
        shape = tuple(1 if i in [d % len(block.shape) for d in dims] else n for i, n in enumerate(block.shape))
        wide = [i for i, n in enumerate(shape) if n > 1]
        return reduce(block, dims, shape) * (ttl.block.broadcast(scaler, wide, shape) if wide else scaler)

    ttl.math.reduce_max = lambda block, scaler, dims: _scaled(_sim_reduce_max, block, scaler, dims)
    ttl.math.reduce_sum = lambda block, scaler, dims: _scaled(_sim_reduce_sum, block, scaler, dims)
    ttl.math.broadcast = lambda block, out, dims: ttl.block.broadcast(block, dims, tuple(out.shape))
    ttl.math.fill = lambda block, value: ttl.block.fill(value, tuple(block.shape))
    ttl.transpose = ttl.block.transpose
'''


# The host side's device transfer: a host tensor to the card, bfloat16 tiles in DRAM (every kernel file).
TO_DEVICE = """\
def to_device(tensor, device):
    return ttnn.from_torch(tensor, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device,
                           memory_config=ttnn.DRAM_MEMORY_CONFIG)
"""


# The device transfer and seeded input draws (GEMM, element-wise and row-reduction kernel files).
HOST_HELPERS = (
    TO_DEVICE
    + '''

def normal(rows, cols, fill_rows, fill_cols):
    """Seeded normal values in the problem's part, zeros in the padding."""
    t = torch.zeros((rows, cols), dtype=torch.bfloat16)
    t[:fill_rows, :fill_cols] = torch.randn((fill_rows, fill_cols), dtype=torch.bfloat16)
    return t


def positive(rows, cols, fill_rows, fill_cols):
    """Seeded values in [0.5, 2) in the problem's part (an op here needs them positive), zeros in the padding."""
    t = torch.zeros((rows, cols), dtype=torch.bfloat16)
    t[:fill_rows, :fill_cols] = (0.5 + 1.5 * torch.rand((fill_rows, fill_cols))).to(torch.bfloat16)
    return t


'''
)


# The kernel file of a dataflow kernel with one reader, one compute and one writer thread (element-wise and
# row-reduction programs): its fields are filled by the family's writer.
DATAFLOW_TEMPLATE = '''\
{header}
import json

import torch
import ttl
import ttnn

# ---------------------------------------------------------------- the schedule
GRID_X, GRID_Y = {gx}, {gy}              # cores used: columns, rows
WORKING_CORES = {working}                # cores with work, numbered {one_d}
{geometry}
{depths}

# the problem ({rows} x {cols} elements), and the padded extents every core's whole share covers
ROWS, COLS = {rows_el}, {cols_el}
ROWS_PAD, COLS_PAD = {rows_pad}, {cols_pad}

{adapter}

@ttl.operation(grid=(GRID_X, GRID_Y))
def {kernel}_kernel({params}):
    {dfbs}

    @ttl.datamovement()
    def read():  # every input, one after the other
{read}
    @ttl.compute()
    def compute():
{compute}
    @ttl.datamovement()
    def write():  # {write_doc}
{write}

KERNEL = {kernel}_kernel


{host_helpers}def kernel_arguments():
    """The host tensors KERNEL takes, in order: the inputs (a vector in row 0 / column 0 of its tiles, a
    scalar at element (0, 0)) and the zero outputs."""
    torch.manual_seed(0)
    {build}
    return [{args}]


def main():
    arguments = kernel_arguments()
    device = ttnn.open_device(device_id=0)
    try:
        on_device = [to_device(t, device) for t in arguments]
        KERNEL(*on_device)
        arguments = on_device
        {results}
    finally:
        ttnn.close_device(device)
    {args} = kernel_arguments()
    {reference}
    pcc = min(torch.corrcoef(torch.stack([got.flatten(), want.flatten()]))[0, 1].item()
              for got, want in [{checks}])
    print("LOOM_RESULT " + json.dumps({{"pcc": pcc}}))
    assert pcc >= 0.999, f"PCC {{pcc:.6f}} < 0.999"


{footer}'''
