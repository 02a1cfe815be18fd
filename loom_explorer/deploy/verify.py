"""``loom-explorer verify FILE``: check an exported TT-Lang kernel with Tenstorrent's simulator and compiler.

0. Constants: every module-level constant of the file (shape, grid, chunks, blocks, buffer depths ...) must
   be what the export of the schedule embedded in the file assigns (``targets/ttlang/contract.py``); each
   difference is named with its value in the file and in the schedule, and such a file is neither simulated
   nor compiled (it is not the kernel of its schedule).
1. Numerics: the file's ``KERNEL``, run in tt-lang-sim on its ``kernel_arguments()``, is compared with a
   torch reference built from the schedule's problem (its shape, options and ops), never from the file's
   constants or its own check (``contract.reference_pcc``); the PCC must reach ``PCC_MIN``
   (bfloat16).
2. Traffic: the tiles the simulator moved (DRAM reads and writes per tensor, pipe tiles received per
   core) must equal what the model predicts for the schedule embedded in the file, every core at its own
   work (``traffic/tiles.py``). Any difference is a bug in the model or in the generator.
3. Compile: the real TT-Lang compiler accepts the file, compile-only (``deploy/compiler.py``), run beside the
   simulator. Without the toolchain (``loom-explorer toolchain install``) the report says the file was not
   compiled, and claims nothing about it.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from loom_explorer.deploy.compiler import CompileReport, compile_file
from loom_explorer.deploy.simulator import simulate
from loom_explorer.deploy.toolchain import ToolchainError, find_toolchain
from loom_explorer.export.exporter import ExportError
from loom_explorer.export.schedule_json import (
    ScheduleDocument,
    ScheduleFileError,
    parse_schedule_document,
    read_text,
    rebuild,
)
from loom_explorer.targets.ttlang.contract import (
    ConstantMismatch,
    KernelContractError,
    constant_mismatches,
    reference_pcc,
)
from loom_explorer.targets.ttlang.exporter import ttlang_source
from loom_explorer.traffic.tiles import TileTraffic, schedule_tile_traffic

PCC_MIN = 0.999  # bfloat16 inputs, fp32 reference
K = TypeVar("K")


@dataclass(frozen=True, slots=True)
class VerifyReport:
    file: str
    document: ScheduleDocument
    candidate: str
    pcc: float
    simulated: TileTraffic
    predicted: TileTraffic
    seconds: float
    compiled: CompileReport | None = None  # None: not compiled (``compile_note`` says why)
    compile_note: str = ""
    constants: tuple[ConstantMismatch, ...] = ()  # the file's constants that differ from its schedule's
    numerics_note: str = ""  # why there is no PCC (``pcc`` is then NaN)

    @property
    def constants_ok(self) -> bool:
        return not self.constants

    @property
    def numerics_ok(self) -> bool:
        return self.pcc >= PCC_MIN  # NaN (no PCC) is not

    @property
    def traffic_equal(self) -> bool:
        return self.simulated == self.predicted

    @property
    def compile_passed(self) -> bool | None:
        return None if self.compiled is None else self.compiled.passed

    @property
    def passed(self) -> bool:
        """Constants, numerics and traffic, and the compile when it ran (a file not compiled is said so, not
        failed)."""
        return self.constants_ok and self.numerics_ok and self.traffic_equal and self.compile_passed is not False

    def differences(self) -> list[str]:
        """Every count on which the simulator and the model disagree, in words."""
        sim, model = self.simulated, self.predicted
        return [
            *_count_differences("DRAM tiles read of", sim.dram_read_tiles, model.dram_read_tiles),
            *_count_differences("DRAM tiles written of", sim.dram_written_tiles, model.dram_written_tiles),
            *_count_differences("pipe tiles received by core", sim.pipe_received_tiles, model.pipe_received_tiles),
        ]

    def to_json(self) -> dict[str, object]:
        return {
            "file": self.file,
            "candidate": self.candidate,
            "pcc": None if math.isnan(self.pcc) else self.pcc,
            "pcc_min": PCC_MIN,
            "passed": self.passed,
            "constants": {"equal": self.constants_ok, "differences": [str(c) for c in self.constants]},
            "numerics_note": self.numerics_note,
            "traffic": {
                "simulated": self.simulated.to_json(),
                "predicted": self.predicted.to_json(),
                "equal": self.traffic_equal,
                "differences": self.differences(),
            },
            "compile": self.compiled.to_json()
            if self.compiled is not None
            else {"passed": None, "compiler": None, "message": self.compile_note},
            "simulator_seconds": round(self.seconds, 2),
        }


def _count_differences(label: str, simulated: Mapping[K, int], model: Mapping[K, int]) -> list[str]:
    """The keys on which the simulated and the predicted counts differ (a missing key counts 0), in words."""
    out = []
    for key in sorted(set(simulated) | set(model), key=str):
        if simulated.get(key, 0) != model.get(key, 0):
            out.append(f"{label} {key}: simulated {simulated.get(key, 0):,}, model {model.get(key, 0):,}")
    return out


def embedded_document(path: str | Path) -> ScheduleDocument:
    """The schedule document a TT-Lang export carries in its ``LOOM_SCHEDULE`` string."""
    p = Path(path)
    try:
        tree = ast.parse(read_text(p, "kernel file"), str(p))
    except SyntaxError as exc:
        raise ScheduleFileError(f"{p}: not Python: {exc}") from None
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "LOOM_SCHEDULE" for t in node.targets)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            return parse_schedule_document(node.value.value, f"{p}: LOOM_SCHEDULE")
    raise ScheduleFileError(
        f"{p}: no LOOM_SCHEDULE string; verify reads files written by `loom-explorer export --format ttlang`"
    )


def verify_kernel_file(
    path: str | Path,
    timeout_seconds: float = 600.0,
    hw_file: str | Path | None = None,
    kernel_file: str | Path | None = None,
    compile_it: bool = True,
) -> VerifyReport:
    """Simulate and compile ``path`` and compare (module docstring); ScheduleFileError / SimulationError on
    failure. ``hw_file`` / ``kernel_file``: the hardware and kernel files the schedule was made for, when they
    are not shipped ones (the embedded document names them, but a document never opens a file it names).
    ``compile_it=False``: the simulator only (the report says the file was not compiled)."""
    doc = embedded_document(path)
    built = rebuild(doc, hw_file=hw_file, kernel_file=kernel_file)
    values = built.solution.values()
    predicted = schedule_tile_traffic(built.hardware, built.schedule, values)
    try:
        schedule_source = ttlang_source(built, doc)
    except ExportError as exc:
        raise ScheduleFileError(f"{path}: the schedule it embeds has no TT-Lang kernel: {exc}") from None
    mismatches = tuple(constant_mismatches(read_text(Path(path), "kernel file"), schedule_source, str(path)))
    if mismatches:
        return VerifyReport(
            file=str(path),
            document=doc,
            candidate=doc.candidate,
            pcc=math.nan,
            simulated=TileTraffic(),
            predicted=predicted,
            seconds=0.0,
            compile_note="not compiled: its constants are not its schedule's",
            constants=mismatches,
            numerics_note="not simulated: its constants are not its schedule's",
        )
    toolchain = find_toolchain() if compile_it else None
    note = (
        ""
        if toolchain
        else (
            "not compiled (--no-compile)"
            if not compile_it
            else "not compiled: the TT-Lang compiler is not installed (`loom-explorer toolchain install`)"
        )
    )
    with ThreadPoolExecutor(max_workers=1) as pool:  # the compiler runs while the simulator does
        compiling = pool.submit(compile_file, path, toolchain, timeout_seconds) if toolchain else None
        sim = simulate(path, (values["grid_x"], values["grid_y"]), timeout_seconds, tensors=True)
        try:
            compiled = compiling.result() if compiling else None
        except ToolchainError as exc:
            compiled, note = None, f"not compiled: {exc}"
    assert sim.tensors is not None
    pcc, numerics_note = math.nan, ""
    try:
        pcc = reference_pcc(built, *sim.tensors)
    except KernelContractError as exc:
        numerics_note = str(exc)
    return VerifyReport(
        file=str(path),
        document=doc,
        candidate=doc.candidate,
        pcc=pcc,
        simulated=sim.traffic,
        predicted=predicted,
        seconds=sim.seconds,
        compiled=compiled,
        compile_note=note,
        numerics_note=numerics_note,
    )
