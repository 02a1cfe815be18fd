"""The registry of kernel families at the model layer.

``MODEL_FAMILIES`` holds one :class:`~loom_explorer.model.families.base.ModelFamily` per program family
(``program/structure.py``), keyed by name; :func:`model_family` is the one for a program. A new family
is a new module here defining its ``FAMILY`` plus one entry in ``MODEL_FAMILIES``.
"""

from __future__ import annotations

from loom_explorer.model.families import attention, contraction, elementwise, row_reduction
from loom_explorer.model.families.base import FamilyModel, ModelFamily
from loom_explorer.program.dsl import TileProgram
from loom_explorer.program.structure import program_family

MODEL_FAMILIES: dict[str, ModelFamily] = {f.name: f for f in (contraction.FAMILY, attention.FAMILY,
                                                                elementwise.FAMILY, row_reduction.FAMILY)}


def model_family(program: TileProgram) -> ModelFamily:
    """The model hooks of ``program``'s family."""
    return MODEL_FAMILIES[program_family(program).name]


__all__ = ["MODEL_FAMILIES", "FamilyModel", "ModelFamily", "model_family"]
