"""The one correspondence between TTNN's multicast matmul program configs and our schedules, read in both
directions: ``ttnn.py`` (a schedule -> the config that runs it, the TTNN export) and
``ttnn_config.py`` (a published config -> the candidate and parameter values it runs).

Which candidate a config runs (``LAYOUTS``; ``M``, ``N`` the output's row and column dimensions, ``in0``,
``in1`` the matmul's inputs):

| config | flag | M on | N on | in0 | in1 |
|---|---|---|---|---|---|
| ``MatmulMultiCoreReuseMultiCastProgramConfig`` | ``transpose_mcast=False`` | y | x | ``mcast_x`` | ``mcast_y`` |
| ``MatmulMultiCoreReuseMultiCastProgramConfig`` | ``transpose_mcast=True`` | x | y | ``mcast_y`` | ``mcast_x`` |
| ``MatmulMultiCoreReuseMultiCast1DProgramConfig`` | ``mcast_in0=True`` | - | xy | ``mcast_xy`` | ``dram`` |
| ``MatmulMultiCoreReuseMultiCast1DProgramConfig`` | ``mcast_in0=False`` | xy | - | ``dram``/``local`` | ``mcast_xy`` |

(``local``: in0 height-sharded in L1, as TTNN's 1-D config reads it; no candidate splits K.)

Which parameter each argument is (``MatmulArgs``): ``in0_block_w``, ``out_subblock_h/w`` and
``out_block_h/w`` are the parameters of the same names, ``per_core_M``/``per_core_N`` are ``per_core_<M>``
and ``per_core_<N>``. ``compute_with_storage_grid_size`` is ``(grid_x, grid_y)``. TTNN runs the cores the
blocks need inside that grid, so the schedule's grid is read back from the blocks:

* 2-D: ``ceil(Mt/per_core_M)`` cores along M's axis and ``ceil(Nt/per_core_N)`` along N's (the model's
  coverage constraints make ``grid_x``, ``grid_y`` exactly these);
* 1-D: ``u = ceil(Mt/per_core_M) * ceil(Nt/per_core_N)`` cores filled row by row into the config's
  ``gx`` columns: ``grid_x = min(gx, u)``, ``grid_y = ceil(u/gx)``.

What TTNN fixes: the whole of K per core (``per_core_K = Kt``) and input buffers of
``ttnn_buffer_blocks(Kt / in0_block_w)`` blocks (2, or 1 with a single K block).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from loom_explorer.mapping.candidate import Axis, Candidate, Comm

TWO_D = "MatmulMultiCoreReuseMultiCastProgramConfig"
ONE_D = "MatmulMultiCoreReuseMultiCast1DProgramConfig"
TTNN_BUFFER_BLOCKS = 2  # TTNN double-buffers both inputs (single-buffers with one K block)


@dataclass(frozen=True, slots=True)
class MatmulLayout:
    """One row of the module docstring's table: a config class and flag, and the candidate it runs
    (``None``: the dimension is on no axis)."""

    config_class: str
    flag: Literal["transpose_mcast", "mcast_in0"]
    flag_value: bool
    m_axis: Axis | None
    n_axis: Axis | None
    in0: tuple[Comm, ...]
    in1: Comm

    def runs(self, cand: Candidate, m_dim: str, n_dim: str, in0: str, in1: str) -> bool:
        """Whether ``cand`` (output dims ``m_dim``, ``n_dim``; inputs ``in0``, ``in1``) is this config's."""
        return (
            cand.gather_axis is None
            and cand.comm(in0) in self.in0
            and cand.comm(in1) is self.in1
            and (self.m_axis is None or cand.axis_of(m_dim) == self.m_axis)
            and (self.n_axis is None or cand.axis_of(n_dim) == self.n_axis)
        )

    def candidate(self, m_dim: str = "M", n_dim: str = "N", in0: str = "in0", in1: str = "in1") -> Candidate:
        """The candidate this config runs, with in0 read from DRAM where that is one of its choices."""
        axes = tuple(
            (axis, dim)
            for axis in ("y", "x", "xy")
            for dim, on in ((m_dim, self.m_axis), (n_dim, self.n_axis))
            if on == axis
        )
        return Candidate(axes=axes, comms=((in0, self.in0[0]), (in1, self.in1)))


LAYOUTS = (
    MatmulLayout(TWO_D, "transpose_mcast", False, "y", "x", (Comm.mcast_x,), Comm.mcast_y),
    MatmulLayout(TWO_D, "transpose_mcast", True, "x", "y", (Comm.mcast_y,), Comm.mcast_x),
    MatmulLayout(ONE_D, "mcast_in0", True, None, "xy", (Comm.mcast_xy,), Comm.dram),
    MatmulLayout(ONE_D, "mcast_in0", False, "xy", None, (Comm.dram, Comm.local), Comm.mcast_xy),
)
CONFIG_CLASSES = (TWO_D, ONE_D)


