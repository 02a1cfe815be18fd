"""The registry of kernel families at the model layer.

Families are plug-ins (``loom_explorer/plugins.py``): :func:`model_families` reads one
:class:`~loom_explorer.model.families.base.ModelFamily` per program family from the entry-point group
``loom_explorer.model_families``, keyed by name; :func:`model_family` is the one for a program.
"""

from __future__ import annotations

from collections.abc import Mapping

from loom_explorer.mapping.candidate import Candidate
from loom_explorer.mapping.variants import family_name
from loom_explorer.model.families.base import FamilyModel, ModelFamily
from loom_explorer.plugins import PluginError, registered
from loom_explorer.program.dsl import TileProgram

GROUP = "loom_explorer.model_families"


def model_families() -> Mapping[str, ModelFamily]:
    """Every registered family's model hooks, by family name."""
    return registered(GROUP, ModelFamily)


def model_family(program: TileProgram, candidate: Candidate | None = None) -> ModelFamily:
    """The model hooks of ``candidate``'s family (``Candidate.family``) when it names one, else of ``program``'s
    family (PluginError when that family registered none)."""
    name = family_name(program, candidate)
    family = model_families().get(name)
    if family is None:
        raise PluginError(
            f"kernel family {name} registers no model (group {GROUP}), so {program.name} cannot be scheduled"
        )
    return family


__all__ = ["FamilyModel", "ModelFamily", "model_families", "model_family"]
