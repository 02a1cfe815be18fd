"""``hw list|show`` and ``kernels list``: the shipped hardware descriptions and tile programs."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from typing import Literal

from loom_explorer.cli.common import Command, InputError, add_command
from loom_explorer.errors import EXIT_OK
from loom_explorer.hardware import list_hardware, load_hardware
from loom_explorer.program import list_kernels, load_program


@dataclass(frozen=True, slots=True)
class HwRequest:
    action: Literal["list", "show"]
    name: str | None
    json: bool


def parse_hw(args: argparse.Namespace) -> HwRequest:
    return HwRequest(action=args.action, name=args.name, json=args.json)


def run_hw(req: HwRequest) -> int:
    if req.action == "list":
        for name in list_hardware():
            hw = load_hardware(name)
            print(
                f"{name:<18} {hw.grid.columns}x{hw.grid.rows} cores  {hw.clock_ghz} GHz  "
                f"L1 {hw.l1.usable_bytes:,} B usable  {hw.dram.channels} DRAM channels  {hw.description}"
            )
        return EXIT_OK
    if not req.name:
        raise InputError("hw show needs a hardware name or YAML path")
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
    hw.add_argument("name", nargs="?", help="shipped name or path to a YAML file")
    hw.add_argument("--json", action="store_true")
    kernels = add_command(sub, "kernels", Command(parse_kernels, run_kernels))
    kernels.add_argument("action", choices=["list"])
