"""``hw list|show`` and ``kernels list``: the shipped hardware descriptions (chips, then meshes of chips) and
tile programs.

``hw show NAME`` shows a mesh when ``NAME`` is a shipped mesh (``hw/meshes/NAME.yaml``) or a YAML file with a
top-level ``ethernet`` key (``mesh_load.is_mesh_file``), a chip otherwise. No name may be shipped as both
(``mesh_load.shipped_name_clashes``): ``hw`` refuses to run while one is.

A mesh's fabric rate in GB/s is ``ethernet.fabric_bytes_per_cycle x`` its chip's ``clock_ghz``.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from typing import Literal

from loom_explorer.cli.common import Command, InputError, add_command
from loom_explorer.errors import EXIT_OK
from loom_explorer.hardware import HardwareSpec, list_hardware, load_hardware
from loom_explorer.hardware.mesh_load import (
    is_mesh_file,
    list_meshes,
    load_mesh,
    mesh_chip,
    shipped_mesh_dir,
    shipped_name_clashes,
)
from loom_explorer.hardware.mesh_schema import MeshAxisSpec, MeshSpec
from loom_explorer.program import list_kernels, load_program


@dataclass(frozen=True, slots=True)
class HwRequest:
    action: Literal["list", "show"]
    name: str | None
    json: bool


def parse_hw(args: argparse.Namespace) -> HwRequest:
    return HwRequest(action=args.action, name=args.name, json=args.json)


def run_hw(req: HwRequest) -> int:
    clashes = shipped_name_clashes()
    if clashes:
        raise InputError(
            f"{', '.join(clashes)}: shipped both as a chip and as a mesh "
            f"({shipped_mesh_dir().parent}/NAME.yaml and {shipped_mesh_dir()}/NAME.yaml); "
            "a name must be one or the other: rename one of the files"
        )
    if req.action == "list":
        for name in list_hardware():
            hw = load_hardware(name)
            print(
                f"{name:<18} {hw.grid.columns}x{hw.grid.rows} cores  {hw.clock_ghz} GHz  "
                f"L1 {hw.l1.usable_bytes:,} B usable  {hw.dram.channels} DRAM channels  {hw.description}"
            )
        meshes = list_meshes()
        if meshes:
            print("\nmeshes (rows x columns = ttnn MeshShape; links per neighbouring pair, rows/columns):")
        for name in meshes:
            print(_mesh_line(load_mesh(name)))
        return EXIT_OK
    if not req.name:
        raise InputError("hw show needs a hardware name or YAML path")
    if req.name in list_meshes() or is_mesh_file(req.name):
        return _show_mesh(load_mesh(req.name), as_json=req.json)
    hw = load_hardware(req.name)
    if req.json:
        print(json.dumps(hw.model_dump(mode="json"), indent=2))
        return EXIT_OK
    print(f"{hw.name}: {hw.description}")
    for key, value in hw.model_dump(mode="json").items():
        if isinstance(value, dict):
            print(f"  {key}:")
            for k, v in value.items():
                text = v if not isinstance(v, list) or len(v) < 10 else f"[{len(v)} entries]"
                print(f"    {k}: {text}")
        else:
            print(f"  {key}: {value}")
    return EXIT_OK


def _fabric_gigabytes_per_s(mesh: MeshSpec, chip: HardwareSpec) -> float:
    """One link's measured fabric payload rate, one direction: bytes per cycle x GHz = GB/s."""
    return mesh.ethernet.fabric_bytes_per_cycle * chip.clock_ghz


def _mesh_line(mesh: MeshSpec) -> str:
    chip = mesh_chip(mesh)
    rows, columns = mesh.shape
    return (
        f"{mesh.name:<18} {rows}x{columns} = {mesh.chips} chips  chip {mesh.chip}  "
        f"links {mesh.rows.links}/{mesh.columns.links}  "
        f"fabric {_fabric_gigabytes_per_s(mesh, chip):.2f} GB/s per link  {mesh.description}"
    )


def _axis_text(axis: MeshAxisSpec) -> str:
    if axis.chips == 1:
        return "1 chip"
    reserved = f" (+{axis.dispatch_links} reserved for dispatch)" if axis.dispatch_links else ""
    shape = "ring" if axis.wraps else "line"
    return f"{axis.chips} chips, {axis.links} link(s) per neighbouring pair{reserved}, a {shape}"


def _show_mesh(mesh: MeshSpec, *, as_json: bool) -> int:
    if as_json:
        print(json.dumps(mesh.model_dump(mode="json"), indent=2))
        return EXIT_OK
    chip = mesh_chip(mesh)
    rows, columns = mesh.shape
    print(f"{mesh.name}: {mesh.description}")
    print(f"  chip: {mesh.chip} ({chip.clock_ghz} GHz; {chip.description})")
    print(f"  shape: {rows} x {columns} = {mesh.chips} chips (ttnn MeshShape({rows}, {columns}))")
    print(f"  rows (cluster_axis 0): {_axis_text(mesh.rows)}")
    print(f"  columns (cluster_axis 1): {_axis_text(mesh.columns)}")
    print(f"  flat_ring: {'a ring through all ' + str(mesh.chips) + ' chips' if mesh.flat_ring else 'no'}")
    print("  ethernet (per link, per direction):")
    for key, value in mesh.ethernet.model_dump(mode="json").items():
        print(f"    {key}: {value}")
    print(f"    fabric rate: {_fabric_gigabytes_per_s(mesh, chip):.2f} GB/s at {chip.clock_ghz} GHz")
    return EXIT_OK


@dataclass(frozen=True, slots=True)
class KernelsRequest:
    action: Literal["list"]


def parse_kernels(args: argparse.Namespace) -> KernelsRequest:
    return KernelsRequest(action=args.action)


def run_kernels(req: KernelsRequest) -> int:
    names = list_kernels()
    width = max(map(len, names), default=0) + 1
    for name in names:
        program = load_program(name)
        dims = ", ".join(
            f"{d.name} ({d.kind}"
            + (f", groups {d.group_of}" if d.group_of else "")
            + (f", part of {d.part_of}" if d.part_of else "")
            + ("" if d.spread else ", not spread")
            + ")"
            for d in program.dims
        )
        print(f"{name:<{width}} {program.description}\n{'':<{width}} dims: {dims}")
        if program.options:  # switched on with --option NAME
            print(f"{'':<{width}} options: {', '.join(program.options)}")
    return EXIT_OK


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    hw = add_command(sub, "hw", Command(parse_hw, run_hw))
    hw.add_argument("action", choices=["list", "show"])
    hw.add_argument("name", nargs="?", help="shipped chip or mesh name, or path to a YAML file")
    hw.add_argument("--json", action="store_true")
    kernels = add_command(sub, "kernels", Command(parse_kernels, run_kernels))
    kernels.add_argument("action", choices=["list"])
