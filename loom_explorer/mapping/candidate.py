"""A spatial mapping candidate: which dimension each grid axis carries and how each input travels.

Grid axes: ``y`` (rows of cores), ``x`` (columns), and ``xy`` (a 1-D layout: one dimension spread over
the cores of the grid in row-major order, like TTNN's 1-D multicast matmul). Dimensions on no axis are
looped over on every core (temporal "waves").

Communication of an input tensor:

* ``dram``     every core reads its own blocks from DRAM;
* ``mcast_x``  the first core of each row reads and multicasts along the row;
* ``mcast_y``  the first core of each column reads and multicasts down the column;
* ``mcast_xy`` one core reads and multicasts to the whole rectangle of used cores;
* ``local``    the tensor is already sharded in each core's L1 exactly as the core needs it.

A reduction dimension on an axis (split-K) leaves partial outputs that are gathered L1-to-L1 to the
first core along that axis and reduced there.

A 1-D layout may carry several dimensions *flattened* (``B*H*Sq@xy``): their index space, outer to inner,
is dealt out in contiguous ranges over the cores, as TTNN's SDPA splits (batch, head, query chunk).
A multicast along an axis whose dimension indexes the tensor through a grouped index (``k[Hkv]`` along
``H``) reaches the cores of one group.

A kernel family may add variants of a layout (``tags``: each a :class:`Tag` it defines, shown in the name as
``|<tag>`` and described), and a family that is a variant of the program's family (``ProgramFamily.variant_of``)
contributes candidates of its own (``family``: the family whose model builds, writes and runs the candidate;
None: the program's family).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Literal

Axis = Literal["y", "x", "xy"]


class Comm(str, Enum):
    dram = "dram"
    mcast_x = "mcast_x"
    mcast_y = "mcast_y"
    mcast_xy = "mcast_xy"
    local = "local"

    @property
    def axis(self) -> Axis | None:
        return _COMM_AXIS.get(self.value)


_COMM_AXIS: dict[str, Axis] = {"mcast_x": "x", "mcast_y": "y", "mcast_xy": "xy"}


_COMM_WORDS = {
    Comm.dram: "read from DRAM by every core",
    Comm.mcast_x: "read by the first core of each row and multicast along the row",
    Comm.mcast_y: "read by the first core of each column and multicast down the column",
    Comm.mcast_xy: "read by one core and multicast to every core",
    Comm.local: "already in each core's L1",
}
_AXIS_WORDS = {"y": "rows", "x": "columns", "xy": "all cores (1-D)"}


@dataclass(frozen=True, slots=True)
class Tag:
    """A family-defined variant of a candidate: ``name`` follows ``|`` in the candidate's name, ``description``
    is added to its description."""

    name: str
    description: str


@dataclass(frozen=True, slots=True)
class Candidate:
    axes: tuple[tuple[Axis, str], ...]
    comms: tuple[tuple[str, Comm], ...]
    gather_axis: Axis | None = None
    family: str | None = None  # the kernel family whose model builds it; None: the program's family
    tags: tuple[Tag, ...] = ()

    def has_tag(self, name: str) -> bool:
        return any(t.name == name for t in self.tags)

    def dims_on(self, axis: Axis) -> tuple[str, ...]:
        """The dimensions an axis carries, outer to inner (several for a flattened 1-D layout)."""
        dim = self.dim_on(axis)
        return tuple(dim.split("*")) if dim else ()

    @property
    def flattened(self) -> bool:
        return len(self.dims_on("xy")) > 1

    def dim_on(self, axis: Axis) -> str | None:
        return dict(self.axes).get(axis)

    def axis_of(self, dim: str) -> Axis | None:
        for axis, d in self.axes:
            if d == dim:
                return axis
        return None

    def comm(self, tensor: str) -> Comm:
        return dict(self.comms)[tensor]

    @property
    def is_1d(self) -> bool:
        return any(axis == "xy" for axis, _ in self.axes)

    @property
    def name(self) -> str:
        layout = ",".join(f"{d}@{a}" for a, d in self.axes) or "single_core"
        comms = ",".join(f"{t}={c.value}" for t, c in self.comms)
        return f"{layout}|{comms}" + "".join(f"|{t.name}" for t in self.tags)

    @property
    def description(self) -> str:
        layout = (
            "; ".join(f"{d.replace('*', ' x ')} across {_AXIS_WORDS[a]}" for a, d in self.axes)
            or "one core does all the work"
        )
        comms = "; ".join(f"{t} {_COMM_WORDS[c]}" for t, c in self.comms)
        text = f"{layout}; {comms}"
        if self.gather_axis:
            text += f"; partial sums gathered along {_AXIS_WORDS[self.gather_axis]} and reduced"
        for tag in self.tags:
            text += f"; {tag.description}"
        return text
