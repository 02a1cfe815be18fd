"""The program-level contract of a kernel family: what its analysis of a program answers.

A kernel family is a shape of tile program the engine can schedule (a blocked contraction, attention).
At this layer a family is a :class:`ProgramFamily`: a name, ``matches(program)`` (does the program have
this family's shape) and ``analyse(program)`` (its :class:`Structure`, raising
``ProgramStructureError`` with the reason when the program is malformed for the family). Families are
plug-ins (``loom_explorer/plugins.py``): ``program/structure.py`` reads them from the entry-point group
``loom_explorer.program_families``; the model, export and accuracy layers read their own groups, keyed by
the family's ``name``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from loom_explorer.program.dsl import ProgramError, TileProgram


class ProgramStructureError(ProgramError):
    """The program is a valid tile program but not of a shape its family's model can schedule (e.g. not a
    single-matmul contraction); the message says what it lacks."""


class Structure(Protocol):
    """What a family's analysis of a program answers: the questions the generic candidate enumerator
    (``mapping/enumerate.py``) asks.

    * ``spread_dims``: dimensions that may go on a grid axis (each core a share of them);
    * ``split_dims``: reductions that may be split over a grid axis (partial results gathered);
    * ``streamed``: the inputs that travel to the cores block by block (DRAM or multicast);
    * ``output``: the tensor written back, whose placement must fit the layout;
    * ``flatten``: whether the tasks of all spread dims may be flattened into one 1-D layout;
    * ``gather_1d``: whether a split dim may also go alone on a 1-D layout (its partials gathered to core 0).
    """

    @property
    def program(self) -> TileProgram: ...

    @property
    def spread_dims(self) -> tuple[str, ...]: ...

    @property
    def split_dims(self) -> tuple[str, ...]: ...

    @property
    def streamed(self) -> tuple[str, ...]: ...

    @property
    def output(self) -> str: ...

    @property
    def flatten(self) -> bool: ...

    @property
    def gather_1d(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class ProgramFamily:
    """A kernel family at the program layer. ``name`` keys the family's hooks in the later layers (model,
    export, accuracy); ``matches`` is cheap and never raises; ``analyse`` is only called on a program the
    family matches.

    ``fallback``: the family that takes a program no other family matches (there is one: the contraction,
    whose analysis says what a program of no known shape lacks); every other family's ``matches`` must
    reject the programs of the others. ``activation_required``: the family's activation ops are its whole
    computation (an element-wise ``y = f(x)``), so a program that uses one needs an activation chosen.
    ``variant_of``: the family whose programs this family's candidates also schedule (it claims no program of
    its own, ``matches`` is never asked: it contributes candidates to that family's programs, each naming it as
    ``Candidate.family``, and models, writes and runs them)."""

    name: str
    description: str
    matches: Callable[[TileProgram], bool]
    analyse: Callable[[TileProgram], Structure]
    fallback: bool = False
    activation_required: bool = False
    variant_of: str | None = None
