"""The registry of kernel families at the program layer, and the analysis of a program by its family.

Families are plug-ins (``loom_explorer/plugins.py``): :func:`program_families` reads the
:class:`~loom_explorer.program.family.ProgramFamily` of each from the entry-point group
``loom_explorer.program_families``. A program belongs to the one family whose ``matches`` accepts it, or
else to the fallback family (the contraction, which accepts every program, so a program of no known shape
gets the contraction's explanation of what it lacks). A program two families claim is a
``ProgramStructureError``: families must tell their programs apart. A family that is a variant of another's
programs (``ProgramFamily.variant_of``) claims none (:func:`variant_families`).
"""

from __future__ import annotations

from loom_explorer.plugins import PluginError, registered
from loom_explorer.program.dsl import TileProgram
from loom_explorer.program.family import ProgramFamily, ProgramStructureError, Structure

GROUP = "loom_explorer.program_families"


def program_families() -> tuple[ProgramFamily, ...]:
    """Every registered family that claims programs (none a variant of another), the fallback last (PluginError
    unless exactly one is the fallback)."""
    families = [f for f in registered(GROUP, ProgramFamily).values() if f.variant_of is None]
    fallback = [f for f in families if f.fallback]
    if len(fallback) != 1:
        raise PluginError(
            f"group {GROUP} needs exactly one fallback family, has {', '.join(f.name for f in fallback) or 'none'}"
        )
    return (*[f for f in families if not f.fallback], fallback[0])


def variant_families(name: str | None = None) -> tuple[ProgramFamily, ...]:
    """Every registered family that is a variant of another's programs (of family ``name``'s, when given)."""
    return tuple(
        f
        for f in registered(GROUP, ProgramFamily).values()
        if f.variant_of is not None and (name is None or f.variant_of == name)
    )


def program_family(program: TileProgram) -> ProgramFamily:
    """The family of ``program``: the one non-fallback family that matches it, else the fallback."""
    *specific, fallback = program_families()
    claims = [f for f in specific if f.matches(program)]
    if len(claims) > 1:
        raise ProgramStructureError(
            f"program {program.name} has the shape of several kernel families: {', '.join(f.name for f in claims)}"
        )
    return claims[0] if claims else fallback


def analyse_program(program: TileProgram) -> Structure:
    """``program``'s structure, analysed by its family (``ProgramStructureError`` when malformed)."""
    return program_family(program).analyse(program)


__all__ = ["ProgramFamily", "Structure", "analyse_program", "program_families", "program_family", "variant_families"]