def layout_of_candidate(cand: Candidate, m_dim: str, n_dim: str, in0: str, in1: str) -> MatmulLayout | None:
    """The config that runs ``cand`` (None: TTNN's multicast matmuls do not)."""
    return next((lay for lay in LAYOUTS if lay.runs(cand, m_dim, n_dim, in0, in1)), None)


def layout_of_config(config_class: str, transpose_mcast: bool, mcast_in0: bool | None) -> MatmulLayout:
    """The row of a config (``config_class`` one of ``CONFIG_CLASSES``; ``mcast_in0`` None reads as False)."""
    flag = transpose_mcast if config_class == TWO_D else bool(mcast_in0)
    return next(lay for lay in LAYOUTS if lay.config_class == config_class and lay.flag_value == flag)


def ttnn_buffer_blocks(k_blocks: int) -> int:
    """The blocks TTNN buffers of each input when a core steps through ``k_blocks`` blocks of K."""
    return TTNN_BUFFER_BLOCKS if k_blocks > 1 else 1


@dataclass(frozen=True, slots=True)
class MatmulArgs:
    """A multicast matmul config's arguments (the constructor's names; ``grid`` is
    ``compute_with_storage_grid_size``), without the class and its flag."""

    grid: tuple[int, int]
    in0_block_w: int
    out_subblock_h: int
    out_subblock_w: int
    out_block_h: int
    out_block_w: int
    per_core_M: int
    per_core_N: int

    def constructor_args(self, layout: MatmulLayout) -> dict[str, object]:
        """The arguments as the exported file and ``predict --ttnn-config`` spell them."""
        return {
            "compute_with_storage_grid_size": list(self.grid),
            "in0_block_w": self.in0_block_w,
            "out_subblock_h": self.out_subblock_h,
            "out_subblock_w": self.out_subblock_w,
            "out_block_h": self.out_block_h,
            "out_block_w": self.out_block_w,
            "per_core_M": self.per_core_M,
            "per_core_N": self.per_core_N,
            layout.flag: layout.flag_value,
            "fuse_batch": True,
            "fused_activation": None,
        }


def config_args(values: dict[str, int], m_dim: str, n_dim: str) -> MatmulArgs:
    """Schedule -> config: the arguments of a schedule's parameter ``values`` (module docstring)."""
    return MatmulArgs(
        grid=(values["grid_x"], values["grid_y"]),
        in0_block_w=values["in0_block_w"],
        out_subblock_h=values["out_subblock_h"],
        out_subblock_w=values["out_subblock_w"],
        out_block_h=values["out_block_h"],
        out_block_w=values["out_block_w"],
        per_core_M=values[f"per_core_{m_dim}"],
        per_core_N=values[f"per_core_{n_dim}"],
    )


def schedule_values(
    layout: MatmulLayout, args: MatmulArgs, tiles: tuple[int, int, int], dims: tuple[str, str, str] = ("M", "N", "K")
) -> dict[str, int]:
    """Config -> schedule: the parameter values ``args`` run, for ``tiles`` = (Mt, Nt, Kt) of the output's
    row, column and reduction ``dims`` (module docstring). The buffer depths are named for the inputs
    ``in0`` and ``in1``."""
    mt, nt, kt = tiles
    m_dim, n_dim, k_dim = dims
    along_m, along_n = math.ceil(mt / args.per_core_M), math.ceil(nt / args.per_core_N)
    if layout.config_class == ONE_D:
        used, columns = along_m * along_n, args.grid[0]
        grid = (min(columns, used), math.ceil(used / columns))
    else:
        grid = (along_n, along_m) if layout.n_axis == "x" else (along_m, along_n)
    depth = ttnn_buffer_blocks(kt // args.in0_block_w if kt % args.in0_block_w == 0 else 0)
    return {
        "grid_x": grid[0],
        "grid_y": grid[1],
        f"per_core_{m_dim}": args.per_core_M,
        f"per_core_{n_dim}": args.per_core_N,
        f"per_core_{k_dim}": kt,
        "in0_block_w": args.in0_block_w,
        "out_block_h": args.out_block_h,
        "out_block_w": args.out_block_w,
        "out_subblock_h": args.out_subblock_h,
        "out_subblock_w": args.out_subblock_w,
        "in0_buffer_depth": depth,
        "in1_buffer_depth": depth,
    }
