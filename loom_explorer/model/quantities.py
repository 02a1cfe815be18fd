"""What every kernel family's quantities share, and the helpers that declare their parameters.

:class:`GridQuantities` holds what every structure shares (grid, per-core extents of the spread
dimensions, streamed inputs with their buffer depths, multicast groups and DRAM readers); the
constraint families are written against it, and each family's quantities extend it (the contraction's
in ``families/contraction/quantities.py``). Counts are in 32x32 tiles: ``grid_x``, ``grid_y`` the columns
and rows of cores used, ``per_core_d`` the extent of ``d`` one core handles (``E_d`` when ``d`` is on no grid
axis), ``<tensor>_buffer_depth`` in {1, 2, 3} the blocks an input's circular buffer holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from loom_explorer.hardware.schema import DataFormat, HardwareSpec
from loom_explorer.mapping.candidate import Axis, Candidate, Comm
from loom_explorer.model.domain import Domain
from loom_explorer.model.expr import Expr, Var, ceil_div, const, mul
from loom_explorer.model.schedule import Param
from loom_explorer.problem import Problem

BUFFER_DEPTHS = (1, 2, 3)


@dataclass(frozen=True, eq=False)
class GridQuantities:
    """What every structure's model shares: the grid used, the per-core extents of the spread dimensions,
    the streamed inputs with their buffer depths, and how multicast groups and DRAM readers follow."""

    hw: HardwareSpec
    problem: Problem
    candidate: Candidate
    params: tuple[Param, ...]
    grid_x: Var
    grid_y: Var
    per_core: dict[str, Var]
    depth: dict[str, Var]  # streamed input -> buffer depth

    def extent(self, dim: str) -> Expr | int:
        """Extent of a grid-carried dimension in the units ``per_core_<dim>`` counts."""
        return self.problem.tiles(dim)

    def axis_cores(self, axis: Axis) -> Expr:
        """Cores along ``axis`` (``xy``: the cores of a 1-D layout that hold work)."""
        if axis == "x":
            return self.grid_x
        if axis == "y":
            return self.grid_y
        return self.used_cores_1d

    @property
    def used_cores_1d(self) -> Expr:
        dim = self.candidate.dim_on("xy")
        assert dim is not None
        return ceil_div(self.extent(dim), self.per_core[dim])

    @property
    def cores(self) -> Expr:
        """Cores that hold work."""
        if self.candidate.is_1d:
            return self.used_cores_1d
        return mul(self.grid_x, self.grid_y)

    @property
    def streamed(self) -> tuple[str, ...]:
        return tuple(t for t, _ in self.candidate.comms)

    @property
    def flat(self) -> str | None:
        """The flattened axis entry (``H*W``), if the layout deals all tiles out row-major."""
        return next((carried for _, carried in self.candidate.axes if "*" in carried), None)

    def grouped_axes(self, tensor: str) -> list[tuple[Axis, str]]:
        """(axis, dim) of each grid axis ``tensor`` is multicast along whose dim indexes it through a grouped
        index (``k[Hkv]`` along ``H``): its multicast there reaches one head group, not the whole axis."""
        comm = self.candidate.comm(tensor)
        if comm.axis is None or self.candidate.is_1d:
            return []
        out: list[tuple[Axis, str]] = []
        axes: tuple[Axis, ...] = ("x", "y") if comm is Comm.mcast_xy else (comm.axis,)
        for axis in axes:
            dim = self.candidate.dim_on(axis)
            if dim is not None and self.problem.program.grouped_by(tensor, dim) is not None:
                out.append((axis, dim))
        return out

    def axis_receivers(self, tensor: str, axis: Axis) -> Expr:
        """Cores along ``axis`` one multicast of ``tensor`` reaches (all of them unless grouped)."""
        return self.axis_cores(axis)

    def mcast_receivers(self, tensor: str) -> Expr:
        """Cores one multicast of ``tensor`` reaches (its sender included)."""
        axis = self.candidate.comm(tensor).axis
        assert axis is not None
        return self.cores if axis == "xy" else self.axis_cores(axis)

    def mcast_hops(self, tensor: str) -> Expr:
        """Hops from the sender to the farthest receiver."""
        comm = self.candidate.comm(tensor)
        if comm is Comm.mcast_xy:
            return self.grid_x + self.grid_y - 2
        assert comm.axis is not None, f"{tensor} is not multicast"
        return self.axis_cores(comm.axis) - 1

    def mcast_readers(self, tensor: str) -> Expr:
        """Cores that read a multicast ``tensor`` from DRAM (one per multicast group)."""
        comm = self.candidate.comm(tensor)
        if comm is Comm.mcast_x:
            return self.grid_y
        if comm is Comm.mcast_y:
            return self.grid_x
        return const(1)

    def block_tiles(self, tensor: str) -> Expr:
        """Tiles of ``tensor`` one streaming step moves."""
        raise NotImplementedError

    def fmt(self, tensor: str) -> DataFormat:
        return self.problem.data_format(tensor)

    def tile_bytes(self, tensor: str) -> int:
        return self.hw.tile_bytes[self.fmt(tensor)]

    @property
    def output(self) -> str:
        """The output tensor."""
        raise NotImplementedError

    @property
    def acc_tile_bytes(self) -> int:
        """Bytes of one partial-sum tile: fp32 with fp32 accumulation, else the output's format."""
        if self.problem.fp32_acc:
            return self.hw.tile_bytes[DataFormat.float32]
        return self.tile_bytes(self.output)

    @property
    def dst_tiles(self) -> int:
        c = self.hw.compute
        return c.dst_tiles_fp32_acc if self.problem.fp32_acc else c.dst_tiles

    def divisibility_pairs(self) -> list[tuple[Var, Expr, str]]:
        """``(a, b, b's name)``: ``a`` must divide ``b``."""
        raise NotImplementedError

    def subblock_pairs(self) -> list[tuple[str, Var, Var]]:
        """``(matmul name, sub-block height, width)`` of every matmul accumulated in Dst."""
        raise NotImplementedError


