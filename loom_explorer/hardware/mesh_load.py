"""Find, read and validate mesh descriptions (``hw/meshes/*.yaml``), as ``load.py`` does chips.

``load_mesh("t3000")`` reads the shipped ``hw/meshes/t3000.yaml``; a path ending in ``.yaml``/``.yml`` (or
naming an existing file) is read from disk. The file is read as strictly as a chip's (UTF-8, no duplicate
key, every problem one line ``FILE:LINE:COLUMN: field PATH: ...``); the booleans it may hold are the axes'
``wraps`` and ``flat_ring``. The chip it names must be a shipped or loadable chip description, and is
checked when the mesh is loaded.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from loom_explorer.hardware.load import (
    HardwareError,
    _mark_of,
    _read_yaml,
    _where,
    list_hardware,
    load_hardware,
    resolve_hardware_path,
    shipped_hardware_dir,
    validated,
)
from loom_explorer.hardware.mesh_schema import MeshSpec
from loom_explorer.hardware.schema import HardwareSpec

MESH_BOOLEANS = frozenset({"wraps", "flat_ring"})


def shipped_mesh_dir() -> Path:
    """Folder of the mesh files shipped with the package (``hw/meshes/`` in a checkout)."""
    return shipped_hardware_dir() / "meshes"


def list_meshes() -> list[str]:
    return sorted(p.stem for p in shipped_mesh_dir().glob("*.yaml"))


def shipped_name_clashes() -> list[str]:
    """Names shipped both as a chip (``hw/NAME.yaml``) and as a mesh (``hw/meshes/NAME.yaml``): there must be
    none, as ``hw show NAME`` and every ``--hw NAME`` would be ambiguous (``loom-explorer hw`` refuses to run)."""
    return sorted(set(list_hardware()) & set(list_meshes()))


def is_mesh_name(name: str) -> bool:
    """Whether ``name`` names a shipped mesh (not a chip)."""
    return name in list_meshes()


def is_mesh_file(name_or_path: str | Path) -> bool:
    """Whether ``name_or_path`` is a readable YAML file whose top level holds ``ethernet`` (a mesh's key; a
    chip description has none). A file that cannot be read or parsed is no mesh: the chip loader reports it."""
    text = str(name_or_path)
    path = Path(text)
    try:
        if not path.is_file():
            return False
        raw, _ = _read_yaml(path, MESH_BOOLEANS)
    except (HardwareError, OSError, ValueError):
        return False
    return isinstance(raw, dict) and "ethernet" in raw


def resolve_mesh_path(name_or_path: str | Path) -> Path:
    text = str(name_or_path)
    shipped = shipped_mesh_dir() / f"{text}.yaml"
    if not text.endswith((".yaml", ".yml")) and shipped.is_file():
        return shipped
    if text.endswith((".yaml", ".yml")) or Path(text).is_file():
        return resolve_hardware_path(text)
    raise HardwareError(f"unknown mesh {text!r}; shipped: {', '.join(list_meshes())} (or give a path to a .yaml file)")


@lru_cache(maxsize=16)
def _load_file(path: Path, _mtime_ns: int) -> MeshSpec:
    mesh = validated(MeshSpec, path, MESH_BOOLEANS)
    try:
        load_hardware(mesh.chip)
    except HardwareError as exc:
        _, marks = _read_yaml(path, MESH_BOOLEANS)
        where = _where(path, _mark_of(marks, ("chip",)))
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise HardwareError(
            f"{where}: field chip: {mesh.chip!r} is not a loadable chip description ({reason})"
        ) from None
    return mesh


def load_mesh(name_or_path: str | Path) -> MeshSpec:
    path = resolve_mesh_path(name_or_path)
    try:
        return _load_file(path.resolve(), path.stat().st_mtime_ns)
    except OSError as exc:
        raise HardwareError(f"{path}: cannot read: {exc.strerror or exc}") from None


def mesh_chip(mesh: MeshSpec) -> HardwareSpec:
    """The chip description every device of ``mesh`` uses."""
    return load_hardware(mesh.chip)
