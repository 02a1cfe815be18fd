"""Kernel families as plug-ins: every shipped family is in every registry (or opted out with a reason), and a
distribution installed beside the package plugs a family in, or is refused with the entry named.

The third-party distributions here are real: a ``*.dist-info`` folder with an ``entry_points.txt`` and a
module on ``sys.path``, read by ``importlib.metadata`` as an installed package would be."""

from __future__ import annotations

from pathlib import Path

import pytest
from plugin_site import forget as _forget
from plugin_site import install as _install

from loom_explorer import plugins
from loom_explorer.accuracy.op_mapping import accuracy_ops
from loom_explorer.model.families import model_families
from loom_explorer.plugins import PluginError, registered
from loom_explorer.program import ProgramFamily, ProgramStructureError, load_program, program_families, program_family
from loom_explorer.program.dsl import Dim, Eltwise, Tensor, TileProgram
from loom_explorer.program.structure import variant_families
from loom_explorer.targets.ttlang.writer import ttlang_writers
from loom_explorer.targets.ttnn.op import ttnn_ops

# registries a family may leave out, and why: (group, family) -> reason
OPTED_OUT: dict[tuple[str, str], str] = {
    ("loom_explorer.ttlang_writers", "gather"): "TT-Lang has no indirect read: a block's tiles are addressed by "
    "the loop indices, so a table row named by data (an embedding's token, a grid sample's neighbour) cannot be read",
}


def _registries() -> dict[str, set[str]]:
    return {
        "loom_explorer.model_families": set(model_families()),
        "loom_explorer.ttlang_writers": set(ttlang_writers()),
        "loom_explorer.ttnn_ops": set(ttnn_ops()),
        "loom_explorer.accuracy_ops": {ops.name for ops in accuracy_ops()},
    }


def test_every_family_is_in_every_registry_or_opted_out() -> None:
    families = {f.name for f in (*program_families(), *variant_families())}
    assert {"contraction", "attention", "elementwise", "row_reduction", "flash_decoding", "convolution"} <= families
    for group, names in _registries().items():
        missing = {f for f in families - names if (group, f) not in OPTED_OUT}
        assert not missing, f"{group} lacks {sorted(missing)}: register them, or opt out in OPTED_OUT with why"
        assert names <= families, f"{group} registers {sorted(names - families)}, which are no program family"
    used = {(g, f) for g, names in _registries().items() for f in families - names}
    assert set(OPTED_OUT) <= used, f"OPTED_OUT lists registered families: {sorted(set(OPTED_OUT) - used)}"
    for variant in variant_families():  # a variant schedules the programs of a family that claims them
        assert variant.variant_of in {f.name for f in program_families()}, variant.name


def test_every_plug_in_group_is_in_the_extending_guide() -> None:
    groups = {ep.group for ep in plugins.checkout_entry_points()}
    guide = (Path(__file__).resolve().parents[1] / "docs" / "extending.md").read_text()
    assert groups and all(f"`{g}`" in guide for g in groups), [g for g in groups if f"`{g}`" not in guide]


ROWSUM = TileProgram(
    name="rowsum",
    description="y[H] = sum_W x[H, W]",
    dims=(Dim("H", "parallel"), Dim("W", "reduction")),
    tensors=(Tensor("x", ("H", "W"), "input"), Tensor("y", ("H",), "output")),
    ops=(Eltwise("add", "y", unit="fpu", operand="x"),),
)

_FAMILY_MODULE = """\
from loom_explorer.program.family import ProgramFamily

def analyse(program):
    raise NotImplementedError

ROWSUM = ProgramFamily(name="rowsum", description="a row sum", matches=lambda p: p.name == "rowsum",
                       analyse=analyse)
GREEDY = ProgramFamily(name="greedy", description="claims attention",
                       matches=lambda p: p.name == "flash_attention", analyse=analyse)
NOT_A_FAMILY = 42
"""


def test_a_third_party_family_plugs_in(site: Path) -> None:
    assert program_family(ROWSUM).name == "contraction"  # before: no family has its shape, the fallback takes it
    _forget()
    _install(site, "rowsumfam", "[loom_explorer.program_families]\nrowsum = rowsumfam_mod:ROWSUM\n", _FAMILY_MODULE)
    assert program_family(ROWSUM).name == "rowsum"
    assert program_families()[-1].name == "contraction"  # the fallback stays last
    assert program_family(load_program("gemm")).name == "contraction"


def test_two_families_claiming_one_program_are_refused_naming_both(site: Path) -> None:
    _install(site, "greedyfam", "[loom_explorer.program_families]\ngreedy = greedyfam_mod:GREEDY\n", _FAMILY_MODULE)
    with pytest.raises(
        ProgramStructureError, match="flash_attention has the shape of several kernel families: attention, greedy"
    ):
        program_family(load_program("flash_attention"))


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        (
            "broken = no_such_module_anywhere:FAMILY",
            "broken = 'no_such_module_anywhere:FAMILY' of group "
            "loom_explorer.program_families cannot be loaded: "
            "ModuleNotFoundError",
        ),
        (
            "odd = badfam_mod:NOT_A_FAMILY",
            "odd = 'badfam_mod:NOT_A_FAMILY' of group loom_explorer.program_families is "
            "an object of type int, not a ProgramFamily",
        ),
        ("misnamed = badfam_mod:ROWSUM", "is named 'rowsum': the entry's name must be the family's"),
    ],
)
def test_a_bad_plug_in_is_refused_naming_its_entry(site: Path, entry: str, says: str) -> None:
    _install(site, "badfam", f"[loom_explorer.program_families]\n{entry}\n", _FAMILY_MODULE)
    with pytest.raises(PluginError) as caught:
        program_families()
    assert says in str(caught.value)


def test_a_checkout_reads_its_own_entries_from_its_pyproject(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[project]\nname = "loom_explorer"\n\n[project.entry-points."loom_explorer.model_families"]\n'
        'rowsum = "rowsum_mod:FAMILY"  # a comment\n\n[tool.other]\nx = "y"\n'
    )
    assert [(e.group, e.name, e.value) for e in plugins.checkout_entry_points(pyproject)] == [
        ("loom_explorer.model_families", "rowsum", "rowsum_mod:FAMILY")
    ]
    pyproject.write_text(pyproject.read_text().replace('"loom_explorer"', '"another-project"'))
    assert plugins.checkout_entry_points(pyproject) == ()  # another project's file beside the package
    assert plugins.checkout_entry_points(tmp_path / "absent.toml") == ()
    own = {e.group for e in plugins.checkout_entry_points()}  # this checkout's, whatever is installed
    assert {"loom_explorer.program_families", "loom_explorer.model_families"} <= own


def test_a_group_nothing_registers_is_refused() -> None:
    with pytest.raises(
        PluginError,
        match="no installed distribution registers a plug-in of group "
        r"loom_explorer.no_such_group: is loom-explorer installed",
    ):
        registered("loom_explorer.no_such_group", ProgramFamily)