ParamMaker = Callable[..., Var]


def param_maker(params: list[Param]) -> ParamMaker:
    """A function ``param(name, values, description, unit, bound="")`` that declares a parameter into
    ``params``; ``values`` is a :class:`Domain` (or a small explicit collection of integers)."""

    def param(name: str, values: Domain | Iterable[int], description: str, unit: str, bound: str = "") -> Var:
        var = Var(name, values if isinstance(values, Domain) else Domain.of(values))
        params.append(Param(var, description, unit, bound))
        return var

    return param


def grid_params(hw: HardwareSpec, candidate: Candidate, param: ParamMaker) -> tuple[Var, Var]:
    """``grid_x``, ``grid_y``: free up to the hardware grid along the axes the candidate uses, else 1."""
    used = {a for a, _ in candidate.axes}
    gx = param(
        "grid_x", Domain.range(1, hw.grid.columns) if used & {"x", "xy"} else (1,), "columns of cores used", "cores"
    )
    gy = param("grid_y", Domain.range(1, hw.grid.rows) if used & {"y", "xy"} else (1,), "rows of cores used", "cores")
    return gx, gy


def axis_core_limit(hw: HardwareSpec, axis: str) -> int:
    """The most cores a grid axis can hold: the hardware's columns (``x``), rows (``y``), or all of its cores
    (``xy``, a 1-D layout)."""
    return hw.grid.columns if axis == "x" else hw.grid.rows if axis == "y" else hw.grid.columns * hw.grid.rows


def spread_domain(hw: HardwareSpec, axis: str, least_extent: int, most_extent: int) -> tuple[Domain, str]:
    """Domain of ``per_core_d`` for a dimension on grid axis ``axis`` whose extent (in the units it counts) lies
    in ``least_extent..most_extent``: ``ceil(least_extent / G)..most_extent``, ``G`` the axis's most cores.

    Exact: coverage (``model/constraints/coverage.py``) needs ``g * per_core_d >= E_d`` with ``g <= G`` cores
    (2-D), or ``ceil(E_d / per_core_d) <= grid_x * grid_y <= G`` (1-D), so ``per_core_d >= ceil(E_d / G)``:
    a smaller value could never cover the dimension. The domain is an interval whatever the extent."""
    cores = axis_core_limit(hw, axis)
    least = max(1, -(-least_extent // cores))
    bound = f"coverage: at most {cores} cores along {axis} cover {least_extent:,} only with {least:,} or more each"
    return Domain.range(least, max(least, most_extent)), bound if least > 1 else ""


def l1_block_limit(hw: HardwareSpec, own_bytes: int, other_bytes: int) -> int:
    """The largest count ``n`` of tiles along one block side such that ``n * own_bytes + other_bytes`` fits the
    usable L1 (at least 1, so that a chip too small for any block still gets a domain and an explained
    conflict): ``own_bytes`` the bytes each unit of the side costs in buffers that grow with it, when every
    other block side and buffer depth is 1; ``other_bytes`` what the buffers cost that do not grow with it.
    A larger value breaks the L1 capacity constraint on its own, so cutting the domain there is exact."""
    return max(1, (hw.l1.usable_bytes - other_bytes) // own_bytes)
